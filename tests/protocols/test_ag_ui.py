"""AG-UI, in-process (docs/guides/ag-ui.md): raw SSE, every event validated with the ag-ui-protocol models."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import Event, RunFinishedEvent
from pydantic import TypeAdapter
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ..models import tool_model
from .conftest import NOT_ASKED, InProcess, ServerFactory, client_tool, two_deletes

EVENTS: TypeAdapter[Event] = TypeAdapter(Event)


def run_input(thread_id: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": uuid.uuid4().hex,
        "state": None,
        "messages": messages,
        "tools": extra.pop("tools", []),
        "context": [],
        "forwardedProps": None,
        **extra,
    }


def user(text: str) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "role": "user", "content": text}


async def post(server: InProcess, body: dict[str, Any], *, token: str | None = None, agent: str = "files") -> list[Any]:
    """POST a RunAgentInput to `agent`; every SSE event, parsed and validated by the protocol's pydantic models."""
    events: list[Any] = []
    async with server.client(token) as client, client.stream("POST", f"/ag-ui/{agent}", json=body) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(EVENTS.validate_python(json.loads(line[6:])))
    assert events[0].type == "RUN_STARTED"
    return events


def finished(events: list[Any]) -> RunFinishedEvent:
    last = events[-1]
    assert isinstance(last, RunFinishedEvent), last
    return last


def types(events: list[Any]) -> list[str]:
    return [e.type.value if hasattr(e.type, "value") else e.type for e in events]


async def test_a_gated_call_ends_the_run_on_an_interrupt_with_its_fields(serve: ServerFactory, sandbox: Path) -> None:
    """A gated call ends the run on an interrupt carrying the call, its hint, subject, scopes and answer schema."""
    server = await serve()
    events = await post(server, run_input("thr-agui-1", [user("delete notes")]))
    assert "TOOL_CALL_START" in types(events) and "TOOL_CALL_RESULT" in types(events)
    outcome = finished(events).outcome
    assert outcome is not None and outcome.type == "interrupt"
    (interrupt,) = outcome.interrupts
    assert interrupt.reason == "sayso:approval"
    assert interrupt.message == "Deleting a file cannot be undone."
    assert interrupt.expires_at is None
    assert interrupt.response_schema is not None and interrupt.response_schema["required"] == ["status"]
    assert interrupt.metadata is not None
    assert interrupt.metadata == {
        "tool_name": "delete_file",
        "tool_input": {"name": "notes.txt"},
        "agent_path": "files",
        "run_id": interrupt.metadata["run_id"],
        "subject": {"key": "folder:.", "label": "the sandbox's top folder"},
        "scopes": ["once", "thread", "always"],
        "why": "asked because every call to delete_file waits for approval (rule delete_file)",
        "rule": "delete_file",
    }
    starts = [e for e in events if e.type == "TOOL_CALL_START" and e.tool_call_name == "delete_file"]
    assert starts[0].tool_call_id == interrupt.tool_call_id


