"""AG-UI outbound and errors: the mapping from sayso's runs, requests and decisions and AG-UI's events and inputs.

Outbound: a run's new messages become text and tool-call events (a decided call's result
carries its approval record), less what the client's history holds (`Held`); a delegate's
browser tool call is streamed too, tagged with the delegate's run (`subagentRunId`); and a
pause becomes `RUN_FINISHED` with one `Interrupt` per open approval, question, MCP elicitation
(whose `responseSchema` holds the server's requested schema) or workflow input (its
`responseSchema` is the input's own schema, its payload in the metadata), the client tool calls
it also waits on in `pendingToolCallIds` (on the success outcome when there is no interrupt, in
the event's metadata beside them). A resolved input's resume payload is the answer itself,
checked against that schema by the runtime.
The inbound half (resume entries, tool messages, context and host grants as decisions and
inputs) is in `_inbound`. Errors: `error_event` is the one place sayso's errors become
`RUN_ERROR`s. Everything here is pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
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
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from typing_extensions import TypedDict

from ..._core.requests import (
    ApprovalRequest,
    ClientToolRequest,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    Request,
    RuleTerms,
    is_remote_call,
    shown_args,
)
from ..._core.votes import Vote, shown_standing_args
from ..._runtime import routing_json
from ...exceptions import (
    CallEnded,
    DecisionRefused,
    InvalidInput,
    NotAllowed,
    NotFound,
    RunConflict,
    SaysoError,
    TooLarge,
)

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


class AnswerTooLate(Exception):
    """A refused answer to a pause that no longer waits: another answer (or a new message) moved the run on first.

    `error` is the refusal the runtime gave; its event must not say the pause stays open.
    """

    def __init__(self, error: InvalidInput | DecisionRefused) -> None:
        self.error = error
        super().__init__(str(error))


_STILL_OPEN = "the pause stays open"
_MOVED_ON = "the pause it answers no longer waits: the run went on without this answer (read the thread's latest state)"


def error_event(exc: Exception) -> RunErrorEvent:
    """The `RUN_ERROR` for one of ours: the one place sayso's errors become AG-UI errors.

    A refused resume says the pause stays open unless it came too late for it (`AnswerTooLate`).

    Raises:
        Exception: `exc` itself when it is not sayso's (a bug, not a refusal).
    """
    pause = _STILL_OPEN
    if isinstance(exc, AnswerTooLate):
        exc, pause = exc.error, _MOVED_ON
    if isinstance(exc, TooLarge):
        return RunErrorEvent(message=str(exc), code="too_large")
    if isinstance(exc, InvalidInput):
        code = _INPUT_CODES.get(exc.field or "", "invalid_input")
        if code == "invalid_resume":
            return RunErrorEvent(message=f"resume refused: {exc.problem}; {pause}", code=code)
        return RunErrorEvent(message=exc.problem, code=code)
    if isinstance(exc, CallEnded):
        return RunErrorEvent(message=f"decision refused: {exc}", code="conflict")
    if isinstance(exc, DecisionRefused):
        return RunErrorEvent(message=f"decision refused: {exc}; {pause}", code="invalid_resume")
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


def call_ids(messages: Sequence[ModelMessage]) -> set[str]:
    """The tool call ids in `messages`: what `message_events` streams, and a client may send back.

    A result counts as well as a call: a workflow's input is no model call, so its answer is streamed
    as a result alone, which a client keeps as a tool message and sends back with the next resume.
    """
    return {
        part.tool_call_id
        for message in messages
        for part in message.parts
        if isinstance(part, ToolCallPart | ToolReturnPart)
    }


@dataclass(frozen=True)
class Held:
    """What a client's history holds of what it was streamed: message ids, tool call ids, and the calls answered.

    A client merges a message streamed under an id it knows into the one it has (and appends a
    call's arguments to a call it knows), so what it holds must not be streamed to it again.
    """

    messages: frozenset[str] = frozenset()
    calls: frozenset[str] = frozenset()
    results: frozenset[str] = frozenset()


NOTHING_HELD = Held()
"""A client that holds nothing of a run: everything the run added is streamed."""


def held(history: Sequence[Any]) -> Held:
    """What `history` (a `RunAgentInput`'s messages) holds: every message's id, call ids, and answered call ids."""
    calls = {call.id for message in history for call in getattr(message, "tool_calls", None) or ()}
    results = {answered for message in history if isinstance(answered := getattr(message, "tool_call_id", None), str)}
    return Held(frozenset(m.id for m in history), frozenset(calls), frozenset(results))


def message_events(
    messages: Sequence[ModelMessage], *, id_prefix: str, start: int = 0, held: Held = NOTHING_HELD
) -> Iterator[BaseEvent]:
    """Text, tool-call and tool-result events for messages a run added, in order, less what the client `held`.

    `messages` are the run's from its `start`-th on (what a resumed run added): each message id
    names the run (`id_prefix`) and the message's place among all of the run's, so no two of a
    run's segments share one (a client merges a message streamed under a known id into it), and
    the same message streamed again has the same id.
    """
    for index, message in enumerate(messages, start=start):
        if isinstance(message, ModelResponse):
            for part_index, part in enumerate(message.parts):
                if isinstance(part, TextPart) and part.content:
                    message_id = f"{id_prefix}-{index}-{part_index}"
                    if message_id in held.messages:
                        continue
                    yield TextMessageStartEvent(message_id=message_id, role="assistant")
                    yield TextMessageContentEvent(message_id=message_id, delta=part.content)
                    yield TextMessageEndEvent(message_id=message_id)
                elif isinstance(part, ToolCallPart) and part.tool_call_id not in held.calls:
                    yield ToolCallStartEvent(tool_call_id=part.tool_call_id, tool_call_name=part.tool_name)
                    yield ToolCallArgsEvent(tool_call_id=part.tool_call_id, delta=json.dumps(part.args_as_dict()))
                    yield ToolCallEndEvent(tool_call_id=part.tool_call_id)
        elif isinstance(message, ModelRequest):
            for part_index, returned in enumerate(message.parts):
                message_id = f"{id_prefix}-{index}-{part_index}"
                if not isinstance(returned, ToolReturnPart) or message_id in held.messages:
                    continue
                if returned.tool_call_id in held.results:
                    continue  # the client's own answer to its browser call, or a result it holds under another id
                content = returned.content if isinstance(returned.content, str) else returned.model_response_str()
                meta = returned.metadata
                approval = meta.get("approval") if isinstance(meta, dict) else None
                yield ToolCallResultEvent(
                    message_id=message_id,
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


def interrupt(request: Shown, *, kaboo: bool = False, votes: Sequence[Vote] = ()) -> Interrupt:
    """The AG-UI interrupt for an open approval, question, elicitation or workflow input (docs/guides/ag-ui.md).

    In sayso's words, or kaboo's (`kaboo`). A routed request says who may decide it and, when it
    needs several approvals, where the vote stands after `votes` (docs/guides/routing.md).
    """
    metadata: dict[str, Any] = {
        "tool_name": request.tool_name,
        # After an edited vote, the arguments the next approval runs with (docs/guides/routing.md#quorum).
        "tool_input": shown_standing_args(request, votes),
        "agent_path": request.agent_path,
        "run_id": request.run_id,
    }
    if (subagent := _subagent_run(request)) is not None:
        metadata["subagentRunId"] = subagent
    if request.expires_at is not None:
        # AG-UI's own `expiresAt` makes clients refuse the thread: the deadline travels in metadata.
        metadata["expiresAt"] = datetime.fromtimestamp(request.expires_at, UTC).isoformat()
    if isinstance(request, RuleTerms) and request.why is not None:
        metadata["why"], metadata["rule"] = request.why, request.rule
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
    if request.routing is not None:
        routed = routing_json(request, votes)
        metadata.update(routed)
        if "quorum" in routed:
            message = f"{message} · approvals: {routed['quorum']['text']}"
    return Interrupt(
        id=request.request_id,
        reason=KABOO_REASONS.get(request.kind, REASONS[request.kind]) if kaboo else REASONS[request.kind],
        message=message,
        tool_call_id=request.tool_call_id,
        subagent_run_id=_subagent_run(request),
        response_schema=schema,
        metadata=metadata,
    )


def approval_schema(request: ApprovalRequest) -> JsonSchemaValue:
    """The JSON schema of a resolved resume payload for an approval."""
    return {
        "type": "object",
        "properties": {
            "status": {"enum": ["approved", "cancelled"]},
            "scope": {"enum": list(request.scopes)},
            # Edited arguments, where the call takes them (not a remote agent's: kagent's HITL carries none).
            **({} if is_remote_call(request) else {"tool_input": request.args_schema or {"type": "object"}}),
            "reason": {"type": "string"},
            # The tool asked for feedback with the approval: it goes here, checked against its schema.
            **({"payload": request.response_schema} if request.response_schema is not None else {}),
        },
        "required": ["status"],
    }


def question_schema(request: QuestionRequest) -> JsonSchemaValue:
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


def shown_call_id(request: Request, *, run_id: str) -> str:
    """The id a client answers a call it runs by: the model's own in the run it talks to, the request's in a delegate.

    A call of the run the client talks to is in that run's messages under the model's id. Models
    reuse plain call ids (`call_0`) across runs, so two delegates' calls may share one: a client
    could answer only one of them, and the other would be skipped.
    """
    return request.tool_call_id if request.run_id == run_id else request.request_id


def pending_call_events(
    requests: Sequence[Request], *, run_id: str, kaboo: bool = False, held: Held = NOTHING_HELD
) -> Iterator[BaseEvent]:
    """The tool calls a delegate left for the client, streamed as the run's own calls are (docs/guides/ag-ui.md).

    The calls of the run the client talks to are in its messages already; a delegate's are not,
    so they are sent here, tagged with the delegate's run (`subagentRunId`) for the chat to label.
    A call the client `held` already is not sent again.
    """
    for request in requests:
        if request.run_id == run_id or not _shown_as_call(request, kaboo=kaboo):
            continue
        call = shown_call_id(request, run_id=run_id)
        if call in held.calls:
            continue
        run = request.run_id
        meta = {"subagentRunId": run, "agent_path": request.agent_path}
        name = "ask_user" if isinstance(request, QuestionRequest) else request.tool_name
        args: Mapping[str, object] = _ask_args(request) if isinstance(request, QuestionRequest) else shown_args(request)
        yield ToolCallStartEvent(tool_call_id=call, tool_call_name=name, metadata=meta, subagent_run_id=run)
        yield ToolCallArgsEvent(tool_call_id=call, delta=json.dumps(args), metadata=meta, subagent_run_id=run)
        yield ToolCallEndEvent(tool_call_id=call, metadata=meta, subagent_run_id=run)


class _AskedQuestion(TypedDict):
    question: str
    choices: list[str]
    multiple: bool


class _AskUserArgs(TypedDict):
    """The arguments of the `ask_user` call a question is shown as, in kaboo's dialect."""

    questions: list[_AskedQuestion]


def _ask_args(request: QuestionRequest) -> _AskUserArgs:
    return {
        "questions": [
            {"question": q.question, "choices": list(q.choices), "multiple": q.multiple} for q in request.questions
        ]
    }


def elicitation_schema(request: ElicitationRequest) -> JsonSchemaValue:
    """The JSON schema of a resolved resume payload for an elicitation: the action and, for a form, its content.

    A page to visit is answered `{"action": "accept"}` once visited ("done").
    """
    properties: JsonSchemaValue = {"action": {"enum": ["accept", "decline", "cancel"]}}
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
    votes: Mapping[str, Sequence[Vote]] | None = None,
) -> RunFinishedEvent:
    """`RUN_FINISHED`: interrupted on open approvals (questions, elicitations, inputs), pending client calls beside.

    A pause that mixes them lists both: the interrupts in the outcome, the calls in
    `metadata.pendingToolCallIds` (AG-UI's success outcome, which names them, cannot carry interrupts).
    """
    shown = [r for r in requests if isinstance(r, Shown) and not _shown_as_call(r, kaboo=kaboo)]
    pending = [shown_call_id(r, run_id=sayso_run_id) for r in requests if _shown_as_call(r, kaboo=kaboo)]
    metadata: dict[str, Any] = {"sayso_run_id": sayso_run_id}
    if shown:
        if pending:
            metadata["pendingToolCallIds"] = pending
        return RunFinishedEvent(
            thread_id=thread_id,
            run_id=run_id,
            outcome=RunFinishedInterruptOutcome(
                interrupts=[interrupt(r, kaboo=kaboo, votes=(votes or {}).get(r.request_id, ())) for r in shown]
            ),
            metadata=metadata,
        )
    return RunFinishedEvent(
        thread_id=thread_id,
        run_id=run_id,
        result=output,
        outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=pending or None),
        metadata=metadata,
    )
