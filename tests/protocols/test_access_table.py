"""One authorization rule on every interface: the same table of cases runs against REST, A2A and AG-UI.

Alice owns a thread paused on her request to delete `notes.txt`. Each case has one principal try
one thing on that thread through one interface: send a message into it, decide its request, read
it, or find the request in their inbox. Only the owner sends messages; the owner and approvers for
the thread's agent (an approver for `*` among them) decide, read and find it listed; nobody else
does any of it. A refused attempt changes nothing: alice's request stays open,
her run stays the thread's active one, and the file is still there. The web UI goes through REST;
AG-UI has no reading verb of its own (it only streams the caller's own runs), so it has no read case.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from .a2a_helpers import rpc, send, user_message
from .conftest import InProcess, ServerFactory, example_config
from .test_ag_ui import post, resume, run_input, user

PRINCIPALS: list[dict[str, Any]] = [
    {"name": "alice", "token": "alice-token"},
    {"name": "bob", "token": "bob-token"},
    {"name": "ops", "token": "ops-token", "approver_for": ["files"]},
    {"name": "carol", "token": "carol-token", "approver_for": ["billing"]},
    {"name": "rev", "token": "rev-token", "approver_for": ["*"]},
]
TOKENS = {p["name"]: p["token"] for p in PRINCIPALS}

Action = Literal["message", "decide", "read", "list"]
Outcome = Literal["allowed", "refused"]


@dataclass(frozen=True, kw_only=True)
class Paused:
    """Alice's paused thread: its id, her run (the A2A task) and the open request (the AG-UI interrupt)."""

    thread_id: str
    run_id: str
    request_id: str


Attempt = Callable[[InProcess, str, Paused], Awaitable[Outcome]]


async def rest_message(server: InProcess, token: str, paused: Paused) -> Outcome:
    async with server.client(token) as client:
        response = await client.post("/v1/runs", json={"message": "list", "thread_id": paused.thread_id})
    return _http(response.status_code)


async def rest_decide(server: InProcess, token: str, paused: Paused) -> Outcome:
    async with server.client(token) as client:
        response = await client.post(f"/v1/requests/{paused.request_id}/decision", json={"kind": "approve"})
    return _http(response.status_code)


async def rest_read(server: InProcess, token: str, paused: Paused) -> Outcome:
    async with server.client(token) as client:
        response = await client.get(f"/v1/threads/{paused.thread_id}")
    return _http(response.status_code)


async def rest_list(server: InProcess, token: str, paused: Paused) -> Outcome:
    """The inbox, whole and filtered by the thread's agent: what it lists is what the caller may decide."""
    async with server.client(token) as client:
        listed = [
            paused.request_id in [r["id"] for r in (await client.get("/v1/requests", params=query)).json()["requests"]]
            for query in ({}, {"agent": "files"})
        ]
    assert listed[0] == listed[1], listed
    return "allowed" if listed[0] else "refused"


async def a2a_message(server: InProcess, token: str, paused: Paused) -> Outcome:
    """Plain text on the paused task's context: the issue's attack (it would skip alice's request)."""
    async with server.client(token) as client:
        body = await send(client, user_message("list", context_id=paused.thread_id))
    return _rpc(body)


async def a2a_decide(server: InProcess, token: str, paused: Paused) -> Outcome:
    payload = {"type": "tool_approval_response", "approvals": [{"id": paused.request_id, "approved": True}]}
    async with server.client(token) as client:
        body = await send(client, user_message(task_id=paused.run_id, context_id=paused.thread_id, payload=payload))
    return _rpc(body)


async def a2a_read(server: InProcess, token: str, paused: Paused) -> Outcome:
    async with server.client(token) as client:
        response = await rpc(client, "files", "GetTask", {"id": paused.run_id})
    return _rpc(response.json())


async def ag_ui_message(server: InProcess, token: str, paused: Paused) -> Outcome:
    """A user message into alice's AG-UI thread: the issue's other attack."""
    events = await post(server, run_input(paused.thread_id, [user("list")]), token=token)
    return "allowed" if events[-1].type == "RUN_FINISHED" else "refused"


async def ag_ui_decide(server: InProcess, token: str, paused: Paused) -> Outcome:
    entry = [{"interruptId": paused.request_id, "status": "resolved", "payload": {"status": "approved"}}]
    events = await post(server, resume(paused.thread_id, entry), token=token)
    return "allowed" if events[-1].type == "RUN_FINISHED" else "refused"


