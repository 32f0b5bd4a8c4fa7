"""ADK's answer to a confirmation over A2A (seed 004): a FunctionResponse `{confirmed, payload}` for
`adk_request_confirmation`, accepted where kagent 0.x's format is on; the payload reaches the tool."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import RunContext

from sayso import Config, Sayso, require_approval

from ..conftest import InProcess
from ..models import tool_model, verbs
from .a2a_helpers import PLAIN, rpc, task_of, user_message
from .conftest import protocol_app

booked: list[str] = []


def book_itinerary(ctx: RunContext[Any], city: str) -> str:
    """Book a day out in a city; the person reviews the itinerary first and may say what they would change."""
    approval = require_approval(ctx, hint=f"Book this itinerary for {city}?", payload={"itinerary": ["museum", "park"]})
    booked.append(city)
    return f"booked {city}; feedback: {json.dumps(approval.payload, sort_keys=True)}"


Serve = Callable[..., Awaitable[InProcess]]


@pytest.fixture
async def concierge(tmp_path: Path) -> AsyncIterator[Serve]:
    """A concierge whose booking tool asks for confirmation from its body, served over A2A."""
    booked.clear()
    started: list[InProcess] = []

    async def serve(*, compat: bool = True) -> InProcess:
        config = Config.model_validate(
            {
                "store": f"sqlite:///{tmp_path / f'concierge-{len(started)}.db'}",
                "agents": {"concierge": {"model": "m", "tools": [book_itinerary]}},
                "a2a": {"kagent_compat": compat},
                "base_dir": tmp_path,
            }
        )
        model = tool_model(verbs(book=("book_itinerary", "city")), read="{result}")
        sayso = Sayso(config, models={"m": model})
        served = await InProcess(app=protocol_app(sayso), sayso=sayso).start()
        started.append(served)
        return served

    yield serve
    for served in started:
        await served.stop()


def function_response(task: dict[str, Any], response: Any, confirmation_id: str) -> dict[str, Any]:
    """The ROLE_USER message an ADK client sends: the confirmation's FunctionResponse as a DataPart."""
    data = {"name": "adk_request_confirmation", "id": confirmation_id, "response": response}
    message = user_message(task_id=task["id"], context_id=task["contextId"])
    message["parts"] = [{"data": data, "metadata": {"adk_type": "function_response"}}]
    return message


async def pause(client: Any) -> tuple[dict[str, Any], str]:
    body = (await rpc(client, "concierge", "SendMessage", {"message": user_message("book Rome")}, PLAIN)).json()
    task = task_of(body)
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    (part,) = task["status"]["message"]["parts"]
    assert part["data"]["name"] == "adk_request_confirmation"
    assert part["data"]["args"]["toolConfirmation"]["hint"] == "Book this itinerary for Rome?"
    return task, part["data"]["id"]


async def test_a_confirmed_function_response_runs_the_tool_with_the_clients_payload(concierge: Serve) -> None:
    """`{confirmed: true, payload}` approves the call, and the tool reads the client's payload as its approval's."""
    server = await concierge()
    async with server.client() as client:
        task, confirmation_id = await pause(client)
        response = {"confirmed": True, "payload": {"user_feedback": "more museums"}}
        body = (
            await rpc(
                client,
                "concierge",
                "SendMessage",
                {"message": function_response(task, response, confirmation_id)},
                PLAIN,
            )
        ).json()
    done = task_of(body)
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["status"]["message"]["parts"] == [{"text": 'booked Rome; feedback: {"user_feedback": "more museums"}'}]


async def test_adks_wrapped_response_and_a_refusal_do_not_run_the_tool(concierge: Serve) -> None:
    """ADK's `{"response": "<json>"}` wrapping is read too; `confirmed: false` declines with the reason given."""
    server = await concierge()
    async with server.client() as client:
        task, confirmation_id = await pause(client)
        wrapped = {"response": json.dumps({"confirmed": False, "payload": {"rejection_reason": "too far"}})}
        body = (
            await rpc(
                client,
                "concierge",
                "SendMessage",
                {"message": function_response(task, wrapped, confirmation_id)},
                PLAIN,
            )
        ).json()
    done = task_of(body)
    assert done["status"]["message"]["parts"] == [{"text": "Declined: too far"}]
    assert booked == []


async def test_a_function_response_must_decide_the_shown_confirmation(concierge: Serve) -> None:
    """A FunctionResponse for another confirmation, or without a boolean `confirmed`, is refused; the task waits."""
    server = await concierge()
    async with server.client() as client:
        task, confirmation_id = await pause(client)
        other = (
            await rpc(
                client,
                "concierge",
                "SendMessage",
                {"message": function_response(task, {"confirmed": True}, "adk-x")},
                PLAIN,
            )
        ).json()
        assert "missing ids" in other["error"]["message"]
        loose = (
            await rpc(
                client,
                "concierge",
                "SendMessage",
                {"message": function_response(task, {"confirmed": "yes"}, confirmation_id)},
                PLAIN,
            )
        ).json()
        assert "'confirmed' must be a JSON boolean" in loose["error"]["message"]
    assert booked == []


async def test_without_the_compat_switch_a_function_response_is_not_a_decision(concierge: Serve) -> None:
    """Where kagent 0.x's format is off, a FunctionResponse decides nothing and nothing runs."""
    server = await concierge(compat=False)
    async with server.client() as client:
        body = (await rpc(client, "concierge", "SendMessage", {"message": user_message("book Rome")}, PLAIN)).json()
        task = task_of(body)
        refused = (
            await rpc(
                client,
                "concierge",
                "SendMessage",
                {"message": function_response(task, {"confirmed": True}, "any")},
                PLAIN,
            )
        ).json()
    assert "no HITL response" in refused["error"]["message"]
    assert booked == []
