"""A call that raises after approval leaves the thread usable, over REST, A2A and AG-UI (issue 22 ¶2).

`charge` raises once approved: the model reads the error and the run completes. `refund` runs,
then the model's provider fails: the run fails, and the next message on the same thread (the
same A2A context, the same AG-UI thread) is answered all the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from sayso import Config, Sayso

from ..conftest import InProcess
from .a2a_helpers import hitl, send, task_of, user_message
from .conftest import protocol_app
from .test_ag_ui import finished, interrupt_of, post, resume, run_input, user


def charge(amount: int) -> str:
    """Charge the card; the payment service is down."""
    raise ConnectionError("the payment service is down")


def refund(amount: int) -> str:
    """Refund the card."""
    return f"refunded {amount}"


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        if last.tool_name == "refund":
            raise RuntimeError("the model provider is down")
        return ModelResponse(parts=[TextPart(f"model read: {last.content}")])
    text = str(getattr(last, "content", ""))
    if text in ("charge", "refund"):
        return ModelResponse(parts=[ToolCallPart(text, {"amount": 5})])
    return ModelResponse(parts=[TextPart(f"you said: {text}")])


async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    """The same model, streamed (A2A streams the text as the model writes it)."""
    response = model(messages, info)
    for part in response.parts:
        if isinstance(part, TextPart):
            yield part.content
        elif isinstance(part, ToolCallPart):
            yield {
                0: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(), tool_call_id=part.tool_call_id)
            }


READ = "model read: Error: the tool charge failed: ConnectionError: the payment service is down"
SCENARIOS = [pytest.param("charge", "completed", id="tool-raises"), pytest.param("refund", "failed", id="run-fails")]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[InProcess]:
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "agents": {
                "files": {"model": "m", "tools": [charge, refund], "interrupt": {"tools": ["charge", "refund"]}}
            },
            "base_dir": tmp_path,
        }
    )
    sayso = Sayso(config, models={"m": FunctionModel(model, stream_function=stream)})
    served = await InProcess(app=protocol_app(sayso), sayso=sayso).start()
    yield served
    await served.stop()


@pytest.mark.parametrize(("message", "ends"), SCENARIOS)
async def test_rest_the_next_message_after_a_failing_approved_call_works(
    server: InProcess, message: str, ends: str
) -> None:
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": message})).json()
        decided = await client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json={"kind": "approve"})
        after = (await client.post("/v1/runs", json={"message": "hello", "thread_id": run["thread_id"]})).json()
        thread = (await client.get(f"/v1/threads/{run['thread_id']}")).json()
    assert decided.json()["run"]["status"] == ends
    if ends == "completed":
        assert decided.json()["run"]["output"] == READ
    assert (after["status"], after["output"]) == ("completed", "you said: hello")
    assert [e["text"] for e in thread["transcript"] if e["role"] == "user"] == [message, "hello"]


@pytest.mark.parametrize(("message", "ends"), SCENARIOS)
async def test_a2a_the_next_message_on_the_context_after_a_failing_approved_call_works(
    server: InProcess, message: str, ends: str
) -> None:
    async with server.client() as client:
        task = task_of(await send(client, user_message(message)))
        tool_id = hitl(task["status"]["message"])["tools"][0]["id"]
        payload = {"type": "tool_approval_response", "approvals": [{"id": tool_id, "approved": True}]}
        answer = user_message(task_id=task["id"], context_id=task["contextId"], payload=payload)
        decided = task_of(await send(client, answer))
        after = task_of(await send(client, user_message("hello", context_id=task["contextId"])))
    state = {"completed": "TASK_STATE_COMPLETED", "failed": "TASK_STATE_FAILED"}[ends]
    assert decided["status"]["state"] == state
    assert after["status"]["state"] == "TASK_STATE_COMPLETED"
    assert after["contextId"] == task["contextId"]
    texts = [p.get("text") for a in after.get("artifacts", []) for p in a["parts"]]
    assert "you said: hello" in texts


@pytest.mark.parametrize(("message", "ends"), SCENARIOS)
async def test_ag_ui_the_next_message_on_the_thread_after_a_failing_approved_call_works(
    server: InProcess, message: str, ends: str
) -> None:
    pending = interrupt_of(await post(server, run_input("thr-fail", [user(message)])))
    payload: dict[str, Any] = {"status": "approved", "scope": "once"}
    decided = await post(
        server, resume("thr-fail", [{"interruptId": pending.id, "status": "resolved", "payload": payload}])
    )
    after = await post(server, run_input("thr-fail", [user("hello")]))
    if ends == "completed":
        assert finished(decided).outcome is not None
        assert any(e.type == "TEXT_MESSAGE_CONTENT" and e.delta == READ for e in decided)
    else:
        assert decided[-1].type == "RUN_ERROR"
    outcome = finished(after).outcome
    assert outcome is not None and outcome.type == "success"
    assert any(e.type == "TEXT_MESSAGE_CONTENT" and e.delta == "you said: hello" for e in after)
