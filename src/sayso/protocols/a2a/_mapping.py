"""The one module that maps between sayso's requests and decisions and kagent's HITL wire format.

It knows both sides: sayso's `Request`/`Decision` dataclasses and the JSON objects of the
`https://kagent.dev/extensions/hitl/v1` extension (and of kagent 0.x's DataParts), and the
A2A protobuf messages that carry them, and how sayso's errors read as JSON-RPC errors
(`to_a2a_error`). Everything here is pure: the handler does the I/O.

One A2A pause shows one kind of request (see `PauseView`): the open approvals first, then
each question on its own, then each MCP elicitation on its own, and one agent at a time; the run
stays paused in sayso until every open request is decided, so the same task pauses again for
what is left.

kagent's extension has no elicitation of its own, so an elicitation is shown to kagent clients as
an `ask_user_request` they already answer (a first question "accept, decline or cancel", then one
question per form field, or "done" for a page to visit), with the structured request under our
own key; a client that reads it may answer with an `elicitation_response` {id, action, content}.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, TypeAlias

from a2a.types import Message, Part, Role
from a2a.utils.errors import A2AError, InvalidParamsError, InvalidRequestError, TaskNotFoundError
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct, Value

from ..._core.decisions import Accept, Answer, Approve, Cancel, Decision, Decline, Reject, Skip
from ..._core.requests import (
    ApprovalRequest,
    ElicitationRequest,
    QuestionRequest,
    Request,
    default_hint,
    shown_args,
)
from ...exceptions import (
    ConfigError,
    DecisionRefused,
    InvalidInput,
    NotAllowed,
    NotFound,
    RunConflict,
    RunNotFound,
)

HITL_URI = "https://kagent.dev/extensions/hitl/v1"
"""kagent's human-in-the-loop extension, v1."""

SAYSO_KEY = "https://sayso.dev/extensions/requests/v1"
"""Our own metadata key, next to kagent's payload: what kagent's strict models have no field for."""

EXTENSION_DESCRIPTION = "Human in the loop for tool approval, ask user, and nested subagents"

GENERIC_TEXT = "Human input is required before the agent can continue."
"""The status text of a pause that carries no tool call (§5.1, rule 5)."""

LEGACY_CONFIRMATION = "adk_request_confirmation"
"""The function name of kagent 0.x's confirmation DataParts."""

ShownRequest: TypeAlias = ApprovalRequest | QuestionRequest | ElicitationRequest

ShownKind: TypeAlias = Literal["approval", "question", "elicitation"]


HITL_RESPONSE = "hitl_response"
"""The `field` of an `InvalidInput` raised for a HITL response that does not answer its pause."""


def refused(problem: str) -> InvalidInput:
    """The error for a HITL response that does not answer the pause it was sent to; nothing was recorded."""
    return InvalidInput(problem, field=HITL_RESPONSE)


def to_a2a_error(exc: Exception) -> A2AError:
    """The JSON-RPC error for one of ours: the one place sayso's errors become A2A errors.

    Raises:
        Exception: `exc` itself when it is not sayso's (a bug, not a refusal): the SDK answers 500.
    """
    if isinstance(exc, A2AError):
        return exc
    if isinstance(exc, InvalidInput) and exc.field == HITL_RESPONSE:
        return InvalidParamsError(message=f"HITL response refused: {exc.problem}; the task still waits")
    if isinstance(exc, DecisionRefused):
        return InvalidParamsError(message=f"decision refused: {exc}; the task still waits")
    if isinstance(exc, RunNotFound):
        return TaskNotFoundError(message=f"no task has id {exc.run_id!r}")
    if isinstance(exc, NotFound):
        return TaskNotFoundError(message=str(exc))
    if isinstance(exc, RunConflict):
        return InvalidRequestError(message=str(exc))
    if isinstance(exc, InvalidInput | NotAllowed | ConfigError):
        # ConfigError: an agent name the runtime does not know, named by the call.
        return InvalidParamsError(message=str(exc))
    raise exc


