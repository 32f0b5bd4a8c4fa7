"""The web UI and the REST inbox against a Temporal-backed config: the server app is a front, a worker does the work.

The server is `sayso serve`'s app with its expiry sweep off (nothing but the workflow's timers would
expire anything); the browser is Debian's headless Chromium, as in tests/server/test_web_ui.py.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest
from playwright.sync_api import expect, sync_playwright

from sayso import Sayso
from sayso.server import LiveSettings, create_app

from ..conftest import LiveServer
from ..server.test_web_ui import ARGS, CHROMIUM, say
from .conftest import Project, workflows_on

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (scripts/test installs it)"
)


def test_the_web_ui_approves_a_call_the_rest_inbox_lists_and_a_worker_runs(
    file_manager: Path, temporal: Project, tmp_path: Path
) -> None:
    """A message sent in the web UI pauses on its approval card; the REST inbox lists that request; the card's
    Approve runs the call on the worker and the answer appears in the chat; the run's workflow completed."""
    temporal.workers(file_manager).start()
    app = create_app(Sayso.from_yaml(file_manager), expire_every_seconds=None, live=LiveSettings(every=0.2))
    server = LiveServer.in_thread(app)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
            page = browser.new_page()
            page.set_default_timeout(30_000)
            page.goto(server.base_url)
            say(page, "delete notes")
            card = page.get_by_role("article", name="Approve delete_file?")
            expect(card).to_contain_text('"name": "notes.txt"')
            [listed] = httpx.get(f"{server.base_url}/v1/requests", timeout=30).json()["requests"]
            assert (listed["kind"], listed["tool_name"], listed["args"]) == (
                "approval",
                "delete_file",
                {"name": "notes.txt"},
            )
            card.get_by_role("button", name="Approve", exact=True).click()
            expect(page.locator("#transcript")).to_contain_text("Deleted notes.txt.")
            browser.close()
        assert httpx.get(f"{server.base_url}/v1/requests", timeout=30).json()["requests"] == []
    finally:
        server.stop()
    assert not (tmp_path / "sandbox" / "notes.txt").exists()
    assert anyio.run(workflows_on, temporal.address, temporal.task_queue) == {
        f"sayso-files-{listed['run_id']}": "COMPLETED"
    }
