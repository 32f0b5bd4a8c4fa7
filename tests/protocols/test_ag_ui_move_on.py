"""The person moves on (seed 001), through the real `@ag-ui/client` HttpAgent run by node.

The HttpAgent refuses to start a run while interrupts are pending unless `resume` answers each, so
a person who types something new instead of answering sends `resume: [{interruptId, status:
"cancelled"}]` *and* the new user message in one `RunAgentInput`. What was open is skipped (never
run) and the new message is answered in that same run: for approvals and browser calls, of the
agent itself and of a delegate.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sayso import Sayso

from ..conftest import LiveServer
from .conftest import NOT_ASKED, client_tool, example_config, protocol_app
from .test_ag_ui_delegates import DATASOURCES, team_runtime
from .test_ag_ui_kaboo import drive, kaboo_files
from .test_ag_ui_node import needs_node

PICK = {"name": "pick_color", "description": "Ask the browser for a color", "parameters": {"type": "object"}}

pytestmark = needs_node


@pytest.fixture
def served() -> Iterator[list[LiveServer]]:
    started: list[LiveServer] = []
    yield started
    for server in started:
        server.stop()


def start(served: list[LiveServer], sayso: Sayso) -> LiveServer:
    server = LiveServer.in_thread(protocol_app(sayso))
    served.append(server)
    return server


def test_moving_on_from_an_approval_skips_it_and_answers_the_new_message(
    served: list[LiveServer], sandbox: Path
) -> None:
    """The interrupt is cancelled in the same input as the new message: the deletion never runs, the reply is to
    the new message, and the thread shows the request skipped."""
    server = start(served, Sayso(example_config()))
    paused, moved = drive(
        f"{server.base_url}/ag-ui/files",
        "thr-move-1",
        [{"say": "delete notes"}, {"say": "list", "resume": {"status": "cancelled"}}],
    )
    (interrupt,) = paused["outcome"]["interrupts"]
    assert moved["error"] is None, moved
    assert moved["outcome"] == {"type": "success"}
    assert moved["result"].startswith("Files in the sandbox:")
    assert "TEXT_MESSAGE_CONTENT" in moved["events"]
    assert (sandbox / "notes.txt").exists()
    assert _skipped(server, interrupt["id"])


def test_moving_on_from_a_browser_call_answers_the_new_message(served: list[LiveServer]) -> None:
    """A pending browser tool call left unanswered: the new message is answered, nothing stays pending."""
    config = example_config(agents={"files": {"model": "demo", "client_tools": ["pick_color"]}})
    server = start(served, Sayso(config, models={"demo": client_tool()}))
    paused, moved = drive(
        f"{server.base_url}/ag-ui/files",
        "thr-move-2",
        [{"say": "color please", "tools": [PICK]}, {"say": "hi", "tools": [PICK]}],
    )
    assert paused["outcome"]["pendingToolCallIds"]
    assert moved["outcome"] == {"type": "success"}
    assert moved["result"].endswith(NOT_ASKED)


def test_moving_on_from_kaboos_ask_user_browser_call_answers_the_new_message(
    served: list[LiveServer], sandbox: Path
) -> None:
    """kaboo's dialect: the question is an `ask_user` browser call; a new message instead of an answer moves on."""
    server = start(served, Sayso(kaboo_files()))
    paused, moved = drive(f"{server.base_url}/ag-ui/files", "thr-move-3", [{"say": "delete report"}, {"say": "list"}])
    assert paused["outcome"]["pendingToolCallIds"]
    assert moved["outcome"] == {"type": "success"}
    assert moved["result"].startswith("Files in the sandbox:")
    assert (sandbox / "report-2025.txt").exists() and (sandbox / "report-2026.txt").exists()


def test_moving_on_from_a_delegates_approval_and_browser_call_answers_the_new_message(
    served: list[LiveServer], tmp_path: Path
) -> None:
    """Delegates: ops' approval (an interrupt, cancelled) and the analyst's browser call (pending) are both left;
    the coordinator answers the new message in the same run, and the archiving never runs."""
    server = start(served, team_runtime(tmp_path))
    paused, moved = drive(
        f"{server.base_url}/ag-ui/team",
        "thr-move-4",
        [
            {"say": "report", "tools": [DATASOURCES]},
            {"say": "hello", "tools": [DATASOURCES], "resume": {"status": "cancelled"}},
        ],
    )
    (interrupt,) = paused["outcome"]["interrupts"]
    assert paused["metadata"]["pendingToolCallIds"]
    assert moved["error"] is None, moved
    assert moved["outcome"] == {"type": "success"}
    assert moved["result"].endswith(NOT_ASKED)
    assert "Archived" not in str(moved["results"])
    assert _skipped(server, interrupt["id"])


def _skipped(server: LiveServer, request_id: str) -> bool:
    with server.client() as rest:
        request = rest.get(f"/v1/requests/{request_id}").json()
    return bool(request["status"] == "closed" and request["decision"]["kind"] == "skip")
