"""The one module that maps between sayso's runs, requests and decisions and AG-UI's events and inputs.

Outbound: a run's new messages become text and tool-call events (a decided call's result
carries its approval record); a delegate's browser tool call is streamed too, tagged with the
delegate's run (`subagentRunId`); and a pause becomes `RUN_FINISHED` with one `Interrupt` per
open approval, question, MCP elicitation (whose `responseSchema` holds the server's requested
schema) or workflow input (its `responseSchema` is the input's own schema, its payload in the
metadata), the client tool calls it also waits on in `pendingToolCallIds`
(on the success outcome when there is no interrupt, in the event's metadata beside them). A
resolved input's resume payload is the answer itself, checked against that schema by the runtime.
Inbound: `RunAgentInput.resume` entries become decisions as in kaboo's answer table, tool
messages answer client tools, `context` goes with the tools it names, and kaboo's host-kept
grants come from `forwardedProps.kaboo_grants`. In kaboo's dialect (`ag_ui.kaboo_compat`) the
reasons are kaboo's and a question is kaboo's `ask_user` browser tool. Errors: `error_event`
is the one place sayso's errors become `RUN_ERROR`s. Everything here is pure; ids are looked
up in what the server stored, never taken from pause state the client sends back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Context,
    Interrupt,
    ResumeEntry,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    Tool,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from ag_ui.core import TextPart as UserTextPart
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart

from ..._core.access import Principal
from ..._core.decisions import (
    Accept,
    Answer,
    Approve,
    Cancel,
    ClientError,
    ClientResult,
    Decision,
    Decline,
    Provide,
    Reject,
    Skip,
)
from ..._core.grants import Grant
from ..._core.requests import (
    SCOPES_BY_WIDTH,
    ApprovalRequest,
    ClientTool,
    ClientToolRequest,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    Request,
    shown_args,
)
from ...exceptions import DecisionRefused, InvalidInput, NotAllowed, NotFound, RunConflict, SaysoError, TooLarge

REASONS = {
    "approval": "sayso:approval",
    "question": "sayso:question",
    "input": "sayso:input",
    "elicitation": "sayso:elicitation",
}
"""The `Interrupt.reason` of each request kind AG-UI interrupts carry."""

KABOO_REASONS = {"approval": "kaboo:approval"}
"""kaboo's reasons; a question is not an interrupt there but kaboo's `ask_user` browser tool."""

KABOO_GRANTS = "kaboo_grants"
"""The `forwardedProps` key a kaboo host sends its remembered approvals under."""

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
    if isinstance(exc, TooLarge):
        return RunErrorEvent(message=str(exc), code="too_large")
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


def _subagent_run(request: Request) -> str | None:
    """The delegate's run a request comes from, or `None` for the agent the client talks to."""
    return request.run_id if "/" in request.agent_path else None


Shown = ApprovalRequest | QuestionRequest | ElicitationRequest | InputRequest
"""The requests an AG-UI client answers through interrupts."""


def interrupt(request: Shown, *, kaboo: bool = False) -> Interrupt:
    """The AG-UI interrupt for an open approval, question, elicitation or workflow input (§6.4).

    In sayso's words, or kaboo's (`kaboo`).
    """
    metadata: dict[str, Any] = {
        "tool_name": request.tool_name,
        "tool_input": shown_args(request),
        "agent_path": request.agent_path,
        "run_id": request.run_id,
    }
    if (subagent := _subagent_run(request)) is not None:
        metadata["subagentRunId"] = subagent
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
        if request.payload is not None:
            metadata["payload"] = request.payload
    elif isinstance(request, InputRequest):
        metadata["node"] = request.node
        metadata["payload"] = request.payload
        message = request.message
        schema = request.response_schema
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
        reason=KABOO_REASONS.get(request.kind, REASONS[request.kind]) if kaboo else REASONS[request.kind],
        message=message,
        tool_call_id=request.tool_call_id,
        subagent_run_id=_subagent_run(request),
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
            # The tool asked for feedback with the approval: it goes here, checked against its schema.
            **({"payload": request.response_schema} if request.response_schema is not None else {}),
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


