"""A2A's protobuf messages: the pause and decision messages, a task's history, and sayso's errors as A2A errors.

A task's history is rebuilt from the runtime's records of the run, never from what one
connection saw: the person's message, each pause as it was shown, the answer that closed
it (whether it came over A2A, REST, the web UI or the CLI), and the final answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from a2a.types import Message, Part, Role
from a2a.utils.errors import (
    A2AError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
)
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct, Value

from ...._core.decisions import Accept, Answer, Approve, Decision, DecisionRecord, Provide, Reject, Skip
from ...._core.requests import Request
from ...._runtime import RunRecord
from ....exceptions import (
    AlreadyDecided,
    CallEnded,
    ConfigError,
    DecisionRefused,
    InvalidInput,
    NotAllowed,
    NotFound,
    RequestExpired,
    RunConflict,
    RunNotFound,
    StoreError,
)
from ._legacy import LEGACY_DECISIONS, legacy_decision_data, legacy_parts
from ._v1 import HITL_RESPONSE, request_payload, response_of, sayso_payload
from ._views import HITL_URI, SAYSO_KEY, PauseView, ShownRequest, refused, view_text, views_of
from ._wire import SaysoDecisionJson, SaysoRecordJson


def _invalid_input(exc: InvalidInput) -> A2AError:
    if exc.field == HITL_RESPONSE:
        return InvalidParamsError(message=f"HITL response refused: {exc.problem}; the task still waits")
    return InvalidParamsError(message=str(exc))


def _run_not_found(exc: RunNotFound) -> A2AError:
    return TaskNotFoundError(message=f"no task has id {exc.run_id!r}")


def _refused(exc: DecisionRefused) -> A2AError:
    if isinstance(exc, AlreadyDecided | RequestExpired):
        # Decided or timed out meanwhile: the task may have gone on (or ended) since, so say where to look.
        return InvalidParamsError(message=f"decision refused: {exc}; tasks/get says where the task stands now")
    return InvalidParamsError(message=f"decision refused: {exc}; the task still waits")


UNAVAILABLE_KEY = "unavailable"
"""Where an error says which service did not answer (`StoreError.service`): in its `data`, the ErrorInfo's metadata."""


def _unavailable(exc: StoreError) -> A2AError:
    # A2A has no "unavailable" error: the SDK's internal error is the nearest, marked so that gRPC answers
    # UNAVAILABLE (which its clients retry).
    return InternalError(message=f"{exc.service} unavailable: {exc.said}", data={UNAVAILABLE_KEY: exc.service})


def is_unavailable(error: A2AError) -> bool:
    """Whether `error` says a service sayso needs did not answer: nothing is wrong with the call, try it again."""
    return isinstance(error, InternalError) and isinstance(error.data, dict) and UNAVAILABLE_KEY in error.data


_ERRORS: dict[type[Exception], Callable[[Any], A2AError]] = {
    InvalidInput: _invalid_input,
    DecisionRefused: _refused,
    # Nothing waits any more: the request was closed as cancelled (the task carries on without it).
    CallEnded: lambda exc: InvalidRequestError(message=f"decision refused: {exc}"),
    RunNotFound: _run_not_found,
    NotFound: lambda exc: TaskNotFoundError(message=str(exc)),
    RunConflict: lambda exc: InvalidRequestError(message=str(exc)),
    NotAllowed: lambda exc: InvalidParamsError(message=str(exc)),
    # The configuration refuses the step (say, the audit chain is signed and this process has no key).
    ConfigError: lambda exc: InvalidParamsError(message=str(exc)),
    StoreError: _unavailable,
}
"""sayso's errors as A2A errors, looked up along the error's MRO: the most specific class listed wins."""

_WHILE_CANCELLING: dict[type[Exception], Callable[[Any], A2AError]] = {
    RunConflict: lambda exc: TaskNotCancelableError(message=str(exc)),
}
"""What `CancelTask` answers differently: a run that cannot be cancelled is A2A's task-not-cancelable."""


def to_a2a_error(exc: Exception, *, cancelling: bool = False) -> A2AError:
    """The JSON-RPC error for one of ours: the one place sayso's errors become A2A errors.

    `cancelling`: the error answers `CancelTask` (see `_WHILE_CANCELLING`).

    Raises:
        Exception: `exc` itself when it is not sayso's (a bug, not a refusal): the SDK answers 500.
    """
    if isinstance(exc, A2AError):
        return exc
    tables = (_WHILE_CANCELLING, _ERRORS) if cancelling else (_ERRORS,)
    for kind in type(exc).__mro__:
        for table in tables:
            if kind in table:
                return table[kind](exc)
    raise exc


# --- protobuf


def struct_of(value: Mapping[str, Any]) -> Struct:
    """A protobuf `Struct` holding a JSON object."""
    struct = Struct()
    struct.update(dict(value))
    return struct


