"""What a kagent client does, unchanged, against sayso over A2A (issue 23): answers, workflows, nesting, 0.x."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models import Model

from sayso import Config, Sayso

from ..models import tool_model
from .a2a_helpers import PLAIN, URI, get_task, hitl, rpc, send, task_of, user_message
from .conftest import InProcess, ServerFactory

SAYSO_KEY = "https://sayso.dev/extensions/requests/v1"


@pytest.fixture
async def server(serve: ServerFactory) -> InProcess:
    return await serve()


@pytest.fixture
async def client(server: InProcess) -> Any:
    async with server.client() as http:
        yield http


async def tool_results(sayso: Sayso, thread_id: str) -> list[Any]:
    """What the model read back from its tools on a thread, in order."""
    return [
        p.content
        for m in await sayso.messages(thread_id)
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]


# --- free text beside a choice (seed 000: "alongside (or instead of) the predefined choices")


async def test_a_choice_plus_free_text_answers_a_single_select_question(
    client: httpx.AsyncClient, server: InProcess
) -> None:
    """kagent's ask_user_response with one choice and the person's own words is accepted; the model reads both."""
    task = task_of(await send(client, user_message("delete report")))
    asked = hitl(task["status"]["message"])
    assert asked["type"] == "ask_user_request"
    [question] = asked["questions"]
    assert question["choices"] == ["report-2025.txt", "report-2026.txt"]
    assert question.get("multiple", False) is False
    answers = [{"answer": ["report-2025.txt", "keep a copy"]}]
    answer = {"type": "ask_user_response", "id": asked["id"], "answers": answers}
    reply = user_message(task_id=task["id"], context_id=task["contextId"], payload=answer)
    then = task_of(await send(client, reply))
    assert then["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # the delete it chose waits for approval
    assert hitl(then["status"]["message"])["tools"][0]["args"] == {"name": "report-2025.txt"}
    [*_, read] = await tool_results(server.sayso, task["contextId"])
    assert read == [
        {"question": "Several files match. Which one should I delete?", "answer": ["report-2025.txt", "keep a copy"]}
    ]


# --- three levels: the nested block names the agent that asks (issue 23, point 6)


def chain() -> dict[str, Model]:
    """top → mid → leaf: each model asks the agent below (the leaf's runs `run_sql`) and passes its answer up."""
    return {
        "top": tool_model(lambda said: ("mid", {"task": "count the orders"}), read="top got: {result}"),
        "mid": tool_model(lambda said: ("leaf", {"task": "run the count"}), read="mid got: {result}"),
        "leaf": tool_model(lambda said: ("run_sql", {"query": "select count(*)"}), read="{result}"),
    }


def chain_config(tmp_path: Path, **a2a: Any) -> Config:
    """top → mid → leaf (models: `chain()`); the leaf's `run_sql` waits for approval and its result climbs back up."""
    (tmp_path / "chain_tools.py").write_text('def run_sql(query: str) -> str:\n    return f"42 rows for {query}"\n')
    return Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'chain.db'}",
            "agents": {
                "top": {"model": "top", "delegates": [{"agent": "mid"}]},
                "mid": {"model": "mid", "delegates": [{"agent": "leaf"}]},
                "leaf": {"model": "leaf", "tools": ["chain_tools:run_sql"], "interrupt": {"tools": ["run_sql"]}},
            },
            "entry": "top",
            "a2a": a2a,
            "base_dir": tmp_path,
        }
    )


