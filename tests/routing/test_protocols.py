"""Routing over A2A and AG-UI: the pause says who decides and where the vote stands; the starter is refused."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ag_ui.core import Event
from pydantic import TypeAdapter

from sayso import Config, Sayso
from sayso.protocols.a2a import a2a_router
from sayso.server import create_app

from ..conftest import InProcess
from ..protocols.a2a_helpers import HEADERS, PLAIN, hitl, rpc, task_of, user_message

SAYSO_KEY = "https://sayso.dev/extensions/requests/v1"
SELF = "'alice' started this run and may not decide its own calls"
EVENTS: TypeAdapter[Event] = TypeAdapter(Event)


async def test_a2a_shows_the_vote_and_refuses_the_starter(server: InProcess) -> None:
    async with server.client("alice-token") as alice, server.client("bob-token") as bob:
        sent = await rpc(alice, "payments", "SendMessage", {"message": user_message("refund 250 to acme")}, HEADERS)
        task = task_of(sent.json())
        message = task["status"]["message"]
        assert message["parts"][0]["text"].endswith(" · approvals: 0 of 2, waiting for finance")
        [shown] = message["metadata"][SAYSO_KEY]["requests"]
        assert shown["approvers"]["named"] == ["finance"] and shown["quorum"]["required"] == 2
        approval = {"id": hitl(message)["tools"][0]["id"], "approved": True}
        answer = user_message(
            "ok", task_id=task["id"], payload={"type": "tool_approval_response", "approvals": [approval]}
        )
        refused = (await rpc(alice, "payments", "SendMessage", {"message": answer}, HEADERS)).json()
        assert refused["error"]["code"] == -32602 and SELF in refused["error"]["message"]
        await bob.post(f"/v1/requests/{shown['request_id']}/decision", json={"kind": "approve"})
        read = (await rpc(alice, "payments", "GetTask", {"id": task["id"]}, HEADERS)).json()["result"]
    assert read["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert read["status"]["message"]["parts"][0]["text"].endswith(" · approvals: 1 of 2, waiting for finance")
    [shown] = read["status"]["message"]["metadata"][SAYSO_KEY]["requests"]
    assert shown["quorum"]["approved_by"] == ["bob"]


async def ag_ui(server: InProcess, body: dict[str, Any], token: str) -> list[Any]:
    events: list[Any] = []
    async with server.client(token) as client, client.stream("POST", "/ag-ui/payments", json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(EVENTS.validate_python(json.loads(line[6:])))
    return events


def run_input(thread_id: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": uuid.uuid4().hex,
        "state": None,
        "messages": messages,
        "tools": [],
        "context": [],
        "forwardedProps": None,
        **extra,
    }


async def test_ag_ui_shows_the_vote_and_refuses_the_starter(server: InProcess) -> None:
    thread_id = f"thr-{uuid.uuid4().hex}"
    asked = run_input(thread_id, [{"id": uuid.uuid4().hex, "role": "user", "content": "refund 250 to acme"}])
    paused = await ag_ui(server, asked, "alice-token")
    [interrupt] = paused[-1].outcome.interrupts
    assert interrupt.message.endswith(" · approvals: 0 of 2, waiting for finance")
    assert interrupt.metadata["approvers"]["named"] == ["finance"]
    assert interrupt.metadata["quorum"]["waiting_for"] == ["finance"]
    entry = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"status": "approved"}}]
    refused = await ag_ui(server, run_input(thread_id, [], resume=entry), "alice-token")
    assert (refused[-1].type, refused[-1].code) == ("RUN_ERROR", "forbidden") and SELF in refused[-1].message
    voted = await ag_ui(server, run_input(thread_id, [], resume=entry), "bob-token")
    [waiting] = voted[-1].outcome.interrupts
    assert waiting.message.endswith(" · approvals: 1 of 2, waiting for finance")
    done = await ag_ui(server, run_input(thread_id, [], resume=entry), "carol-token")
    assert done[-1].type == "RUN_FINISHED" and done[-1].result == "Refunded 250 to acme."


async def test_a_routed_approver_answers_over_a2a_and_ag_ui(server: InProcess) -> None:
    """bob (finance) is no approver for the agent, yet sees alice's waiting task and votes on it over A2A;
    dana, who is not in finance, does not see it."""
    async with server.client("alice-token") as alice, server.client("bob-token") as bob:
        task = task_of(
            (await rpc(alice, "payments", "SendMessage", {"message": user_message("refund 9 to acme")}, HEADERS)).json()
        )
        approval = {"id": hitl(task["status"]["message"])["tools"][0]["id"], "approved": True}
        payload = {"type": "tool_approval_response", "approvals": [approval]}
        voted = (
            await rpc(
                bob,
                "payments",
                "SendMessage",
                {"message": user_message("ok", task_id=task["id"], payload=payload)},
                HEADERS,
            )
        ).json()
    assert task_of(voted)["status"]["message"]["parts"][0]["text"].endswith("approvals: 1 of 2, waiting for finance")
    async with server.client("dana-token") as dana:
        assert "error" in (await rpc(dana, "payments", "GetTask", {"id": task["id"]}, HEADERS)).json()


EDITED = {"amount": 200, "to": "acme"}


@pytest.fixture
async def compat(refunds: Config) -> AsyncIterator[InProcess]:
    """The example over A2A in kagent compat mode: v1 to clients that ask for it, kagent 0.x's DataParts to others."""
    config = refunds.model_copy(update={"a2a": refunds.a2a.model_copy(update={"kagent_compat": True})})
    sayso = Sayso(config)
    app = create_app(sayso, routers=[a2a_router(sayso)], expire_every_seconds=None)
    served = await InProcess(app=app, sayso=sayso).start()
    yield served
    await served.stop()


