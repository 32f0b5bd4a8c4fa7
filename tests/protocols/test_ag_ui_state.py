"""kaboo's state channel (seed 001, issue 23 point 8): `kaboo_sessions.approvals` and `.paused` on STATE_SNAPSHOT."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ag_ui.core import StateSnapshotEvent

from .conftest import ServerFactory
from .test_ag_ui import finished, interrupt_of, post, resume, run_input, user


def snapshot(events: list[Any]) -> dict[str, Any]:
    [state] = [e for e in events if isinstance(e, StateSnapshotEvent)]
    assert events.index(state) == len(events) - 2, "the snapshot comes just before RUN_FINISHED"
    out: dict[str, Any] = state.snapshot
    return out


async def test_a_paused_run_publishes_its_open_requests_and_a_reference_to_its_pause(
    serve: ServerFactory, sandbox: Path
) -> None:
    """kaboo's host draws its cards from `kaboo_sessions.approvals`; `paused` names the pause; its own keys stay."""
    server = await serve(ag_ui={"kaboo_compat": True})
    host_state = {"theme": "dark", "kaboo_sessions": {"approvals": [], "paused": None}}
    events = await post(server, run_input("thr-state-1", [user("delete notes")], state=host_state))
    state = snapshot(events)
    asked = interrupt_of(events)
    assert state["theme"] == "dark"
    [card] = state["kaboo_sessions"]["approvals"]
    assert (card["id"], card["reason"], card["toolCallId"]) == (asked.id, "kaboo:approval", asked.tool_call_id)
    assert card["metadata"]["tool_input"] == {"name": "notes.txt"}
    paused = state["kaboo_sessions"]["paused"]
    run = await server.sayso.run_record(paused["run_id"])
    assert (paused["pause_id"], paused["thread_id"], paused["agent"]) == (run.pause_id, "thr-state-1", "files")

    # Another process, sharing only the store, resumes from that state.
    other = await serve(ag_ui={"kaboo_compat": True})
    answer = {"interruptId": asked.id, "status": "resolved", "payload": {"status": "approved"}}
    done = await post(other, {**resume("thr-state-1", [answer]), "state": state})
    assert finished(done).outcome.type == "success"  # type: ignore[union-attr]
    assert snapshot(done)["kaboo_sessions"] == {"approvals": [], "paused": None}
    assert not (sandbox / "notes.txt").exists()


async def test_replaying_an_older_state_cannot_bring_back_an_answered_gate(serve: ServerFactory, sandbox: Path) -> None:
    """After the question is answered the run waits on a new pause; a resume with the old state is refused."""
    server = await serve()
    first = await post(server, run_input("thr-state-2", [user("delete report")]))
    old_state, asked = snapshot(first), interrupt_of(first)
    answer = {"status": "resolved", "payload": {"answers": [{"answer": ["report-2026.txt"]}]}}
    second = await post(server, {**resume("thr-state-2", [{"interruptId": asked.id, **answer}]), "state": old_state})
    approval = interrupt_of(second)
    new_state = snapshot(second)
    assert new_state["kaboo_sessions"]["paused"]["pause_id"] != old_state["kaboo_sessions"]["paused"]["pause_id"]

    approve = {"interruptId": approval.id, "status": "resolved", "payload": {"status": "approved"}}
    replayed = await post(server, {**resume("thr-state-2", [approve]), "state": old_state})
    assert replayed[-1].type == "RUN_ERROR" and "already answered" in replayed[-1].message
    assert (sandbox / "report-2026.txt").exists()  # nothing ran
    done = await post(server, {**resume("thr-state-2", [approve]), "state": new_state})
    assert finished(done).outcome.type == "success"  # type: ignore[union-attr]
    assert not (sandbox / "report-2026.txt").exists()
    again = await post(server, {**resume("thr-state-2", [approve]), "state": new_state})
    assert again[-1].type == "RUN_ERROR"  # answered: nothing waits any more


async def test_the_switch_turns_the_snapshot_off(serve: ServerFactory) -> None:
    server = await serve(runtime={"persist_session_state": False})
    events = await post(server, run_input("thr-state-3", [user("delete notes")]))
    assert not [e for e in events if isinstance(e, StateSnapshotEvent)]
    assert interrupt_of(events).reason == "sayso:approval"


async def test_a_state_naming_another_threads_pause_is_refused_as_not_this_threads(
    serve: ServerFactory, sandbox: Path
) -> None:
    """A resume sent with another thread's state (its pause still open) is refused as naming a pause that is not
    this thread's, not as an answered gate; nothing runs on either thread, and both pauses are answered as usual."""
    server = await serve()
    mine = await post(server, run_input("thr-state-4", [user("delete notes")]))
    other = await post(server, run_input("thr-state-5", [user("delete todo")]))
    asked, others = interrupt_of(mine), interrupt_of(other)
    approve = {"interruptId": asked.id, "status": "resolved", "payload": {"status": "approved"}}
    forged = await post(server, {**resume("thr-state-4", [approve]), "state": snapshot(other)})
    assert forged[-1].type == "RUN_ERROR" and forged[-1].code == "invalid_resume"
    assert "is not a pause of thread 'thr-state-4'" in forged[-1].message, forged[-1].message
    assert "already answered" not in forged[-1].message
    assert (sandbox / "notes.txt").exists() and (sandbox / "todo.md").exists()
    done = await post(server, {**resume("thr-state-4", [approve]), "state": snapshot(mine)})
    assert finished(done).outcome.type == "success"  # type: ignore[union-attr]
    deny = {"interruptId": others.id, "status": "resolved", "payload": {"status": "cancelled"}}
    assert finished(await post(server, resume("thr-state-5", [deny]))).outcome.type == "success"  # type: ignore[union-attr]
    assert not (sandbox / "notes.txt").exists() and (sandbox / "todo.md").exists()