async def call(client: httpx.AsyncClient, message: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    body = (await rpc(client, "top", "SendMessage", {"message": message}, headers)).json()
    assert "result" in body, body
    return body["result"]["task"]


async def test_three_levels_name_the_leaf_with_its_own_task_and_the_tops_real_call(
    serve: ServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """top → mid → leaf: `nested` names the leaf with the leaf's task and context; the top-level tool is top's
    real call to mid; sayso's key keeps the full path; the leaf's ids resume all three levels."""
    monkeypatch.syspath_prepend(str(tmp_path))
    server = await serve(config=chain_config(tmp_path), models=chain())
    async with server.client() as client:
        task = await call(client, user_message("how many orders?"))
        message = task["status"]["message"]
        asked = hitl(message)
        nested = asked["nested"]
        [leaf_request] = (await server.sayso.result(task["id"])).requests
        assert nested["subagent_name"] == "leaf"
        assert (nested["task_id"], nested["context_id"]) == (leaf_request.run_id, leaf_request.thread_id)
        [leaf_tool] = nested["tools"]
        assert (leaf_tool["name"], leaf_tool["args"]) == ("run_sql", {"query": "select count(*)"})
        [top_call] = asked["tools"]
        assert (top_call["name"], top_call["args"]) == ("mid", {"task": "count the orders"})
        assert top_call["call_id"] != top_call["id"]  # the model's call id, not the correlation id
        assert asked["hint"] == "Agent 'leaf' requires approval for tool(s): run_sql (mid)"
        assert message["parts"] == [{"text": asked["hint"]}]
        [ours] = message["metadata"][SAYSO_KEY]["requests"]
        assert ours["agent_path"] == "top/mid/leaf"

        approve = {"type": "tool_approval_response", "approvals": [{"id": leaf_tool["id"], "approved": True}]}
        done = await call(client, user_message(task_id=task["id"], context_id=task["contextId"], payload=approve))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["status"]["message"]["parts"][0]["text"] == "top got: mid got: 42 rows for select count(*)"


# --- kagent 0.x details (point 7)


async def test_a_0x_subagent_pause_carries_the_delegate_calls_real_name_args_and_id(
    serve: ServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outer `originalFunctionCall` is top's call to mid, as the model made it; `payload` names the leaf."""
    monkeypatch.syspath_prepend(str(tmp_path))
    server = await serve(config=chain_config(tmp_path, kagent_compat=True), models=chain())
    async with server.client() as client:
        task = await call(client, user_message("how many orders?"), PLAIN)
        [part] = task["status"]["message"]["parts"]
        data = part["data"]
        assert part["metadata"]["kagent_type"] == "function_call" and part["metadata"]["kagent_is_long_running"]
        outer = data["args"]["originalFunctionCall"]
        assert (outer["name"], outer["args"]) == ("mid", {"task": "count the orders"})
        thread = await server.sayso.messages(task["contextId"])
        [top_call] = [p for m in thread if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, ToolCallPart)]
        assert outer["id"] == top_call.tool_call_id
        payload = data["args"]["toolConfirmation"]["payload"]
        assert payload["subagent_name"] == "leaf"
        [inner] = payload["hitl_parts"]
        assert inner["originalFunctionCall"]["name"] == "run_sql"


async def test_a_0x_pause_always_writes_its_payload_and_its_history_shows_the_data_parts(
    serve: ServerFactory, sandbox: Path
) -> None:
    """`toolConfirmation.payload` is present (`null` when empty); a 0.x client reading the finished task's history
    sees the DataParts it was shown and its own decision, never a v1 payload."""
    server = await serve(a2a={"kagent_compat": True})
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete notes"), PLAIN))
        [part] = task["status"]["message"]["parts"]
        confirmation = part["data"]["args"]["toolConfirmation"]
        assert "payload" in confirmation and confirmation["payload"] is None
        call_id = part["data"]["args"]["originalFunctionCall"]["id"]
        decision = user_message(
            task_id=task["id"],
            context_id=task["contextId"],
            data=[{"decision_type": "batch", "decisions": {call_id: "approve"}}],
        )
        done = task_of(await send(client, decision, PLAIN))
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        for headers in (PLAIN, None):  # read without the header, and with it: the history is what was shown
            read = await get_task(client, task["id"], headers)
            pause, answer = read["history"][1], read["history"][2]
            assert [p["data"]["name"] for p in pause["parts"]] == ["adk_request_confirmation"]
            assert URI not in pause.get("metadata", {}) and "extensions" not in pause
            assert answer["parts"][0]["data"]["decision_type"] == "batch"
            assert URI not in answer.get("metadata", {})
    assert not (sandbox / "notes.txt").exists()
