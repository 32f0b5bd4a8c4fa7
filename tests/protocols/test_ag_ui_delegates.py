"""AG-UI with delegates (seed 001): a delegate's browser tool streamed and tagged with its run, a pause mixing
interrupts and browser tools, context reaching only the agents allowed its tool, the coordinator's note."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import Event, RunFinishedEvent
from pydantic import TypeAdapter
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from sayso import Config, Sayso

from ..conftest import InProcess, LiveServer
from ..models import Call, Said, ToolModel, tool_model
from .conftest import NOT_ASKED, protocol_app
from .test_ag_ui_node import NODE_DIR, needs_node

EVENTS: TypeAdapter[Event] = TypeAdapter(Event)

DATASOURCES = {
    "name": "request_datasources",
    "description": "Ask the person which data sources to use.",
    "parameters": {"type": "object", "properties": {"topic": {"type": "string"}}},
}


def archive_logs(month: str) -> str:
    """Archive a month's logs."""
    return f"Archived the logs of {month}."


def team_runtime(tmp_path: Path) -> Sayso:
    """kaboo's team: a coordinator handing work to an analyst (who may ask the browser for data sources) and to
    ops (whose archiving waits for approval), served as the orchestration `team`."""
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'team.db'}",
            "agents": {
                "coordinator": {"model": "c", "client_tools": []},
                "analyst": {"model": "a", "client_tools": ["request_datasources"]},
                "ops": {"model": "o", "tools": [archive_logs], "interrupt": {"tools": ["archive_logs"]}},
            },
            "orchestrations": {
                "team": {
                    "entry_name": "coordinator",
                    "connections": [
                        {"agent": "analyst", "description": "Answers data questions"},
                        {"agent": "ops", "description": "Runs operations"},
                    ],
                }
            },
            "entry": "team",
            "base_dir": tmp_path,
        }
    )
    sources: Call = ("analyst", {"task": "Which sources?"})
    asks: dict[str, Said] = {"data": sources, "report": [sources, ("ops", {"task": "Archive October."})]}
    models = {
        # `data` asks the analyst; `report` asks the analyst and ops at once.
        "c": tool_model(lambda said: asks.get(said, NOT_ASKED), read="Report:\n{results}"),
        "a": tool_model(lambda said: ("request_datasources", {"topic": "revenue"}), read="Using {result}."),
        "o": tool_model(lambda said: ("archive_logs", {"month": "2026-10"}), read="{result}"),
    }
    return Sayso(config, models=models)


@pytest.fixture
async def team(tmp_path: Path) -> AsyncIterator[InProcess]:
    """The team, served in-process."""
    sayso = team_runtime(tmp_path)
    served = await InProcess(app=protocol_app(sayso), sayso=sayso).start()
    yield served
    await served.stop()


async def post(server: InProcess, body: dict[str, Any], path: str = "/ag-ui/team") -> list[Any]:
    """POST a RunAgentInput; every SSE event, validated by the protocol's own models."""
    events: list[Any] = []
    async with server.client() as client, client.stream("POST", path, json=body) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(EVENTS.validate_python(json.loads(line[6:])))
    return events


def run_input(thread_id: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread_id, "runId": uuid.uuid4().hex, "messages": messages, "tools": [DATASOURCES], **extra}


def user(text: str) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "role": "user", "content": text}


def tool_message(call_id: str, content: Any) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "role": "tool", "toolCallId": call_id, "content": json.dumps(content)}


def finished(events: list[Any]) -> RunFinishedEvent:
    assert isinstance(events[-1], RunFinishedEvent), events[-1]
    return events[-1]


async def test_a_delegates_browser_tool_is_streamed_tagged_with_its_run_and_its_context_reaches_it_only(
    team: InProcess,
) -> None:
    """The analyst's browser tool call streams as TOOL_CALL_START/ARGS/END tagged with the analyst's run, is
    pending on RUN_FINISHED, gets only its own context, and its answer reaches the coordinator as a note."""
    context = [
        {"description": "request_datasources", "value": "Offer: warehouse, crm."},
        {"description": "billing", "value": "never shown"},
    ]
    said = user("data")
    events = await post(team, run_input("thr-d1", [said], context=context))
    outcome = finished(events).outcome
    assert outcome is not None and outcome.type == "success"
    (call_id,) = outcome.pending_tool_call_ids or []
    start, args, end = [e for e in events if getattr(e, "tool_call_id", None) == call_id]
    assert (start.type, args.type, end.type) == ("TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END")
    assert start.tool_call_name == "request_datasources" and json.loads(args.delta) == {"topic": "revenue"}
    delegate_run = start.subagent_run_id
    assert delegate_run and start.metadata == {"subagentRunId": delegate_run, "agent_path": "coordinator/analyst"}
    assert (await team.sayso.run_record(delegate_run)).agent == "analyst"

    instructions = {name: seen_instructions(team.sayso, name) for name in ("coordinator", "analyst")}
    assert "Offer: warehouse, crm." in instructions["analyst"]
    assert "Offer: warehouse, crm." not in instructions["coordinator"]
    assert "never shown" not in instructions["analyst"] + instructions["coordinator"]

    answered = await post(team, run_input("thr-d1", [said, tool_message(call_id, ["warehouse"])]))
    assert finished(answered).result == (
        'Report:\nanalyst: Using ["warehouse"].\n\n'
        '(Note: analyst asked the client to run request_datasources {"topic": "revenue"} → ["warehouse"].)'
    )


