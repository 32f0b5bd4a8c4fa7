"""Principals at the protocol edges: one bearer token works on REST, A2A and AG-UI alike, and the runtime's
access rule decides who may see and answer which task or thread, whichever interface asks."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from ..models import tool_model
from .a2a_helpers import hitl, rpc, send, task_of, user_message
from .conftest import InProcess, ServerFactory, example_config, two_deletes
from .test_ag_ui import finished, post, resume, run_input, user

PRINCIPALS = [
    {"name": "alice", "token": "alice-token"},
    {"name": "bob", "token": "bob-token"},
    {"name": "ops", "token": "ops-token", "approver_for": ["files"]},
]


@pytest.fixture
async def server(serve: ServerFactory) -> InProcess:
    """The example with three principals: alice and bob own threads, ops approves for `files`."""
    return await serve(principals=PRINCIPALS)


async def test_one_token_signs_in_on_every_interface_and_none_is_refused_on_each(server: InProcess) -> None:
    """A principal's token is accepted by REST, A2A and AG-UI; without one each answers 401 in its own format
    (AG-UI, which has no error format before its stream, in REST's problem document)."""
    async with server.client("alice-token") as alice:
        assert (await alice.get("/v1/me")).json()["principal"] == "alice"
        task = task_of(await send(alice, user_message("list")))
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    events = await post(server, run_input(f"thr-{uuid.uuid4().hex}", [user("list")]), token="alice-token")
    assert events[-1].type == "RUN_FINISHED"
    async with server.client("wrong-token") as stranger:
        rest = await stranger.get("/v1/requests")
        assert (rest.status_code, rest.headers["content-type"]) == (401, "application/problem+json")
        a2a = await stranger.post("/a2a/files", json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage"})
        assert (a2a.status_code, a2a.json()["error"]["code"]) == (401, -32001)
        assert a2a.json()["error"]["message"] == "the bearer token names no principal"
        ag_ui = await stranger.post("/ag-ui/files", json=run_input("thr-x", [user("list")]))
        assert (ag_ui.status_code, ag_ui.headers["content-type"]) == (401, "application/problem+json")
        assert ag_ui.json()["detail"] == rest.json()["detail"] == "the bearer token names no principal"
        for response in (rest, a2a, ag_ui):
            assert response.headers["www-authenticate"].startswith("Bearer")


async def test_another_principals_a2a_task_is_not_found_and_its_context_refused(
    server: InProcess, sandbox: Path
) -> None:
    """Bob neither reads nor answers alice's task, nor writes into her context; ops, her approver, may answer it."""
    async with server.client("alice-token") as alice, server.client("bob-token") as bob:
        task = task_of(await send(alice, user_message("delete notes")))
        read = await rpc(bob, "files", "GetTask", {"id": task["id"]})
        assert read.json()["error"]["code"] == -32001
        approval = {"id": hitl(task["status"]["message"])["tools"][0]["id"], "approved": True}
        payload = {"type": "tool_approval_response", "approvals": [approval]}
        answer = user_message(task_id=task["id"], context_id=task["contextId"], payload=payload)
        assert (await send(bob, answer))["error"]["code"] == -32001
        intruding = await send(bob, user_message("delete todo", context_id=task["contextId"]))
        assert intruding["error"]["code"] == -32602
        assert (sandbox / "notes.txt").exists()
    async with server.client("ops-token") as ops:
        done = task_of(await send(ops, answer))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert not (sandbox / "notes.txt").exists()


async def test_another_principals_ag_ui_thread_is_refused_and_its_approver_answers(
    server: InProcess, sandbox: Path
) -> None:
    """Bob may not write into alice's AG-UI thread nor resume its pause; ops, her approver, resumes it."""
    thread_id = f"thr-{uuid.uuid4().hex}"
    paused = await post(server, run_input(thread_id, [user("delete notes")]), token="alice-token")
    interrupt: Any = paused[-1].outcome.interrupts[0]
    intruding = await post(server, run_input(thread_id, [user("list")]), token="bob-token")
    assert (intruding[-1].type, intruding[-1].code) == ("RUN_ERROR", "forbidden")
    entry = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"status": "approved"}}]
    hijack = await post(server, resume(thread_id, entry), token="bob-token")
    assert (hijack[-1].type, hijack[-1].code) == ("RUN_ERROR", "not_paused")
    assert (sandbox / "notes.txt").exists()
    approved = await post(server, resume(thread_id, entry), token="ops-token")
    assert approved[-1].type == "RUN_FINISHED"
    assert not (sandbox / "notes.txt").exists()