@dataclass(frozen=True, kw_only=True)
class PauseView:
    """What one A2A pause message shows of a sayso pause: one kind of request, from one agent."""

    kind: ShownKind
    requests: tuple[ShownRequest, ...]
    """The requests the person decides now: several approvals, or exactly one question or elicitation."""
    task_id: str
    """The A2A task (the top-level run) that waits."""
    subagent: str | None = None
    """The top-level agent's delegate that asked, when the requests come from a nested agent."""

    @property
    def parent_id(self) -> str:
        """The id kagent's `nested` form gives the parent's call; clients never send it back."""
        return f"{self.task_id}/{self.subagent}"

    def visible_ids(self) -> list[str]:
        """The ids a response must carry: one per shown request."""
        return [r.request_id for r in self.requests]


def pause_view(task_id: str, open_requests: Sequence[Request]) -> PauseView | None:
    """The part of a pause to show now, or `None` when nothing open can be answered over A2A.

    Approvals come before questions (kagent cannot mix them in one pause), and requests of one
    agent path at a time (one `nested` block per pause).
    """
    approvals = [r for r in open_requests if isinstance(r, ApprovalRequest)]
    questions = [r for r in open_requests if isinstance(r, QuestionRequest)]
    elicitations = [r for r in open_requests if isinstance(r, ElicitationRequest)]
    kind: ShownKind
    if approvals:
        path = approvals[0].agent_path
        shown: tuple[ShownRequest, ...] = tuple(r for r in approvals if r.agent_path == path)
        kind = "approval"
    elif questions:
        path = questions[0].agent_path
        shown, kind = (questions[0],), "question"
    elif elicitations:
        path = elicitations[0].agent_path
        shown, kind = (elicitations[0],), "elicitation"
    else:
        return None
    parts = path.split("/")
    return PauseView(kind=kind, requests=shown, task_id=task_id, subagent=parts[1] if len(parts) > 1 else None)


# --- status text (§5.1)


@dataclass(frozen=True, kw_only=True)
class _Pending:
    """A pending operation as the status text rules see it."""

    name: str
    hint: str | None
    args: dict[str, Any]


def status_text(pending: Sequence[_Pending]) -> str:
    """The text part of a pause message, by kagent's rules (PR #2472, published in its 1.x docs)."""
    if len(pending) == 1 and pending[0].name == "ask_user":
        questions = pending[0].args.get("questions") or []
        texts = [q.get("question") for q in questions if isinstance(q, dict)]
        asked = [t for t in texts if isinstance(t, str) and t]
        if asked:
            return "; ".join(asked)
    hints = [p.hint for p in pending if p.hint]
    names = [p.name for p in pending if p.name]
    if hints and names:
        return f"{'; '.join(hints)} ({', '.join(names)})"
    if hints:
        return "; ".join(hints)
    if names:
        return f"Approval is required for tool(s): {', '.join(names)}"
    return GENERIC_TEXT


def _own_hint(request: ApprovalRequest) -> str | None:
    """The tool's own hint; sayso's default wording counts as none, as kagent's text rules expect."""
    return None if request.hint == default_hint(request.tool_name) else request.hint


def _questions_json(request: QuestionRequest) -> list[dict[str, Any]]:
    return [{"question": q.question, "choices": list(q.choices), "multiple": q.multiple} for q in request.questions]


def _pending(view: PauseView) -> list[_Pending]:
    """The top-level pending operations of a view: the shown calls, or the one call to the delegate."""
    if view.subagent is not None:
        return [_Pending(name=view.subagent, hint=_remote_hint(view), args={})]
    if view.kind in ("question", "elicitation"):
        return [_Pending(name="ask_user", hint=None, args={"questions": _shown_questions(view.requests[0])})]
    return [_Pending(name=r.tool_name, hint=_own_hint(r), args=shown_args(r)) for r in _approvals(view)]