def seen_instructions(sayso: Sayso, agent: str) -> str:
    model = sayso.agent_model(agent)
    assert isinstance(model, ToolModel)
    return "\n".join(asked.info.instructions or "" for asked in model.asked)


async def test_a_pause_mixing_an_interrupt_and_a_browser_tool_lists_both_and_one_resume_answers_both(
    team: InProcess,
) -> None:
    """Parallel delegates: ops waits for approval and the analyst for the browser; RUN_FINISHED lists the
    interrupt and, beside it, the pending tool call; one resume with both answers finishes the report."""
    said = user("report")
    events = await post(team, run_input("thr-d2", [said]))
    done = finished(events)
    assert done.outcome is not None and done.outcome.type == "interrupt"
    (approval,) = done.outcome.interrupts
    assert approval.metadata is not None
    assert approval.reason == "sayso:approval" and approval.metadata["tool_name"] == "archive_logs"
    assert approval.subagent_run_id == approval.metadata["subagentRunId"]
    assert done.metadata is not None
    (call_id,) = done.metadata["pendingToolCallIds"]
    assert any(e.type == "TOOL_CALL_START" and e.tool_call_id == call_id for e in events)

    entry = {"interruptId": approval.id, "status": "resolved", "payload": {"status": "approved"}}
    events = await post(team, run_input("thr-d2", [said, tool_message(call_id, "the warehouse")], resume=[entry]))
    result = finished(events).result or ""
    assert "Archived the logs of 2026-10." in result and "Using the warehouse." in result


def plain_call_ids(tool: str) -> FunctionModel:
    """A model that calls `tool` under the plain id `call_0`, as many providers number calls, then says what it got."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(f"got {returned[0].content}")])
        return ModelResponse(parts=[ToolCallPart(tool, {}, tool_call_id="call_0")])

    return FunctionModel(respond)


async def test_two_delegates_browser_calls_under_one_plain_id_are_told_apart_and_each_gets_its_answer(
    tmp_path: Path,
) -> None:
    """Two delegates whose models both name their browser call `call_0` pause together: the client is shown two
    distinct call ids, answers each, and each delegate reads its own answer (neither is skipped)."""
    tool = {"client_tools": ["request_datasources"]}
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'pair.db'}",
            "agents": {
                "coordinator": {"model": "c", "delegates": [{"agent": "north"}, {"agent": "south"}], **tool},
                "north": {"model": "n", **tool},
                "south": {"model": "s", **tool},
            },
            "entry": "coordinator",
            "base_dir": tmp_path,
        }
    )
    coordinator = tool_model(lambda said: [("north", {"task": "a"}), ("south", {"task": "b"})], read="{results}")
    models = {"c": coordinator, "n": plain_call_ids("request_datasources"), "s": plain_call_ids("request_datasources")}
    sayso = Sayso(config, models=models)
    served = await InProcess(app=protocol_app(sayso), sayso=sayso).start()
    try:
        path = "/ag-ui/coordinator"
        said = user("go")
        outcome = finished(await post(served, run_input("thr-pair", [said]), path)).outcome
        assert outcome is not None and outcome.type == "success"
        pending = outcome.pending_tool_call_ids or []
        assert len(set(pending)) == 2, pending
        answers = [tool_message(call_id, f"source {n}") for n, call_id in enumerate(pending)]
        done = finished(await post(served, run_input("thr-pair", [said, *answers]), path))
    finally:
        await served.stop()
    assert done.result is not None
    assert "north: got source" in done.result and "south: got source" in done.result
    assert "Skipped" not in done.result


@needs_node
def test_the_official_client_sees_a_delegates_browser_tool_tagged_with_its_run(tmp_path: Path) -> None:
    """@ag-ui/client's HttpAgent receives the analyst's tool call tagged with its run, answers it with a tool
    message, and reads the coordinator's report."""
    sayso = team_runtime(tmp_path)
    server = LiveServer.in_thread(protocol_app(sayso))
    try:
        steps = [
            {
                "say": "data",
                "tools": [DATASOURCES],
                "context": [{"description": "request_datasources", "value": "crm"}],
            },
            {"tools": [DATASOURCES], "answerCalls": {"request_datasources": ["crm"]}},
        ]
        done = subprocess.run(
            ["node", str(NODE_DIR / "ag_ui_steps.mjs"), f"{server.base_url}/ag-ui/team", "thr-d3", json.dumps(steps)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=NODE_DIR,
            check=False,
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    paused, answered = (json.loads(line) for line in done.stdout.splitlines())
    [call] = [c for c in paused["calls"] if c["name"] == "request_datasources"]
    assert call["subagentRunId"]
    assert call["metadata"] == {"subagentRunId": call["subagentRunId"], "agent_path": "coordinator/analyst"}
    assert paused["outcome"] == {"type": "success", "pendingToolCallIds": [call["id"]]}
    assert answered["outcome"] == {"type": "success"}
    assert answered["result"].startswith('Report:\nanalyst: Using ["crm"].')
