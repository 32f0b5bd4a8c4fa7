"""The one module that maps between sayso's runs, requests and decisions and AG-UI's events and inputs.

Outbound: a run's new messages become text and tool-call events (a decided call's result
carries its approval record), and a pause becomes `RUN_FINISHED` with one `Interrupt` per
open approval, question or MCP elicitation (whose `responseSchema` holds the server's requested
schema), or `success` with `pendingToolCallIds` for client tools.
Inbound: `RunAgentInput.resume` entries become decisions as in kaboo's answer table, and
tool messages answer client tools. Errors: `error_event` is the one place sayso's errors
become `RUN_ERROR`s. Everything here is pure; ids are looked up in what the server stored,
never taken from pause state the client sends back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    ResumeEntry,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from ag_ui.core import TextPart as UserTextPart
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart

from ..._core.decisions import (
    Accept,
    Answer,
    Approve,
    Cancel,
    ClientError,
    ClientResult,
    Decision,
    Decline,
    Reject,
    Skip,
)
from ..._core.requests import (
    SCOPES_BY_WIDTH,
    ApprovalRequest,
    ClientToolRequest,
    ElicitationRequest,
    QuestionRequest,
    Request,
    shown_args,
)
from ...exceptions import DecisionRefused, InvalidInput, NotAllowed, NotFound, RunConflict, SaysoError

REASONS = {"approval": "sayso:approval", "question": "sayso:question", "elicitation": "sayso:elicitation"}

Interrupted = ApprovalRequest | QuestionRequest | ElicitationRequest
"""The requests a person answers through an AG-UI interrupt (client tools are answered by tool messages)."""
"""The `Interrupt.reason` of each request kind AG-UI interrupts carry."""

RESUME = "resume"
"""The `field` of an `InvalidInput` for a resume that does not fit the pause it answers."""

THREAD = "threadId"
"""The `field` of an `InvalidInput` for a resume on a thread where nothing waits."""

_INPUT_CODES = {RESUME: "invalid_resume", THREAD: "not_paused"}
"""The `RUN_ERROR.code` of each refused input field; any other field is `invalid_input`."""


# --- errors


def error_event(exc: Exception) -> RunErrorEvent:
    """The `RUN_ERROR` for one of ours: the one place sayso's errors become AG-UI errors.

    Raises:
        Exception: `exc` itself when it is not sayso's (a bug, not a refusal).
    """
    if isinstance(exc, InvalidInput):
        code = _INPUT_CODES.get(exc.field or "", "invalid_input")
        if code == "invalid_resume":
            return RunErrorEvent(message=f"resume refused: {exc.problem}; the pause stays open", code=code)
        return RunErrorEvent(message=exc.problem, code=code)
    if isinstance(exc, DecisionRefused):
        return RunErrorEvent(message=f"decision refused: {exc}; the pause stays open", code="invalid_resume")
    if isinstance(exc, NotAllowed):
        return RunErrorEvent(message=str(exc), code="forbidden")
    if isinstance(exc, NotFound):
        return RunErrorEvent(message=str(exc), code="not_found")
    if isinstance(exc, RunConflict):
        return RunErrorEvent(message=str(exc), code="conflict")
    if isinstance(exc, SaysoError):
        return RunErrorEvent(message=str(exc), code="error")
    raise exc


def refused(problem: str) -> InvalidInput:
    """The error for a resume that does not fit the pause it answers; nothing was recorded."""
    return InvalidInput(problem, field=RESUME)


# --- outbound


def message_events(messages: Sequence[ModelMessage], *, id_prefix: str) -> Iterator[BaseEvent]:
    """Text, tool-call and tool-result events for messages a run added, in order."""
    for index, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            for part_index, part in enumerate(message.parts):
                if isinstance(part, TextPart) and part.content:
                    message_id = f"{id_prefix}-{index}-{part_index}"
                    yield TextMessageStartEvent(message_id=message_id, role="assistant")
                    yield TextMessageContentEvent(message_id=message_id, delta=part.content)
                    yield TextMessageEndEvent(message_id=message_id)
                elif isinstance(part, ToolCallPart):
                    yield ToolCallStartEvent(tool_call_id=part.tool_call_id, tool_call_name=part.tool_name)
                    yield ToolCallArgsEvent(tool_call_id=part.tool_call_id, delta=json.dumps(part.args_as_dict()))
                    yield ToolCallEndEvent(tool_call_id=part.tool_call_id)
        elif isinstance(message, ModelRequest):
            for part_index, returned in enumerate(message.parts):
                if isinstance(returned, ToolReturnPart):
                    content = returned.content if isinstance(returned.content, str) else returned.model_response_str()
                    meta = returned.metadata
                    approval = meta.get("approval") if isinstance(meta, dict) else None
                    yield ToolCallResultEvent(
                        message_id=f"{id_prefix}-{index}-{part_index}",
                        tool_call_id=returned.tool_call_id,
                        content=content,
                        role="tool",
                        metadata={"approval": approval} if approval is not None else None,
                    )


def interrupt(request: Interrupted) -> Interrupt:
    """The AG-UI interrupt for an open approval, question or elicitation (§6.4)."""
    metadata: dict[str, Any] = {
        "tool_name": request.tool_name,
        "tool_input": shown_args(request),
        "agent_path": request.agent_path,
        "run_id": request.run_id,
    }
    if request.expires_at is not None:
        # AG-UI's own `expiresAt` makes clients refuse the thread: the deadline travels in metadata.
        metadata["expiresAt"] = datetime.fromtimestamp(request.expires_at, UTC).isoformat()
    if isinstance(request, ApprovalRequest):
        metadata["subject"] = {"key": request.subject.key, "label": request.subject.label} if request.subject else None
        metadata["scopes"] = list(request.scopes)
        if request.service_request is not None:
            metadata["request"] = request.service_request
        if request.tool_info is not None:
            metadata["tool"] = asdict(request.tool_info)
        message = request.hint
        schema = approval_schema(request)
    elif isinstance(request, ElicitationRequest):
        metadata.update(
            mode=request.mode,
            server=request.server,
            requested_schema=request.requested_schema,
            url=request.url,
            elicitation_id=request.elicitation_id,
            durable=request.delivery != "live",
        )
        message = request.message
        schema = elicitation_schema(request)
    else:
        metadata["questions"] = [
            {"question": q.question, "choices": list(q.choices), "multiple": q.multiple} for q in request.questions
        ]
        message = "; ".join(q.question for q in request.questions)
        schema = question_schema(request)
    return Interrupt(
        id=request.request_id,
        reason=REASONS[request.kind],
        message=message,
        tool_call_id=request.tool_call_id,
        subagent_run_id=request.run_id if "/" in request.agent_path else None,
        response_schema=schema,
        metadata=metadata,
    )


def approval_schema(request: ApprovalRequest) -> dict[str, Any]:
    """The JSON schema of a resolved resume payload for an approval."""
    return {
        "type": "object",
        "properties": {
            "status": {"enum": ["approved", "cancelled"]},
            "scope": {"enum": list(request.scopes)},
            "tool_input": request.args_schema or {"type": "object"},
            "reason": {"type": "string"},
        },
        "required": ["status"],
    }


def question_schema(request: QuestionRequest) -> dict[str, Any]:
    """The JSON schema of a resolved resume payload for a question: one answer list per question."""
    count = len(request.questions)
    answer = {
        "type": "object",
        "properties": {"answer": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
        "required": ["answer"],
    }
    return {
        "type": "object",
        "properties": {"answers": {"type": "array", "items": answer, "minItems": count, "maxItems": count}},
        "required": ["answers"],
    }


def elicitation_schema(request: ElicitationRequest) -> dict[str, Any]:
    """The JSON schema of a resolved resume payload for an elicitation: the action and, for a form, its content.

    A page to visit is answered `{"action": "accept"}` once visited ("done").
    """
    properties: dict[str, Any] = {"action": {"enum": ["accept", "decline", "cancel"]}}
    if request.mode == "form":
        properties["content"] = request.requested_schema or {"type": "object"}
    return {"type": "object", "properties": properties, "required": ["action"]}


def finished_event(
    *, thread_id: str, run_id: str, requests: Sequence[Request], output: str | None, sayso_run_id: str
) -> RunFinishedEvent:
    """`RUN_FINISHED`: interrupted on open approvals and questions, or success (with pending client tool calls)."""
    shown = [r for r in requests if isinstance(r, Interrupted)]
    metadata = {"sayso_run_id": sayso_run_id}
    if shown:
        return RunFinishedEvent(
            thread_id=thread_id,
            run_id=run_id,
            outcome=RunFinishedInterruptOutcome(interrupts=[interrupt(r) for r in shown]),
            metadata=metadata,
        )
    pending = [r.tool_call_id for r in requests if isinstance(r, ClientToolRequest)]
    return RunFinishedEvent(
        thread_id=thread_id,
        run_id=run_id,
        result=output,
        outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=pending or None),
        metadata=metadata,
    )


# --- inbound


def decisions_from_resume(
    open_requests: Sequence[Request], entries: Sequence[ResumeEntry], tool_messages: Sequence[ToolMessage]
) -> dict[str, Decision]:
    """The decisions a resume takes, by request id, found by interrupt id and tool call id.

    Requests the resume leaves out are not here (the caller counts them as skipped).

    Raises:
        InvalidInput: an entry names no open request, names one twice, or does not fit it
            (`field` is `RESUME`).
    """
    by_id = {r.request_id: r for r in open_requests}
    by_call = {r.tool_call_id: r for r in open_requests if isinstance(r, ClientToolRequest)}
    decided: dict[str, Decision] = {}
    for entry in entries:
        request = by_id.get(entry.interrupt_id)
        if not isinstance(request, Interrupted):
            raise refused(f"interrupt {entry.interrupt_id!r} is not open on this thread")
        if request.request_id in decided:
            raise refused(f"interrupt {entry.interrupt_id!r} is answered twice")
        decided[request.request_id] = decision_from_entry(request, entry)
    for message in tool_messages:
        client = by_call.get(message.tool_call_id)
        if client is None:
            continue  # a tool message from earlier in the history the client replays
        if client.request_id in decided:
            raise refused(f"tool call {message.tool_call_id!r} is answered twice")
        decided[client.request_id] = _client_answer(message)
    return decided


def decision_from_entry(request: Interrupted, entry: ResumeEntry) -> Decision:
    """One resume entry as a decision, per kaboo's answer table; only `approved` runs a gated call."""
    if isinstance(request, ElicitationRequest):
        return _elicitation_answer(entry)
    if entry.status == "cancelled":
        return Skip(reason=_text((entry.payload or {}).get("reason") if isinstance(entry.payload, dict) else None))
    payload = entry.payload
    if not isinstance(payload, dict):
        raise refused(f"interrupt {entry.interrupt_id!r}: a resolved entry needs an object payload")
    if isinstance(request, QuestionRequest):
        return Answer(answers=_answers(entry.interrupt_id, payload.get("answers")))
    status = payload.get("status")
    if status == "approved":
        scope = payload.get("scope", "once")
        if scope not in SCOPES_BY_WIDTH:
            raise refused(f"interrupt {entry.interrupt_id!r}: scope must be once, thread or always")
        edited = payload.get("tool_input")
        if edited is not None and not isinstance(edited, dict):
            raise refused(f"interrupt {entry.interrupt_id!r}: tool_input must be an object")
        return Approve(scope=scope, edited_args=edited)
    if status == "cancelled":
        return Reject(reason=_text(payload.get("reason")))
    raise refused(f"interrupt {entry.interrupt_id!r}: payload status must be 'approved' or 'cancelled'")