def json_of(struct: Struct) -> dict[str, Any]:
    """The JSON object a protobuf `Struct` holds, its whole numbers integers (see `whole_numbers`)."""
    out: dict[str, Any] = whole_numbers(MessageToDict(struct))
    return out


def whole_numbers(value: Any) -> Any:
    """JSON from protobuf, with whole numbers as integers again.

    protobuf keeps every number as a double, over gRPC and (once the SDK has parsed it) over JSON-RPC alike:
    a tool's `count: 3` would read `3.0` in the request a person sees, and a question's or an edit's answer
    likewise. JSON does not tell `3` from `3.0`, so an integer is what was meant or what it equals.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    return value


def data_parts(message: Message) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """A message's DataParts that hold an object, as (data, metadata)."""
    return [
        (json_of(part.data.struct_value), json_of(part.metadata))
        for part in message.parts
        if part.HasField("data") and part.data.WhichOneof("kind") == "struct_value"
    ]


def _data_part(data: Mapping[str, Any], metadata: Mapping[str, Any]) -> Part:
    return Part(data=Value(struct_value=struct_of(data)), metadata=struct_of(metadata))


# --- messages


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
    `SAYSO_KEY`). Not activated: the text part only, or kagent 0.x's DataParts in compat mode. A
    workflow's input always carries ours, whose schema a client can answer with a DataPart.
    """
    message_id = f"pause-{view.requests[0].request_id}" if view is not None else f"pause-{task_id}"
    message = Message(message_id=message_id, role=Role.ROLE_AGENT, task_id=task_id, context_id=context_id)
    if view is not None and legacy and not activated:
        for data, metadata in legacy_parts(view):
            message.parts.append(_data_part(data, metadata))
        return message
    message.parts.append(Part(text=view_text(view)))
    if view is not None and activated:
        message.extensions.append(HITL_URI)
        message.metadata.update({HITL_URI: struct_of(request_payload(view)), SAYSO_KEY: struct_of(sayso_payload(view))})
    elif view is not None and view.kind == "input":
        message.metadata.update({SAYSO_KEY: struct_of(sayso_payload(view))})
    return message


def decision_message(
    view: PauseView, records: Mapping[str, DecisionRecord], *, context_id: str, activated: bool, legacy: bool
) -> Message | None:
    """The person's answer to a view, as the ROLE_USER message a kagent client would have sent; `None` if unanswered.

    sayso's key adds who decided, how, and an edit if any, since kagent's response has no room for them.
    """
    taken = {r.request_id: records[r.request_id] for r in view.requests if r.request_id in records}
    if not taken:
        return None
    decisions = {request_id: record.decision for request_id, record in taken.items()}
    message = Message(
        message_id=f"decision-{view.requests[0].request_id}",
        role=Role.ROLE_USER,
        task_id=view.task_id,
        context_id=context_id,
    )
    legacy_data = legacy_decision_data(view, decisions) if legacy and not activated else None
    if legacy_data is not None:
        message.parts.append(_data_part(legacy_data, {}))
    message.parts.append(Part(text=_decision_text(view, decisions)))
    response = response_of(view, decisions) if legacy_data is None and activated else None
    if response is not None:
        message.extensions.append(HITL_URI)
        message.metadata.update({HITL_URI: struct_of(response)})
    message.metadata.update(
        {
            SAYSO_KEY: struct_of(
                {"decisions": [_record_json(view, r, taken) for r in view.requests if r.request_id in taken]}
            )
        }
    )
    return message


def _decision_text(view: PauseView, decisions: Mapping[str, Decision]) -> str:
    """The display text kagent's UI sends with a decision (a workflow's input: the answer itself, as JSON)."""
    if view.kind == "input":
        (decision,) = decisions.values()
        if isinstance(decision, Provide):
            return decision.value if isinstance(decision.value, str) else json.dumps(decision.value, ensure_ascii=False)
        return "Skipped the input"
    if view.kind == "elicitation":
        (decision,) = decisions.values()
        return {"accept": "Answered the form", "decline": "Declined", "cancel": "Cancelled"}.get(
            decision.kind, "Closed the request"
        )
    if view.kind == "question":
        return (
            "Answered questions" if any(isinstance(d, Answer) for d in decisions.values()) else "Skipped the questions"
        )
    approved = sum(isinstance(d, Approve) for d in decisions.values())
    rejected = len(decisions) - approved
    if not rejected:
        return "Approved"
    if not approved:
        return "Rejected"
    return f"Batch decision: {approved} approved, {rejected} rejected"


def _record_json(view: PauseView, request: ShownRequest, taken: Mapping[str, DecisionRecord]) -> SaysoRecordJson:
    record = taken[request.request_id]
    decision: SaysoDecisionJson = {"kind": record.decision.kind}
    if isinstance(record.decision, Approve):
        decision["scope"] = record.decision.scope
        if record.decision.edited_args is not None:
            decision["edited_args"] = record.decision.edited_args
        if record.decision.payload is not None:
            decision["payload"] = record.decision.payload
    elif isinstance(record.decision, Provide):
        decision["value"] = record.decision.value
    elif isinstance(record.decision, Accept) and record.decision.content is not None:
        decision["content"] = record.decision.content
    elif isinstance(record.decision, Reject | Skip) and record.decision.reason:
        decision["reason"] = record.decision.reason
    return {
        "id": view.tool_id(request),
        "request_id": request.request_id,
        "decision": decision,
        "by": record.by,
        "principal": record.principal,
        "decided_at": record.decided_at,
    }


def text_message(text: str, *, task_id: str, context_id: str, message_id: str, role: Role = Role.ROLE_AGENT) -> Message:
    """A message with one text part."""
    return Message(message_id=message_id, role=role, task_id=task_id, context_id=context_id, parts=[Part(text=text)])


def message_text(message: Message) -> str:
    """The text a user message says: its text parts joined by newlines."""
    return "\n".join(part.text for part in message.parts if part.HasField("text"))


def no_answer_reason(message: Message) -> str:
    """Why a message sent to a waiting task answers nothing, said so the sender can fix it."""
    if HITL_URI in json_of(message.metadata):
        if HITL_URI not in message.extensions:
            return f"the message's HITL payload is not declared: list {HITL_URI!r} in message.extensions"
        return "the HITL payload needs a string 'type', the kind of response it is"
    parts = data_parts(message)
    for data, _metadata in parts:
        if "decision_type" in data:
            return f"decision_type {data['decision_type']!r} is none of {', '.join(LEGACY_DECISIONS)}"
    return "its DataParts hold no HITL response" if parts else "a plain message is no HITL response"


def v1_payload(message: Message) -> dict[str, Any] | None:
    """The HITL payload of a message: declared in `extensions` and an object with a string `type`."""
    if HITL_URI not in message.extensions:
        return None
    payload = json_of(message.metadata).get(HITL_URI)
    return payload if isinstance(payload, dict) and isinstance(payload.get("type"), str) else None


def sayso_extras(message: Message) -> dict[str, Any] | None:
    """What a client sent under sayso's own key (edits and scopes of approvals), if anything.

    Raises:
        InvalidInput: the key holds something other than an object; dropping it would run the
            calls it meant to edit as they were (`field` is `HITL_RESPONSE`).
    """
    extras = json_of(message.metadata).get(SAYSO_KEY)
    if extras is None or isinstance(extras, dict):
        return extras
    raise refused(f"sayso's {SAYSO_KEY!r} must be an object {{approvals: {{id: {{edited_args?, scope?, payload?}}}}}}")


# --- task history


def history(
    run: RunRecord,
    requests: Sequence[Request],
    records: Mapping[str, DecisionRecord],
    *,
    activated: Callable[[PauseView], bool],
    legacy: bool,
) -> list[Message]:
    """A task's history from the runtime's records: the person's message, each pause and its answer, the end.

    Pauses are shown as the task showed them live: a sayso pause's approvals first, then each
    question, one agent at a time; `activated` says whether a view was shown with the extension,
    and `legacy` whether one shown without it was kagent 0.x's DataParts (compat mode).
    """
    out: list[Message] = []
    if run.prompt:
        out.append(
            text_message(
                run.prompt,
                task_id=run.run_id,
                context_id=run.thread_id,
                message_id=f"user-{run.run_id}",
                role=Role.ROLE_USER,
            )
        )
    for group in _pauses(requests):
        for view in views_of(run.run_id, group, depth=run.path.count("/")):
            shown = activated(view)
            out.append(
                pause_message(view, task_id=run.run_id, context_id=run.thread_id, activated=shown, legacy=legacy)
            )
            decided = decision_message(view, records, context_id=run.thread_id, activated=shown, legacy=legacy)
            if decided is not None:
                out.append(decided)
    if run.status == "completed" and run.output is not None:
        out.append(
            text_message(run.output, task_id=run.run_id, context_id=run.thread_id, message_id=f"out-{run.run_id}")
        )
    elif run.status == "failed":
        out.append(
            text_message(
                run.error or "the run failed",
                task_id=run.run_id,
                context_id=run.thread_id,
                message_id=f"err-{run.run_id}",
            )
        )
    return out


def _pauses(requests: Sequence[Request]) -> list[list[Request]]:
    """The requests grouped by the pause that raised them together (same run, same moment), oldest first."""
    groups: list[list[Request]] = []
    for request in requests:
        last = groups[-1][-1] if groups else None
        if last is not None and (last.run_id, last.created_at) == (request.run_id, request.created_at):
            groups[-1].append(request)
        else:
            groups.append([request])
    return groups