async def test_after_an_edit_a2a_shows_the_next_approver_the_arguments_their_approval_runs(compat: InProcess) -> None:
    """bob approved with the amount edited to 200: carol's task showed the proposed 250 as the call's arguments
    (only the count said "edited arguments"), while her plain approval ran the refund with 200. Now the call she
    approves shows 200, in kagent's form and in kagent 0.x's."""
    async with compat.client("alice-token") as alice, compat.client("carol-token") as carol:
        tasks = []
        for headers in (HEADERS, PLAIN):
            sent = await rpc(alice, "payments", "SendMessage", {"message": user_message("refund 250 to acme")}, headers)
            tasks.append(task_of(sent.json()))
        v1, legacy = tasks
        [shown] = v1["status"]["message"]["metadata"][SAYSO_KEY]["requests"]
        [part] = legacy["status"]["message"]["parts"]
        assert part["data"]["args"]["originalFunctionCall"]["args"] == {"amount": 250, "to": "acme"}
        async with compat.client("bob-token") as bob:
            for request_id in (shown["request_id"], part["data"]["id"]):
                edit = {"kind": "approve", "edited_args": EDITED}
                assert (await bob.post(f"/v1/requests/{request_id}/decision", json=edit)).status_code == 200
        read = (await rpc(carol, "payments", "GetTask", {"id": legacy["id"]}, PLAIN)).json()["result"]
        [part] = read["status"]["message"]["parts"]
        assert part["data"]["args"]["originalFunctionCall"]["args"] == EDITED
        read = (await rpc(carol, "payments", "GetTask", {"id": v1["id"]}, HEADERS)).json()["result"]
        message = read["status"]["message"]
        assert message["parts"][0]["text"].endswith(" · approvals: 1 of 2 (edited arguments), waiting for finance")
        [tool] = hitl(message)["tools"]
        assert tool["args"] == EDITED
        approval = {"id": tool["id"], "approved": True}
        answer = user_message(
            "ok", task_id=v1["id"], payload={"type": "tool_approval_response", "approvals": [approval]}
        )
        done = task_of((await rpc(carol, "payments", "SendMessage", {"message": answer}, HEADERS)).json())
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "Refunded 200 to acme." in json.dumps(done)


async def test_after_an_edit_ag_ui_shows_the_next_approver_the_arguments_their_approval_runs(server: InProcess) -> None:
    """bob approved with the amount edited to 200: the interrupt carol read still had `tool_input` 250, while her
    plain approval ran the refund with 200. Now the interrupt shows 200."""
    thread_id = f"thr-{uuid.uuid4().hex}"
    asked = run_input(thread_id, [{"id": uuid.uuid4().hex, "role": "user", "content": "refund 250 to acme"}])
    [interrupt] = (await ag_ui(server, asked, "alice-token"))[-1].outcome.interrupts
    assert interrupt.metadata["tool_input"] == {"amount": 250, "to": "acme"}
    async with server.client("bob-token") as bob:
        edit = {"kind": "approve", "edited_args": EDITED}
        assert (await bob.post(f"/v1/requests/{interrupt.id}/decision", json=edit)).status_code == 200
    # carol's client sends the thread as it has it: nothing new, so it is shown where the thread stands.
    [waiting] = (await ag_ui(server, run_input(thread_id, asked["messages"]), "carol-token"))[-1].outcome.interrupts
    assert waiting.message.endswith(" · approvals: 1 of 2 (edited arguments), waiting for finance")
    assert waiting.metadata["tool_input"] == EDITED
    entry = [{"interruptId": waiting.id, "status": "resolved", "payload": {"status": "approved"}}]
    done = await ag_ui(server, run_input(thread_id, [], resume=entry), "carol-token")
    assert done[-1].type == "RUN_FINISHED" and done[-1].result == "Refunded 200 to acme."