def resume(thread_id: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    return run_input(thread_id, [], resume=entries)


def interrupt_of(events: list[Any]) -> Any:
    outcome = finished(events).outcome
    assert outcome is not None and outcome.type == "interrupt", outcome
    return outcome.interrupts[0]


async def test_approve_with_an_edit_runs_the_edited_call_and_records_the_approval(
    serve: ServerFactory, sandbox: Path
) -> None:
    """Approving with edited input runs the edited call; its result carries the approval record."""
    server = await serve()
    pending = interrupt_of(await post(server, run_input("thr-agui-2", [user("delete notes")])))
    payload = {"status": "approved", "scope": "once", "tool_input": {"name": "todo.md"}}
    events = await post(
        server, resume("thr-agui-2", [{"interruptId": pending.id, "status": "resolved", "payload": payload}])
    )
    outcome = finished(events).outcome
    assert outcome is not None and outcome.type == "success" and not outcome.pending_tool_call_ids
    result = next(e for e in events if e.type == "TOOL_CALL_RESULT" and e.tool_call_id == pending.tool_call_id)
    assert result.content == "Deleted todo.md."
    approval = result.metadata["approval"]
    assert approval["decision"] == "approve" and approval["by"] == "person" and approval["scope"] == "once"
    assert approval["proposed_args"] == {"name": "notes.txt"}
    assert approval["executed_args"] == {"name": "todo.md"}
    assert (sandbox / "notes.txt").exists() and not (sandbox / "todo.md").exists()
    assert any(e.type == "TEXT_MESSAGE_CONTENT" and e.delta == "Deleted todo.md." for e in events)


@pytest.mark.parametrize(
    ("entry", "model_reads"),
    [
        pytest.param(
            {"status": "resolved", "payload": {"status": "cancelled", "reason": "not today"}},
            "Declined: not today",
            id="deny",
        ),
        pytest.param({"status": "cancelled"}, "Skipped:", id="skip"),
        pytest.param(None, "Skipped:", id="left-out"),
    ],
)
async def test_deny_skip_and_left_out_never_run_the_call(
    serve: ServerFactory, sandbox: Path, entry: dict[str, Any] | None, model_reads: str
) -> None:
    """A denied, skipped or left-out interrupt never runs its call; the model reads why."""
    server = await serve(models={"demo": two_deletes()})
    events = await post(server, run_input("thr-agui-3", [user("delete both")]))
    first, second = finished(events).outcome.interrupts  # type: ignore[union-attr]
    approve_second = {"interruptId": second.id, "status": "resolved", "payload": {"status": "approved"}}
    entries = [approve_second] + ([{"interruptId": first.id, **entry}] if entry else [])
    events = await post(server, resume("thr-agui-3", entries))
    results = {e.tool_call_id: e for e in events if e.type == "TOOL_CALL_RESULT"}
    assert results[first.tool_call_id].content.startswith(model_reads)
    assert results[second.tool_call_id].content == "Deleted todo.md."
    assert (sandbox / "notes.txt").exists() and not (sandbox / "todo.md").exists()


async def test_a_resume_naming_an_unknown_interrupt_is_refused_and_the_pause_stays(
    serve: ServerFactory, sandbox: Path
) -> None:
    """A resume with a forged interrupt id or a bad scope is a RUN_ERROR; the pause stays and can still be answered."""
    server = await serve()
    pending = interrupt_of(await post(server, run_input("thr-agui-4", [user("delete notes")])))
    forged = [{"interruptId": "req_forged", "status": "resolved", "payload": {"status": "approved"}}]
    events = await post(server, resume("thr-agui-4", forged))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "invalid_resume"
    bad_scope = [
        {"interruptId": pending.id, "status": "resolved", "payload": {"status": "approved", "scope": "forever"}}
    ]
    assert (await post(server, resume("thr-agui-4", bad_scope)))[-1].type == "RUN_ERROR"
    assert (sandbox / "notes.txt").exists()
    again = [{"interruptId": pending.id, "status": "resolved", "payload": {"status": "approved"}}]
    assert finished(await post(server, resume("thr-agui-4", again))).outcome.type == "success"  # type: ignore[union-attr]
    assert not (sandbox / "notes.txt").exists()


async def test_a_question_is_an_interrupt_answered_by_position(serve: ServerFactory, sandbox: Path) -> None:
    """A question is an interrupt; its answers, one list per question in order, resume the run."""
    server = await serve()
    asked = interrupt_of(await post(server, run_input("thr-agui-5", [user("delete report")])))
    assert asked.reason == "sayso:question"
    assert asked.message == "Several files match. Which one should I delete?"
    assert asked.metadata["questions"][0]["choices"] == ["report-2025.txt", "report-2026.txt"]
    answer = {"status": "resolved", "payload": {"answers": [{"answer": ["report-2026.txt"]}]}}
    approval = interrupt_of(await post(server, resume("thr-agui-5", [{"interruptId": asked.id, **answer}])))
    assert approval.reason == "sayso:approval" and approval.metadata["tool_input"] == {"name": "report-2026.txt"}


async def test_client_tools_end_the_run_with_pending_calls_answered_by_tool_messages(serve: ServerFactory) -> None:
    """A client tool call ends the run with it pending; a tool message with its result carries the run on."""
    server = await serve(
        models={"demo": client_tool()}, agents={"files": {"model": "demo", "client_tools": ["pick_color"]}}
    )
    tool = {"name": "pick_color", "description": "Ask the browser for a color", "parameters": {"type": "object"}}
    said = user("color please")
    events = await post(server, run_input("thr-agui-6", [said], tools=[tool]))
    outcome = finished(events).outcome
    assert outcome is not None and outcome.type == "success"
    (call_id,) = outcome.pending_tool_call_ids or []
    answer = {"id": uuid.uuid4().hex, "role": "tool", "toolCallId": call_id, "content": "teal"}
    events = await post(server, run_input("thr-agui-6", [said, answer], tools=[tool]))
    assert finished(events).result == "The browser chose teal."


async def test_a_tool_message_for_a_call_nobody_made_is_refused_and_no_browser_call_is_skipped(
    serve: ServerFactory, sandbox: Path
) -> None:
    """A resume whose tool message names an unknown call (a typo'd id) is refused and both browser calls still wait;
    the server-side result the client echoes back beside its answers is history, and the right answers finish."""
    model = tool_model(
        lambda said: [("list_files", {}), ("pick_color", {}), ("pick_size", {})] if said == "look" else NOT_ASKED,
        read="{results}",
    )
    files = {"model": "demo", "tools": ["files_tools:list_files"], "client_tools": ["pick_color", "pick_size"]}
    server = await serve(models={"demo": model}, agents={"files": files})
    tools = [
        {"name": name, "description": name, "parameters": {"type": "object"}} for name in ("pick_color", "pick_size")
    ]
    said = user("look")
    events = await post(server, run_input("thr-agui-typo", [said], tools=tools))
    outcome = finished(events).outcome
    assert outcome is not None and outcome.type == "success"
    color, size = outcome.pending_tool_call_ids or []
    echoed = [
        {"id": uuid.uuid4().hex, "role": "tool", "toolCallId": e.tool_call_id, "content": e.content}
        for e in events
        if e.type == "TOOL_CALL_RESULT"
    ]
    assert len(echoed) == 1, "list_files ran on the server and its result was streamed"

    def answer(call_id: str, content: str) -> dict[str, Any]:
        return {"id": uuid.uuid4().hex, "role": "tool", "toolCallId": call_id, "content": content}

    typo = [said, *echoed, answer(color, "teal"), answer("call_typo", "XL")]
    refused = await post(server, run_input("thr-agui-typo", typo, tools=tools))
    assert refused[-1].type == "RUN_ERROR" and "'call_typo'" in refused[-1].message
    right = [said, *echoed, answer(color, "teal"), answer(size, "XL")]
    done = finished(await post(server, run_input("thr-agui-typo", right, tools=tools)))
    assert done.result is not None and "pick_color: teal" in done.result and "pick_size: XL" in done.result


def talks_then_deletes() -> FunctionModel:
    """A model that says what it is about to do in the same response as its call, as LLMs often do."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if any(isinstance(part, ToolReturnPart) for part in last.parts):
            return ModelResponse(parts=[TextPart("Done.")])
        return ModelResponse(
            parts=[TextPart("Deleting notes.txt."), ToolCallPart("delete_file", {"name": "notes.txt"})]
        )

    return FunctionModel(respond)


async def test_each_message_a_run_streams_across_its_pauses_has_an_id_of_its_own(
    serve: ServerFactory, sandbox: Path
) -> None:
    """The text before the pause and the text after the resume are two messages: a client merges a message
    streamed under an id it holds into that message, so the second must not reuse the first's id."""
    server = await serve(models={"demo": talks_then_deletes()})
    first = await post(server, run_input("thr-agui-ids", [user("delete notes")]))
    pending = interrupt_of(first)
    approve = {"interruptId": pending.id, "status": "resolved", "payload": {"status": "approved"}}
    second = await post(server, resume("thr-agui-ids", [approve]))
    texts = {e.message_id: e.delta for e in [*first, *second] if e.type == "TEXT_MESSAGE_CONTENT"}
    assert sorted(texts.values()) == ["Deleting notes.txt.", "Done."]
    results = [e.message_id for e in second if e.type == "TOOL_CALL_RESULT"]
    assert len(results) == 1 and results[0] not in texts


@dataclass(frozen=True)
class BadBody:
    id: str
    body: bytes
    detail: str
    errors: list[dict[str, Any]]


BAD_BODIES = [
    BadBody("empty", b"", "body: Field required", [{"loc": ["body"], "msg": "Field required"}]),
    BadBody(
        "not-an-object",
        b"[1, 2]",
        "body: Input should be an object",
        [{"loc": ["body"], "msg": "Input should be an object"}],
    ),
    BadBody(
        "fields-missing-or-mistyped",
        b'{"threadId": 1, "messages": []}',
        "body.threadId: Input should be a valid string; body.runId: Field required",
        [
            {"loc": ["body", "threadId"], "msg": "Input should be a valid string"},
            {"loc": ["body", "runId"], "msg": "Field required"},
        ],
    ),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in BAD_BODIES])
async def test_a_body_that_is_no_run_input_is_a_problem_naming_what_is_wrong(
    serve: ServerFactory, case: BadBody
) -> None:
    """A body that is no RunAgentInput gets a 422 problem document, as REST answers a bad body, naming each field."""
    server = await serve()
    async with server.client() as client:
        response = await client.post("/ag-ui/files", content=case.body, headers={"content-type": "application/json"})
    assert (response.status_code, response.headers["content-type"]) == (422, "application/problem+json")
    assert response.json() == {
        "type": "https://sayso.dev/problems/invalid-request",
        "title": "Invalid request",
        "status": 422,
        "detail": case.detail,
        "errors": case.errors,
    }
