"""A2A and AG-UI main flows against the file-manager example on Temporal: the wire is unchanged.

This process is the front (the server with both protocol adapters, in-process); a real
`sayso worker` does the runs' work on the session's Temporal dev server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sayso import Sayso

from ..conftest import InProcess
from ..protocols.a2a_helpers import hitl, send, stream, task_of, user_message
from ..protocols.conftest import protocol_app
from ..protocols.test_ag_ui import finished, interrupt_of, post, resume, run_input, user
from .conftest import Project, workflows_on


@pytest.fixture
async def server(file_manager: Path, temporal: Project) -> AsyncIterator[InProcess]:
    """The example with `engine: temporal`, served in-process, with one worker."""
    temporal.workers(file_manager).start()
    sayso = Sayso.from_yaml(file_manager)
    served = await InProcess(app=protocol_app(sayso), sayso=sayso).start()
    try:
        yield served
    finally:
        await served.stop()


async def test_an_a2a_approval_pauses_the_task_and_completes_it_on_temporal(
    server: InProcess, tmp_path: Path, temporal: Project
) -> None:
    """kagent's HITL flow: the task waits for input, the approval runs the call on a worker, the task completes."""
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete notes")))
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        tool = hitl(task["status"]["message"])["tools"][0]["id"]
        payload = {"type": "tool_approval_response", "approvals": [{"id": tool, "approved": True}]}
        message = user_message("Approved", task_id=task["id"], context_id=task["contextId"], payload=payload)
        done = task_of(await send(client, message))
    assert done["id"] == task["id"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["status"]["message"]["parts"] == [{"text": "Deleted notes.txt."}]
    assert not (tmp_path / "sandbox" / "notes.txt").exists()
    assert await workflows_on(temporal.address, temporal.task_queue) == {f"sayso-files-{task['id']}": "COMPLETED"}


async def test_an_ag_ui_interrupt_is_resumed_on_temporal(server: InProcess, tmp_path: Path, temporal: Project) -> None:
    """AG-UI: the run ends on an interrupt; the resume with an approval runs the call on a worker."""
    pending = interrupt_of(await post(server, run_input("thr-temporal", [user("delete notes")])))
    assert pending.reason == "sayso:approval"
    payload = {"status": "approved", "scope": "once"}
    events = await post(
        server, resume("thr-temporal", [{"interruptId": pending.id, "status": "resolved", "payload": payload}])
    )
    outcome = finished(events).outcome
    assert outcome is not None and outcome.type == "success"
    result = next(e for e in events if e.type == "TOOL_CALL_RESULT" and e.tool_call_id == pending.tool_call_id)
    assert result.content == "Deleted notes.txt."
    assert not (tmp_path / "sandbox" / "notes.txt").exists()
    run_id = pending.metadata["run_id"]
    assert await workflows_on(temporal.address, temporal.task_queue) == {f"sayso-files-{run_id}": "COMPLETED"}


async def test_an_a2a_stream_ends_on_the_pause_and_on_the_answer_on_temporal(server: InProcess) -> None:
    """SendStreamingMessage against a Temporal front: a working task, then the pause; a reply streams its answer.

    The text reaches the stream as the worker's model writes it (tests/temporal/test_temporal_text.py shows it
    arriving in pieces).
    """
    async with server.client() as client:
        _, events = await stream(client, user_message("delete notes"))
        assert events[0]["result"]["task"]["status"]["state"] == "TASK_STATE_WORKING"
        last = events[-1]["result"]["statusUpdate"]
        assert last["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert hitl(last["status"]["message"])["type"] == "tool_approval_request"
        _, listed = await stream(client, user_message("list"))
        final = listed[-1]["result"]["statusUpdate"]["status"]
        assert final["state"] == "TASK_STATE_COMPLETED"
        assert final["message"]["parts"][0]["text"].startswith("Files in the sandbox:")