def _elicitation_answer(entry: ResumeEntry) -> Decision:
    """A resume entry for an elicitation: `cancelled` cancels; resolved, `{action, content?}` says what to send."""
    if entry.status == "cancelled":
        return Cancel()
    payload = entry.payload
    action = payload.get("action") if isinstance(payload, dict) else None
    if action == "decline":
        return Decline()
    if action == "cancel":
        return Cancel()
    if action != "accept":
        raise refused(f"interrupt {entry.interrupt_id!r}: payload action must be 'accept', 'decline' or 'cancel'")
    assert isinstance(payload, dict)
    content = payload.get("content")
    if content is not None and not isinstance(content, dict):
        raise refused(f"interrupt {entry.interrupt_id!r}: content must be an object of the form's fields")
    return Accept(content=content)


def _answers(interrupt_id: str, raw: Any) -> tuple[tuple[str, ...], ...]:
    if not isinstance(raw, list):
        raise refused(f"interrupt {interrupt_id!r}: answers must be a list, one {{answer: [...]}} per question")
    answers = []
    for item in raw:
        values = item.get("answer") if isinstance(item, dict) else item
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise refused(f"interrupt {interrupt_id!r}: each answer is a list of strings")
        answers.append(tuple(values))
    return tuple(answers)


def _client_answer(message: ToolMessage) -> Decision:
    if message.error:
        return ClientError(message=message.error)
    content = message.content
    if isinstance(content, str):
        try:
            return ClientResult(value=json.loads(content))
        except ValueError:
            return ClientResult(value=content)
    return ClientResult(value=[part.model_dump(mode="json", by_alias=True, exclude_none=True) for part in content])


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def user_text(messages: Sequence[Any]) -> str | None:
    """The text of the last message when it is the person's (a new message), else `None`."""
    last = messages[-1] if messages else None
    if not isinstance(last, UserMessage):
        return None
    if isinstance(last.content, str):
        return last.content
    return "\n".join(part.text for part in last.content if isinstance(part, UserTextPart))


def tool_messages(messages: Sequence[Any]) -> list[ToolMessage]:
    """The tool messages at the end of the history: answers to client tool calls."""
    out: list[ToolMessage] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        out.append(message)
    return list(reversed(out))