async def test_an_approver_of_one_request_never_closes_the_owners_others(serve: ServerFactory, sandbox: Path) -> None:
    """Alice's run waits on a deletion only bob approves and on her own question. Bob may decide the deletion, not
    the question: a forced resume (REST) and a cancel (A2A) by him are refused and change nothing; his AG-UI resume
    that answers the deletion and leaves the question out leaves it waiting for alice, never skipped."""

    def route(said: str) -> Any:
        return [("delete_file", {"name": "notes.txt"}), ("ask_user", {"questions": [{"question": "Why?"}]})]

    agents = example_config().model_dump()["agents"]
    agents["files"]["interrupt"]["tools"] = [{"name": "delete_file", "approvers": ["bob"]}]
    config = example_config(principals=PRINCIPALS, agents=agents)
    server = await serve(config=config, models={"demo": tool_model(route, read="Done: {results}")})
    thread_id = f"thr-{uuid.uuid4().hex}"
    async with server.client("alice-token") as alice:
        run = (await alice.post("/v1/runs", json={"message": "delete notes", "thread_id": thread_id})).json()
    assert run["status"] == "paused", run
    ids = {r["kind"]: r["id"] for r in run["requests"]}

    async def statuses() -> dict[str, str]:
        async with server.client("alice-token") as alice:
            return {k: (await alice.get(f"/v1/requests/{i}")).json()["status"] for k, i in ids.items()}

    async with server.client("bob-token") as bob:
        forced = await bob.post(f"/v1/runs/{run['run_id']}/resume", json={"force": True})
        assert forced.status_code == 403, forced.text
        assert "closes it unanswered" in forced.json()["detail"]
        cancelled = (await rpc(bob, "files", "CancelTask", {"id": run["run_id"]})).json()
        assert "error" in cancelled and "closes it unanswered" in cancelled["error"]["message"]
    assert await statuses() == {"approval": "open", "question": "open"}

    entry = [{"interruptId": ids["approval"], "status": "resolved", "payload": {"status": "approved"}}]
    events = await post(server, resume(thread_id, entry), token="bob-token")
    assert events[-1].type == "RUN_FINISHED"
    assert await statuses() == {"approval": "decided", "question": "open"}
    assert (sandbox / "notes.txt").exists()  # the run still waits on alice's answer


async def test_each_request_closed_unanswered_is_audited_as_closed_by_who_did_it_and_where(
    serve: ServerFactory, sandbox: Path
) -> None:
    """Alice forces a resume (REST), cancels a task (A2A), answers one of two interrupts (AG-UI) and sends a message
    instead of answering (the web UI): the audit log the approver reads names her and the interface on each request
    they closed unanswered, never sayso."""
    server = await serve(principals=PRINCIPALS, models={"demo": two_deletes()})
    async with server.client("alice-token") as alice:
        forced = (await alice.post("/v1/runs", json={"message": "delete notes.txt"})).json()
        resumed = await alice.post(f"/v1/runs/{forced['run_id']}/resume", json={"force": True})
        assert resumed.json()["status"] == "completed", resumed.text
        cancelled = task_of(await send(alice, user_message("delete todo.md")))
        await rpc(alice, "files", "CancelTask", {"id": cancelled["id"]})
        moved_on = (await alice.post("/v1/runs", json={"message": "delete report-2025.txt"})).json()
        web = {"Sayso-Via": "web"}
        said = await alice.post("/v1/runs", json={"message": "hello", "thread_id": moved_on["thread_id"]}, headers=web)
        assert said.status_code == 200, said.text
    thread_id = f"thr-{uuid.uuid4().hex}"
    left_out = finished(await post(server, run_input(thread_id, [user("delete both")]), token="alice-token"))
    first = left_out.outcome.interrupts[0]  # type: ignore[union-attr]
    entry = [{"interruptId": first.id, "status": "resolved", "payload": {"status": "cancelled", "reason": "no"}}]
    assert (await post(server, resume(thread_id, entry), token="alice-token"))[-1].type == "RUN_FINISHED"
    async with server.client("ops-token") as ops:
        records = (await ops.get("/v1/audit")).json()["records"]
    closed = [
        (r["body"]["proposed_args"]["name"], r["body"]["principal"], r["body"].get("via"), r["body"]["reason"])
        for r in records
        if r["body"].get("decision") == "skip"
    ]
    assert closed == [
        ("notes.txt", "alice", "rest", "the run was resumed before this request was answered"),
        ("todo.md", "alice", "a2a", "the run was cancelled before this request was answered"),
        ("report-2025.txt", "alice", "web", "the person sent a message instead of answering"),
        ("todo.md", "alice", "ag-ui", "the run was resumed before this request was answered"),
    ]
    assert {r["body"]["by"] for r in records if r["body"].get("decision") == "skip"} == {"person"}