def _http(status: int) -> Outcome:
    assert status in (200, 403, 404), status
    return "allowed" if status == 200 else "refused"


def _rpc(body: dict[str, Any]) -> Outcome:
    if "result" in body:
        return "allowed"
    assert body["error"]["code"] in (-32001, -32602, -32600), body
    return "refused"


INTERFACES: dict[str, dict[Action, Attempt]] = {
    "rest": {"message": rest_message, "decide": rest_decide, "read": rest_read, "list": rest_list},
    "a2a": {"message": a2a_message, "decide": a2a_decide, "read": a2a_read},
    "ag-ui": {"message": ag_ui_message, "decide": ag_ui_decide},
}


@dataclass(frozen=True, kw_only=True)
class Case:
    """Who tries what on alice's paused thread, and what the one rule says."""

    who: str
    action: Action
    expected: Outcome

    @property
    def id(self) -> str:
        return f"{self.who}-{self.action}"


CASES = [
    Case(who="alice", action="message", expected="allowed"),
    Case(who="ops", action="message", expected="refused"),  # an approver never speaks in another's thread
    Case(who="bob", action="message", expected="refused"),
    Case(who="carol", action="message", expected="refused"),
    Case(who="alice", action="decide", expected="allowed"),
    Case(who="ops", action="decide", expected="allowed"),  # approver for the thread's agent
    Case(who="bob", action="decide", expected="refused"),
    Case(who="carol", action="decide", expected="refused"),  # approver, but for another agent
    Case(who="alice", action="read", expected="allowed"),
    Case(who="ops", action="read", expected="allowed"),
    Case(who="bob", action="read", expected="refused"),
    Case(who="carol", action="read", expected="refused"),
    Case(who="rev", action="message", expected="refused"),
    Case(who="rev", action="decide", expected="allowed"),  # approver for every agent
    Case(who="rev", action="read", expected="allowed"),
    Case(who="alice", action="list", expected="allowed"),
    Case(who="ops", action="list", expected="allowed"),
    Case(who="rev", action="list", expected="allowed"),
    Case(who="bob", action="list", expected="refused"),
    Case(who="carol", action="list", expected="refused"),
]

PARAMS = [
    pytest.param(interface, case, id=f"{interface}-{case.id}")
    for interface, attempts in INTERFACES.items()
    for case in CASES
    if case.action in attempts
]


async def _pause_alices_thread(server: InProcess) -> Paused:
    thread_id = f"thr-{uuid.uuid4().hex}"
    async with server.client("alice-token") as alice:
        started = await alice.post("/v1/runs", json={"message": "delete notes", "thread_id": thread_id})
    run = started.json()
    assert run["status"] == "paused", run
    return Paused(thread_id=thread_id, run_id=run["run_id"], request_id=run["requests"][0]["id"])


@pytest.mark.parametrize(("interface", "case"), PARAMS)
async def test_the_one_access_rule_holds_on_every_interface(
    serve: ServerFactory, sandbox: Path, interface: str, case: Case
) -> None:
    """Each principal may message, decide and read alice's paused thread exactly as the rule says, everywhere."""
    config = example_config(principals=PRINCIPALS)
    agents = {**config.model_dump()["agents"], "billing": config.model_dump()["agents"]["files"]}
    server = await serve(config=example_config(principals=PRINCIPALS, agents=agents))
    paused = await _pause_alices_thread(server)
    outcome = await INTERFACES[interface][case.action](server, TOKENS[case.who], paused)
    assert outcome == case.expected
    async with server.client("alice-token") as alice:
        request = (await alice.get(f"/v1/requests/{paused.request_id}")).json()
        thread = (await alice.get(f"/v1/threads/{paused.thread_id}")).json()
    if case.expected == "refused" or case.action in ("read", "list"):
        assert request["status"] == "open"
        assert thread["active_run"]["run_id"] == paused.run_id
        assert [r["id"] for r in thread["active_run"]["requests"]] == [paused.request_id]
        assert (sandbox / "notes.txt").exists()
    elif case.action == "decide":
        assert (request["status"], request["principal"]) == ("decided", case.who)
        assert not (sandbox / "notes.txt").exists()
    else:  # the owner's own message moves on: her request is skipped, nothing is deleted
        assert (request["status"], request["decision"]["kind"]) == ("closed", "skip")
        assert (sandbox / "notes.txt").exists()