def _shown_as_call(request: Request, *, kaboo: bool) -> bool:
    """Whether the client answers a request by running a tool: its own tools, and in kaboo's dialect `ask_user`."""
    return isinstance(request, ClientToolRequest) or (kaboo and isinstance(request, QuestionRequest))


def pending_call_events(requests: Sequence[Request], *, run_id: str, kaboo: bool = False) -> Iterator[BaseEvent]:
    """The tool calls a delegate left for the client, streamed as the run's own calls are (§6.4).

    The calls of the run the client talks to are in its messages already; a delegate's are not,
    so they are sent here, tagged with the delegate's run (`subagentRunId`) for the chat to label.
    """
    for request in requests:
        if request.run_id == run_id or not _shown_as_call(request, kaboo=kaboo):
            continue
        run = request.run_id
        meta = {"subagentRunId": run, "agent_path": request.agent_path}
        name = "ask_user" if isinstance(request, QuestionRequest) else request.tool_name
        args = _ask_args(request) if isinstance(request, QuestionRequest) else shown_args(request)
        call = request.tool_call_id
        yield ToolCallStartEvent(tool_call_id=call, tool_call_name=name, metadata=meta, subagent_run_id=run)
        yield ToolCallArgsEvent(tool_call_id=call, delta=json.dumps(args), metadata=meta, subagent_run_id=run)
        yield ToolCallEndEvent(tool_call_id=call, metadata=meta, subagent_run_id=run)


def _ask_args(request: QuestionRequest) -> dict[str, Any]:
    return {
        "questions": [
            {"question": q.question, "choices": list(q.choices), "multiple": q.multiple} for q in request.questions
        ]
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
    *,
    thread_id: str,
    run_id: str,
    requests: Sequence[Request],
    output: str | None,
    sayso_run_id: str,
    kaboo: bool = False,
) -> RunFinishedEvent:
    """`RUN_FINISHED`: interrupted on open approvals (questions, elicitations, inputs), pending client calls beside.

    A pause that mixes them lists both: the interrupts in the outcome, the calls in
    `metadata.pendingToolCallIds` (AG-UI's success outcome, which names them, cannot carry interrupts).
    """
    shown = [r for r in requests if isinstance(r, Shown) and not _shown_as_call(r, kaboo=kaboo)]
    pending = [r.tool_call_id for r in requests if _shown_as_call(r, kaboo=kaboo)]
    metadata: dict[str, Any] = {"sayso_run_id": sayso_run_id}
    if shown:
        if pending:
            metadata["pendingToolCallIds"] = pending
        return RunFinishedEvent(
            thread_id=thread_id,
            run_id=run_id,
            outcome=RunFinishedInterruptOutcome(interrupts=[interrupt(r, kaboo=kaboo) for r in shown]),
            metadata=metadata,
        )
    return RunFinishedEvent(
        thread_id=thread_id,
        run_id=run_id,
        result=output,
        outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=pending or None),
        metadata=metadata,
    )


# --- inbound


def decisions_from_resume(
    open_requests: Sequence[Request],
    entries: Sequence[ResumeEntry],
    tool_messages: Sequence[ToolMessage],
    *,
    kaboo: bool = False,
) -> dict[str, Decision]:
    """The decisions a resume takes, by request id, found by interrupt id and tool call id.

    Requests the resume leaves out are not here (the caller counts them as skipped).

    Raises:
        InvalidInput: an entry names no open request, names one twice, or does not fit it
            (`field` is `RESUME`).
    """
    by_id = {r.request_id: r for r in open_requests if not _shown_as_call(r, kaboo=kaboo)}
    by_call = {r.tool_call_id: r for r in open_requests if _shown_as_call(r, kaboo=kaboo)}
    decided: dict[str, Decision] = {}
    for entry in entries:
        request = by_id.get(entry.interrupt_id)
        if not isinstance(request, Shown):
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
        decided[client.request_id] = (
            _ask_user_answer(client, message) if isinstance(client, QuestionRequest) else _client_answer(message)
        )
    return decided