def _remote_hint(view: PauseView) -> str:
    if view.kind == "elicitation":
        (asked,) = view.requests
        assert isinstance(asked, ElicitationRequest)
        return f"Remote agent '{view.subagent}' asks: {asked.message}"
    if view.kind == "question":
        (question,) = view.requests
        assert isinstance(question, QuestionRequest)
        return f"Remote agent '{view.subagent}' asks: {' '.join(q.question for q in question.questions)}"
    names = ", ".join(r.tool_name for r in view.requests)
    return f"Remote agent '{view.subagent}' requires approval for tool(s): {names}"


def _approvals(view: PauseView) -> list[ApprovalRequest]:
    return [r for r in view.requests if isinstance(r, ApprovalRequest)]


def view_text(view: PauseView | None) -> str:
    """The status text of a pause showing `view` (the generic line when there is nothing to show)."""
    return status_text(_pending(view)) if view is not None else GENERIC_TEXT


# --- v1 payloads: agent -> client


def _tool_json(request: ApprovalRequest) -> dict[str, Any]:
    args = shown_args(request)
    return {"id": request.request_id, "call_id": request.tool_call_id, "name": request.tool_name, "args": args}


def _ask_tool_json(request: QuestionRequest | ElicitationRequest) -> dict[str, Any]:
    """The synthetic tool a nested question (or elicitation) is shown as (§4)."""
    return {
        "id": request.request_id,
        "call_id": request.request_id,
        "name": "ask_user",
        "args": {"questions": _shown_questions(request)},
    }


# --- elicitations shown as questions, and answered either way


ELICITATION_RESPONSE = "elicitation_response"
"""sayso's own response type for an elicitation: `{type, id, action, content?}`."""

_ACTIONS = ("accept", "decline", "cancel")


def _shown_questions(request: ShownRequest) -> list[dict[str, Any]]:
    """The questions of a question request, or those an elicitation is shown as to a kagent client."""
    if isinstance(request, QuestionRequest):
        return _questions_json(request)
    assert isinstance(request, ElicitationRequest)
    if request.mode == "url":
        question = f"{request.message} Visit {request.url}, then answer done (or decline, or cancel)."
        return [{"question": question, "choices": ["done", "decline", "cancel"], "multiple": False}]
    schema = request.requested_schema or {}
    required = set(schema.get("required", []))
    questions = [{"question": request.message, "choices": list(_ACTIONS), "multiple": False}]
    for name, field in (schema.get("properties") or {}).items():
        label = field.get("title") or name
        text = f"{label}{'' if name in required else ' (optional: answer - to leave it out)'}"
        if field.get("description"):
            text += f": {field['description']}"
        choices = [str(c) for c in field.get("enum", [])] or (
            ["true", "false"] if field.get("type") == "boolean" else []
        )
        questions.append({"question": text, "choices": choices, "multiple": False})
    return questions


def elicitation_from_answers(request: ElicitationRequest, answers: Sequence[Sequence[str]]) -> Decision:
    """The decision answers to an elicitation's questions take: the action first, then each field's value.

    Values are read by the field's type (numbers, booleans; `-` leaves an optional field out);
    the runtime then checks the content against the schema and names any field still wrong.

    Raises:
        InvalidInput: the answers do not fit the questions (`field` is `HITL_RESPONSE`).
    """
    expected = len(_shown_questions(request))
    if len(answers) != expected:
        raise refused(f"expected {expected} answer(s), one per question, got {len(answers)}")
    action = (answers[0][0] if answers[0] else "").strip().lower()
    if request.mode == "url":
        action = {"done": "accept"}.get(action, action)
    if action not in _ACTIONS:
        raise refused(f"the first answer must be one of {', '.join(_ACTIONS)}, not {action!r}")
    if action == "decline":
        return Decline()
    if action == "cancel":
        return Cancel()
    if request.mode == "url":
        return Accept()
    properties = (request.requested_schema or {}).get("properties") or {}
    content: dict[str, Any] = {}
    for (name, field), answer in zip(properties.items(), answers[1:], strict=True):
        raw = (answer[0] if answer else "").strip()
        if raw in ("", "-"):
            continue
        content[name] = _typed(raw, field.get("type"))
    return Accept(content=content)


