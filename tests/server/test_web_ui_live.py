"""The web UI keeps up without a reload, in Debian's Chromium: the grants page follows grants given and revoked
elsewhere, and a keyboard user whose card gives way to its transcript line keeps their place on the page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from ..conftest import LiveServer
from .test_web_ui import CHROMIUM, browser, serve, server, watched_page

__all__ = ["browser", "serve", "server"]  # fixtures, shared with the web UI tests

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (scripts/test installs it)"
)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page that fails its test on a JavaScript error or a Content Security Policy violation."""
    with watched_page(browser, errors=True) as page:
        yield page


def test_the_grants_page_shows_grants_given_and_revoked_elsewhere(server: LiveServer, page: Page) -> None:
    """The grants page, open, lists an approval remembered "for this chat" in another client, and drops it when
    that client revokes it, without a reload."""
    page.goto(f"{server.base_url}/#/grants")
    expect(page.locator("#grants-status")).to_contain_text("No remembered approvals")
    with server.client() as client:
        run = client.post("/v1/runs", json={"message": "delete notes"}).json()
        body = {"kind": "approve", "scope": "thread"}
        assert client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json=body).status_code == 200
        (grant,) = client.get("/v1/grants").json()["grants"]
    rows = page.locator("#grants-rows tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("delete_file")
    expect(page.locator("#grants-status")).to_have_text("")
    with server.client() as client:
        assert client.delete(f"/v1/grants/{grant['grant_id']}").status_code in (200, 204)
    expect(rows).to_have_count(0)
    expect(page.locator("#grants-status")).to_contain_text("No remembered approvals")