def decision_from_entry(request: Shown, entry: ResumeEntry) -> Decision:
    """One resume entry as a decision, per kaboo's answer table; only `approved` runs a gated call.

    A resolved workflow input's payload is the answer (checked against its schema when decided).
    """
    if isinstance(request, ElicitationRequest):
        return _elicitation_answer(entry)
    if entry.status == "cancelled":
        return Skip(reason=_text((entry.payload or {}).get("reason") if isinstance(entry.payload, dict) else None))
    if isinstance(request, InputRequest):
        return Provide(value=entry.payload)
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
        return Approve(scope=scope, edited_args=edited, payload=payload.get("payload"))
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


def _ask_user_answer(request: QuestionRequest, message: ToolMessage) -> Decision:
    """The answers in the result of kaboo's `ask_user` browser tool.

    Read: `[{answer: [...]}]`, `[{question, answer}]`, `{answers: [...]}` or, for one question,
    plain text; an error or a "Skipped: ..." text skips the question.
    """
    if message.error:
        return Skip(reason=message.error)
    value = _client_answer(message)
    raw = value.value if isinstance(value, ClientResult) else None
    if isinstance(raw, str) and raw.startswith("Skipped:"):
        return Skip(reason=raw.removeprefix("Skipped:").strip() or None)
    if isinstance(raw, dict) and "answers" in raw:
        raw = raw["answers"]
    if isinstance(raw, str) and len(request.questions) == 1:
        raw = [[raw]]
    return Answer(answers=_answers(message.tool_call_id, raw))


def client_tools(tools: Sequence[Tool], context: Sequence[Context]) -> list[ClientTool]:
    """The client's tools, each with the context entries that name it; it reaches only the agents allowed it.

    An entry names a tool when its `description` is the tool's name, or starts with it and a colon.
    Context that names no declared tool is not passed on: sayso cannot tell which agent may read it.
    """
    shared = {t.name: [c.value for c in context if _names(c.description, t.name)] for t in tools}
    return [
        ClientTool(
            name=t.name,
            description=t.description,
            parameters=t.parameters or {"type": "object"},
            context="\n".join(shared[t.name]) or None,
        )
        for t in tools
    ]


def _names(description: str, tool: str) -> bool:
    text = description.strip()
    return text == tool or text.startswith(f"{tool}:")


def host_grants(forwarded_props: Any, *, principal: Principal, agent: str, thread_id: str) -> list[Grant] | None:
    """The remembered approvals a kaboo host sends; `None` when it sends none, meaning it remembers nothing.

    The host sends them as `forwardedProps.kaboo_grants: [{tool, subject, scope}]` with every run;
    they are the caller's own, for the agent the run talks to (`agent`) and no other.

    Raises:
        InvalidInput: a grant that is not `{tool, subject, scope}` with scope thread or always: a permission
            that cannot be read is refused, never widened.
    """
    raw = forwarded_props.get(KABOO_GRANTS) if isinstance(forwarded_props, dict) else None
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise InvalidInput(
            "forwardedProps.kaboo_grants must be a list of {tool, subject, scope}", field="forwardedProps"
        )
    grants: list[Grant] = []
    for index, entry in enumerate(raw):
        tool = entry.get("tool") if isinstance(entry, dict) else None
        subject = entry.get("subject") if isinstance(entry, dict) else None
        scope = entry.get("scope") if isinstance(entry, dict) else None
        key = subject.get("key") if isinstance(subject, dict) else subject
        label = subject.get("label") if isinstance(subject, dict) else None
        if not isinstance(tool, str) or not isinstance(key, str) or scope not in ("thread", "always"):
            raise InvalidInput(
                f"forwardedProps.kaboo_grants[{index}] must be {{tool, subject, scope: thread | always}}",
                field="forwardedProps",
            )
        grants.append(
            Grant(
                grant_id=f"kaboo:{index}",
                tool=tool,
                subject_key=key,
                subject_label=label if isinstance(label, str) else key,
                scope=scope,
                principal=principal.name,
                agent=agent,
                thread_id=thread_id if scope == "thread" else None,
                created_at=0.0,
            )
        )
    return grants


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