def _typed(raw: str, kind: Any) -> Any:
    """A form value read from words by its field's type; left as words when it does not read as that type."""
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw)
    except ValueError:
        return raw
    if kind == "boolean" and raw.lower() in ("true", "yes", "false", "no"):
        return raw.lower() in ("true", "yes")
    return raw


def _elicitation_from_v1(view: PauseView, payload: Mapping[str, Any]) -> list[tuple[ShownRequest, Decision]]:
    (asked,) = view.requests
    assert isinstance(asked, ElicitationRequest)
    if payload.get("id") != asked.request_id:
        parent = " (the parent's id is never sent back)" if payload.get("id") == view.parent_id else ""
        raise refused(f"invalid correlation: the answer's id must be {asked.request_id!r}{parent}")
    if payload.get("type") == "ask_user_response":
        answers = payload.get("answers")
        if not isinstance(answers, list) or not all(
            isinstance(a, dict) and isinstance(a.get("answer"), list) and all(isinstance(v, str) for v in a["answer"])
            for a in answers
        ):
            raise refused("'answers' must be a list of {answer: [string, ...]}, one per question")
        return [(asked, elicitation_from_answers(asked, [a["answer"] for a in answers]))]
    action, content = payload.get("action"), payload.get("content")
    if action not in _ACTIONS:
        raise refused(f"'action' must be one of {', '.join(_ACTIONS)}, not {action!r}")
    if content is not None and not isinstance(content, dict):
        raise refused("'content' must be an object of the form's fields")
    if action == "decline":
        return [(asked, Decline())]
    if action == "cancel":
        return [(asked, Cancel())]
    return [(asked, Accept(content=content))]


def request_payload(view: PauseView) -> dict[str, Any]:
    """The `tool_approval_request` or `ask_user_request` for a view, with no key beyond kagent's schema."""
    first = view.requests[0]
    nested: dict[str, Any] | None = None
    if view.subagent is not None:
        child_tools = (
            [_tool_json(r) for r in _approvals(view)]
            if view.kind == "approval"
            else [_ask_tool_json(r) for r in view.requests if isinstance(r, QuestionRequest | ElicitationRequest)]
        )
        nested = {
            "subagent_name": view.subagent,
            "task_id": first.run_id,
            "context_id": first.thread_id,
            "tools": child_tools,
        }
    if view.kind in ("question", "elicitation"):
        body: dict[str, Any] = {
            "type": "ask_user_request",
            "id": view.parent_id if nested else first.request_id,
            "questions": _shown_questions(first),
        }
    else:
        tools = (
            [{"id": view.parent_id, "call_id": view.parent_id, "name": view.subagent, "args": {}}]
            if nested
            else [_tool_json(r) for r in _approvals(view)]
        )
        body = {"type": "tool_approval_request", "hint": view_text(view), "tools": tools}
    if nested is not None:
        body["nested"] = nested
    return body


def sayso_payload(view: PauseView) -> dict[str, Any]:
    """The facts sayso adds about the shown requests, under `SAYSO_KEY`: subject, scopes, expiry, who asked."""
    entries: list[dict[str, Any]] = []
    for request in view.requests:
        entry: dict[str, Any] = {
            "id": request.request_id,
            "kind": request.kind,
            "agent_path": request.agent_path,
            "run_id": request.run_id,
            "expires_at": request.expires_at,
        }
        if isinstance(request, ApprovalRequest):
            entry["subject"] = {"key": request.subject.key, "label": request.subject.label} if request.subject else None
            entry["scopes"] = list(request.scopes)
            entry["hint"] = request.hint
            entry["tool"] = asdict(request.tool_info) if request.tool_info is not None else None
        elif isinstance(request, ElicitationRequest):
            entry.update(
                mode=request.mode,
                message=request.message,
                server=request.server,
                requested_schema=request.requested_schema,
                url=request.url,
                durable=request.delivery != "live",
                respond_with=ELICITATION_RESPONSE,
            )
        entries.append(entry)
    return {"requests": entries}


# --- legacy 0.x DataParts: agent -> client


def legacy_parts(view: PauseView) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The pause as kagent 0.x wrote it: one `adk_request_confirmation` DataPart (data, metadata) per pending call."""
    metadata = {
        "kagent_type": "function_call",
        "kagent_is_long_running": True,
        "adk_type": "function_call",
        "adk_is_long_running": True,
    }
    if view.subagent is not None:
        hitl_parts = [
            {
                "name": LEGACY_CONFIRMATION,
                "id": r.request_id,
                "originalFunctionCall": _legacy_call(r),
            }
            for r in view.requests
        ]
        payload = {
            "task_id": view.requests[0].run_id,
            "context_id": view.requests[0].thread_id,
            "subagent_name": view.subagent,
            "hitl_parts": hitl_parts,
        }
        data = _legacy_confirmation(
            view.parent_id,
            {"name": view.subagent, "args": {}, "id": view.parent_id},
            _remote_hint(view),
            payload,
        )
        return [(data, metadata)]
    out = []
    for request in view.requests:
        hint = request.hint if isinstance(request, ApprovalRequest) else view_text(view)
        out.append((_legacy_confirmation(request.request_id, _legacy_call(request), hint, None), metadata))
    return out


def _legacy_call(request: ShownRequest) -> dict[str, Any]:
    if isinstance(request, QuestionRequest | ElicitationRequest):
        return {"name": "ask_user", "args": {"questions": _shown_questions(request)}, "id": request.tool_call_id}
    return {"name": request.tool_name, "args": shown_args(request), "id": request.tool_call_id}


def _legacy_confirmation(
    confirmation_id: str, call: dict[str, Any], hint: str, payload: dict[str, Any] | None
) -> dict[str, Any]:
    confirmation: dict[str, Any] = {"hint": hint, "confirmed": False}
    if payload is not None:
        confirmation["payload"] = payload
    return {
        "name": LEGACY_CONFIRMATION,
        "id": confirmation_id,
        "args": {"originalFunctionCall": call, "toolConfirmation": confirmation},
    }


# --- protobuf messages


def struct_of(value: Mapping[str, Any]) -> Struct:
    """A protobuf `Struct` holding a JSON object."""
    struct = Struct()
    struct.update(dict(value))
    return struct


def json_of(struct: Struct) -> dict[str, Any]:
    """The JSON object a protobuf `Struct` holds."""
    out: dict[str, Any] = MessageToDict(struct)
    return out


def pause_message(
    view: PauseView | None,
    *,
    task_id: str,
    context_id: str,
    activated: bool,
    legacy: bool,
) -> Message:
    """The status message of a task in `TASK_STATE_INPUT_REQUIRED`.

    Activated: one text part, `extensions: [URI]` and the payload under the URI (plus ours under
    `SAYSO_KEY`). Not activated: the text part only, or kagent 0.x's DataParts in compat mode.
    """
    message_id = f"pause-{view.requests[0].request_id}" if view is not None else f"pause-{task_id}"
    message = Message(message_id=message_id, role=Role.ROLE_AGENT, task_id=task_id, context_id=context_id)
    if view is not None and legacy and not activated:
        for data, metadata in legacy_parts(view):
            message.parts.append(Part(data=Value(struct_value=struct_of(data)), metadata=struct_of(metadata)))
        return message
    message.parts.append(Part(text=view_text(view)))
    if view is not None and activated:
        message.extensions.append(HITL_URI)
        message.metadata.update({HITL_URI: request_payload(view), SAYSO_KEY: sayso_payload(view)})
    return message


def text_message(text: str, *, task_id: str, context_id: str, message_id: str) -> Message:
    """An agent message with one text part."""
    return Message(
        message_id=message_id, role=Role.ROLE_AGENT, task_id=task_id, context_id=context_id, parts=[Part(text=text)]
    )


def message_text(message: Message) -> str:
    """The text a user message says: its text parts joined by newlines."""
    return "\n".join(part.text for part in message.parts if part.HasField("text"))


# --- v1 responses: client -> agent


def v1_payload(message: Message) -> dict[str, Any] | None:
    """The HITL payload of a message: declared in `extensions` and an object with a string `type`."""
    if HITL_URI not in message.extensions:
        return None
    payload = json_of(message.metadata).get(HITL_URI)
    return payload if isinstance(payload, dict) and isinstance(payload.get("type"), str) else None


RESPONSE_TYPES = {
    "approval": "tool_approval_response",
    "question": "ask_user_response",
    "elicitation": "ask_user_response",
}


def decisions_from_v1(view: PauseView, payload: Mapping[str, Any]) -> list[tuple[ShownRequest, Decision]]:
    """The decisions a v1 response takes for the shown requests, all or nothing.

    Unknown keys are ignored; the known ones are checked strictly.

    Raises:
        InvalidInput: the response does not decide exactly the shown requests, or is malformed
            (`field` is `HITL_RESPONSE`).
    """
    kind = payload.get("type")
    expected = RESPONSE_TYPES[view.kind]
    if view.kind == "elicitation" and kind in (expected, ELICITATION_RESPONSE):
        return _elicitation_from_v1(view, payload)
    if kind not in RESPONSE_TYPES.values():
        raise refused(f"{kind!r} is not a HITL response; this task waits for a {expected}")
    if kind != expected:
        raise refused(f"this task waits for a {expected}, not a {kind}")
    if view.kind == "question":
        return _answer_from_v1(view, payload)
    approvals = payload.get("approvals")
    if not isinstance(approvals, list) or not approvals:
        raise refused("'approvals' must be a non-empty list, one entry per tool")
    chosen: dict[str, Decision] = {}
    seen: list[str] = []
    for entry in approvals:
        if not isinstance(entry, dict):
            raise refused("each approval must be an object {id, approved, rejection_reason?}")
        tool_id, approved, reason = entry.get("id"), entry.get("approved"), entry.get("rejection_reason")
        if not isinstance(tool_id, str) or not tool_id:
            raise refused("each approval needs a non-empty string 'id'")
        if not isinstance(approved, bool):
            raise refused(f"approval {tool_id!r}: 'approved' must be a JSON boolean, not {approved!r}")
        if reason is not None and not isinstance(reason, str):
            raise refused(f"approval {tool_id!r}: 'rejection_reason' must be a string")
        seen.append(tool_id)
        chosen[tool_id] = Approve() if approved else Reject(reason=reason or None)
    return _match(view, seen, chosen)


def _match(view: PauseView, seen: Sequence[str], chosen: Mapping[str, Decision]) -> list[tuple[ShownRequest, Decision]]:
    """Check that `seen` names every shown request exactly once (kagent's order of checks)."""
    duplicates = sorted({i for i in seen if seen.count(i) > 1})
    if duplicates:
        raise refused(f"duplicate ids: {', '.join(duplicates)}")
    expected = view.visible_ids()
    missing = sorted(set(expected) - set(seen))
    if missing:
        raise refused(f"missing ids: {', '.join(missing)}; every call must be decided")
    unknown = sorted(set(seen) - set(expected))
    if unknown:
        raise refused(f"unknown ids: {', '.join(unknown)}")
    return [(r, chosen[r.request_id]) for r in view.requests]


def _answer_from_v1(view: PauseView, payload: Mapping[str, Any]) -> list[tuple[ShownRequest, Decision]]:
    (question,) = view.requests
    assert isinstance(question, QuestionRequest)
    if payload.get("id") != question.request_id:
        parent = " (the parent's id is never sent back)" if payload.get("id") == view.parent_id else ""
        raise refused(f"invalid correlation: the answer's id must be {question.request_id!r}{parent}")
    return [(question, Answer(answers=_answers(question, payload.get("answers"))))]


def _answers(question: QuestionRequest, raw: Any) -> tuple[tuple[str, ...], ...]:
    if not isinstance(raw, list) or not raw:
        raise refused("'answers' must be a non-empty list, one {answer: [...]} per question")
    answers: list[tuple[str, ...]] = []
    for entry in raw:
        values = entry.get("answer") if isinstance(entry, dict) else None
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise refused("each answer must be an object {answer: [string, ...]}")
        answers.append(tuple(values))
    if len(answers) != len(question.questions):
        raise refused(f"expected {len(question.questions)} answer(s), one per question, got {len(answers)}")
    return tuple(answers)


# --- legacy 0.x decisions: client -> agent


LEGACY_DECISIONS = ("approve", "reject", "batch")


def legacy_decision(message: Message) -> dict[str, Any] | None:
    """The first DataPart of a message whose `decision_type` is approve, reject or batch (text never decides)."""
    for part in message.parts:
        if not part.HasField("data") or part.data.WhichOneof("kind") != "struct_value":
            continue
        data = json_of(part.data.struct_value)
        if data.get("decision_type") in LEGACY_DECISIONS:
            return data
    return None


def decisions_from_legacy(view: PauseView, data: Mapping[str, Any]) -> list[tuple[ShownRequest, Decision]]:
    """The decisions a kagent 0.x decision takes for the shown requests, all or nothing.

    Unlike kagent 0.x, a call that a batch leaves out is refused, never approved.

    Raises:
        InvalidInput: the decision does not fit the pause (`field` is `HITL_RESPONSE`).
    """
    decision_type = data["decision_type"]
    answers = data.get("ask_user_answers")
    if view.kind == "elicitation":
        return _elicitation_from_legacy(view, decision_type, answers)
    if view.kind == "question":
        (question,) = view.requests
        assert isinstance(question, QuestionRequest)
        if isinstance(answers, list):
            return [(question, Answer(answers=_answers(question, answers)))]
        if decision_type == "reject":
            return [(question, Skip(reason=_reason(data.get("rejection_reason")) or "the person declined to answer"))]
        raise refused("this task waits for answers: send decision_type approve with ask_user_answers")
    if isinstance(answers, list):
        raise refused("this task waits for approvals, not for ask_user_answers")
    if decision_type == "approve":
        return [(r, Approve()) for r in view.requests]
    if decision_type == "reject":
        return [(r, Reject(reason=_reason(data.get("rejection_reason")))) for r in view.requests]
    decisions = data.get("decisions")
    reasons = data.get("rejection_reasons")
    if not isinstance(decisions, dict):
        raise refused("a batch needs 'decisions': {call id: approve | reject}")
    reasons = reasons if isinstance(reasons, dict) else {}
    by_call = {r.tool_call_id: r for r in view.requests}
    seen: list[str] = []
    chosen: dict[str, Decision] = {}
    for call_id, value in decisions.items():
        if value not in ("approve", "reject"):
            continue
        request = by_call.get(call_id)
        seen.append(request.request_id if request else call_id)
        decision: Decision = Approve() if value == "approve" else Reject(reason=_reason(reasons.get(call_id)))
        chosen[request.request_id if request else call_id] = decision
    try:
        return _match(view, seen, chosen)
    except InvalidInput as exc:
        problem = exc.problem
        # The batch names calls by the model's call ids: say which calls, not which requests.
        for request in view.requests:
            problem = problem.replace(request.request_id, request.tool_call_id)
        raise refused(problem) from None


def _elicitation_from_legacy(view: PauseView, decision_type: str, answers: Any) -> list[tuple[ShownRequest, Decision]]:
    (asked,) = view.requests
    assert isinstance(asked, ElicitationRequest)
    if isinstance(answers, list):
        return [(asked, elicitation_from_answers(asked, _answer_lists(answers)))]
    if decision_type == "reject":
        return [(asked, Decline())]
    raise refused("this task waits for what a server asked: send decision_type approve with ask_user_answers")


def _answer_lists(raw: list[Any]) -> list[list[str]]:
    lists = [entry.get("answer") if isinstance(entry, dict) else None for entry in raw]
    if not all(isinstance(values, list) and all(isinstance(v, str) for v in values) for values in lists):
        raise refused("each answer must be an object {answer: [string, ...]}")
    return [list(values) for values in lists if isinstance(values, list)]


def _reason(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
