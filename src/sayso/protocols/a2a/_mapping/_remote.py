"""sayso as a client of a remote agent's HITL: what a paused remote task asks, and the answer that goes back.

A remote agent speaks kagent's v1 extension or kagent 0.x's DataParts; which one is read from
the pause itself (the card only says whether v1 is offered). The answer goes back in the
form the pause came in. A plain rejection carries no reason: the child's model then reads its
own "declined" wording, not ours twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from a2a.types import Message, Part, TaskState, TaskStatus
from google.protobuf.json_format import ParseDict
from google.protobuf.struct_pb2 import Value

from ...._core.decisions import Answer, Approve, Decision, Provide, Reject
from ...._core.inputs import schema_problem
from ...._core.model_text import model_text
from ...._runtime import RemoteAsk, RemoteOutcome, RemoteWire
from ._legacy import LEGACY_CONFIRMATION
from ._messages import data_parts, json_of, struct_of
from ._views import HITL_URI, SAYSO_KEY
from ._wire import AnswerJson, ApprovalJson, HitlResponseJson, LegacyDecisionJson


def remote_outcome(status: TaskStatus, *, task_id: str, context_id: str) -> RemoteOutcome:
    """Where a remote task stands, from its last status: done, paused on what it asks, or failed."""
    text = " ".join(p.text for p in status.message.parts if p.text)
    if status.state == TaskState.TASK_STATE_COMPLETED:
        return RemoteOutcome(status="completed", task_id=task_id, context_id=context_id, text=text)
    if status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
        payload = json_of(status.message.metadata).get(HITL_URI)
        asks = asks_of(payload) if isinstance(payload, dict) and HITL_URI in status.message.extensions else ()
        if not asks:
            asks = legacy_asks(data_parts(status.message))
        if asks:
            asks = tuple(_as_told(asks, json_of(status.message.metadata).get(SAYSO_KEY)))
            return RemoteOutcome(status="paused", task_id=task_id, context_id=context_id, text=text, asks=asks)
        return RemoteOutcome(status="input_without_hitl", task_id=task_id, context_id=context_id, text=text)
    return RemoteOutcome(status="failed", task_id=task_id, context_id=context_id, text=text or "no answer")


def _as_told(asks: Sequence[RemoteAsk], facts: Any) -> list[RemoteAsk]:
    """`asks` with what a sayso remote agent tells of each under its own key (`SAYSO_KEY`), when it does.

    Its expiry; and for a workflow's input (shown to kagent clients as questions) the input itself, with
    the JSON Schema its answer must fit, so the answer is checked here before it goes down.
    """
    listed = facts.get("requests") if isinstance(facts, dict) else None
    entries = {e.get("id"): e for e in listed if isinstance(e, dict)} if isinstance(listed, list) else {}
    return [_told(ask, entries.get(ask.ask_id) or {}) for ask in asks]


def _told(ask: RemoteAsk, entry: Mapping[str, Any]) -> RemoteAsk:
    at = entry.get("expires_at")
    if isinstance(at, int | float) and not isinstance(at, bool):
        ask = replace(ask, expires_at=float(at))
    schema, message, node = entry.get("response_schema"), entry.get("message"), entry.get("node")
    if (
        ask.kind == "question"
        and ask.wire == "v1"
        and entry.get("kind") == "input"
        and isinstance(schema, dict)
        and schema_problem(schema) is None
        and isinstance(message, str)
        and isinstance(node, str)
        and node
    ):
        payload = entry.get("payload")
        return replace(ask, kind="input", tool_name=node, message=message, payload=payload, response_schema=schema)
    return ask


def asks_of(payload: Mapping[str, Any]) -> tuple[RemoteAsk, ...]:
    """What a paused remote task waits on: the *visible* tools of its v1 request (`nested.tools` when nested).

    Each value goes on as the remote agent sent it, never converted (a number made text, text made
    an object): the runtime judges the asks before anything of the pause is stored, and a request
    it cannot take fails the delegate call, naming what was wrong.
    """
    nested = payload.get("nested") if isinstance(payload.get("nested"), dict) else None
    if payload.get("type") == "ask_user_request":
        tools = _listed(nested.get("tools")) if nested is not None else []
        ask_id = _id(_obj(tools[0]).get("id") if tools else payload.get("id"))
        return (RemoteAsk(kind="question", ask_id=ask_id, tool_name="ask_user", questions=_asked(payload)),)
    if payload.get("type") == "tool_approval_request":
        tools = [_obj(t) for t in _listed((nested or payload).get("tools"))]
        return tuple(_ask(t.get("id"), t.get("call_id"), t, payload.get("hint")) for t in tools)
    return ()


def _ask(ask_id: Any, call_id: Any, call: Mapping[str, Any], hint: Any, *, wire: RemoteWire = "v1") -> RemoteAsk:
    """An approval of `call`, filled in as kagent does: `call_id` or the id, `name` or `tool`, `args` or `{}`.

    Only a missing value is filled in; one of the wrong type stays, to be refused.
    """
    name, args = call.get("name"), call.get("args")
    return RemoteAsk(
        kind="approval",
        ask_id=_id(ask_id),
        call_id=_call_id(call_id, ask_id),
        tool_name="tool" if name is None or name == "" else name,
        args={} if args is None else args,
        hint=hint,
        wire=wire,
    )


def _call_id(call_id: Any, ask_id: Any) -> Any:
    """The remote model's id for the call; the ask's own when it is no text, as kagent fills in a missing one.

    It is only shown, or (kagent 0.x) keys a decision, so it is never stored as a request's field to judge.
    """
    return call_id if isinstance(call_id, str) and call_id else _id(ask_id)


def _id(value: Any) -> Any:
    """An id as sent; an empty one as none, to be refused as missing (kagent's ids are never empty)."""
    return value if value != "" else None


def _asked(payload: Mapping[str, Any]) -> Any:
    """The questions as sent; a `null` inside a question reads as the field left out, as JSON means it."""
    questions = payload.get("questions")
    if not isinstance(questions, list):
        return questions
    return [{k: v for k, v in q.items() if v is not None} if isinstance(q, dict) else q for q in questions]


def _listed(value: Any) -> list[Any]:
    """The entries of a JSON array; anything else but a missing value is one entry, to be refused as a tool."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def legacy_asks(parts: Sequence[tuple[dict[str, Any], dict[str, Any]]]) -> tuple[RemoteAsk, ...]:
    """What a kagent 0.x pause waits on: each long-running `adk_request_confirmation` DataPart.

    See docs/guides/a2a.md#kagent-0x-and-adk.

    A subagent's pause (`payload.hitl_parts`) shows the child's own calls, decided by their call ids.
    """
    asks: list[RemoteAsk] = []
    for data, metadata in parts:
        kind = metadata.get("adk_type", metadata.get("kagent_type"))
        running = metadata.get("adk_is_long_running", metadata.get("kagent_is_long_running"))
        if kind != "function_call" or running is not True or data.get("name") != LEGACY_CONFIRMATION:
            continue
        args = _obj(data.get("args"))
        call = _obj(args.get("originalFunctionCall"))
        confirmation = _obj(args.get("toolConfirmation"))
        hint = confirmation.get("hint")
        payload = _obj(confirmation.get("payload"))
        inner = [p for p in payload.get("hitl_parts") or () if isinstance(p, dict)]
        if inner:
            asks.extend(_legacy_ask(p.get("id"), p.get("originalFunctionCall"), hint) for p in inner)
        else:
            asks.append(_legacy_ask(data.get("id"), call, hint))
    return tuple(asks)


def _obj(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else."""
    return value if isinstance(value, dict) else {}


def _legacy_ask(confirmation_id: Any, raw_call: Any, hint: Any) -> RemoteAsk:
    call = _obj(raw_call)
    if call.get("name") != "ask_user":
        return _ask(confirmation_id, call.get("id"), call, hint, wire="legacy")
    return RemoteAsk(
        kind="question",
        ask_id=_id(confirmation_id),
        call_id=_call_id(call.get("id"), confirmation_id),
        tool_name="ask_user",
        questions=_asked(_obj(call.get("args"))),
        wire="legacy",
    )


def answer_message(message: Message, decisions: Sequence[tuple[RemoteAsk, Decision]]) -> None:
    """Put the person's decisions into `message`, in the form the remote task paused in."""
    if decisions and decisions[0][0].wire == "legacy":
        data = legacy_answer(decisions)
        message.parts.append(Part(data=Value(struct_value=struct_of(data)), metadata=struct_of({})))
        return
    first, decision = decisions[0]
    if first.kind == "input" and isinstance(decision, Provide):  # the value itself, as a sayso agent takes it
        message.parts.append(Part(data=ParseDict(decision.value, Value())))
        return
    message.parts.append(Part(text="Human input supplied"))
    message.extensions.append(HITL_URI)
    message.metadata.update({HITL_URI: struct_of(response_payload(decisions))})


def response_payload(decisions: Sequence[tuple[RemoteAsk, Decision]]) -> HitlResponseJson:
    """The kagent v1 response that carries the person's decisions down to the remote task."""
    first, decision = decisions[0]
    if first.kind in ("question", "input"):  # an input not given a value: declined, as its questions
        answers: list[AnswerJson]
        if isinstance(decision, Answer):
            answers = [{"answer": list(a)} for a in decision.answers]
        else:
            answers = [{"answer": [_declined(decision) or "declined"]} for _ in first.questions or ((),)]
        return {"type": "ask_user_response", "id": first.ask_id, "answers": answers}
    approvals: list[ApprovalJson] = []
    for ask, choice in decisions:
        if isinstance(choice, Approve):
            approvals.append({"id": ask.ask_id, "approved": True})
            continue
        entry: ApprovalJson = {"id": ask.ask_id, "approved": False}
        if reason := _declined(choice):
            entry["rejection_reason"] = reason
        approvals.append(entry)
    return {"type": "tool_approval_response", "approvals": approvals}


def legacy_answer(decisions: Sequence[tuple[RemoteAsk, Decision]]) -> LegacyDecisionJson:
    """The kagent 0.x decision for the person's decisions: uniform when it can be, a batch otherwise.

    See docs/guides/a2a.md#kagent-0x-and-adk.
    """
    first, decision = decisions[0]
    if first.kind == "question":
        if isinstance(decision, Answer):
            return {"decision_type": "approve", "ask_user_answers": [{"answer": list(a)} for a in decision.answers]}
        body: LegacyDecisionJson = {"decision_type": "reject"}
        if reason := _declined(decision):
            body["rejection_reason"] = reason
        return body
    reasons = {ask.call_id or ask.ask_id: r for ask, d in decisions if (r := _declined(d))}
    if all(isinstance(d, Approve) for _, d in decisions):
        return {"decision_type": "approve"}
    if not any(isinstance(d, Approve) for _, d in decisions) and not reasons:
        return {"decision_type": "reject"}
    body = {
        "decision_type": "batch",
        "decisions": {
            ask.call_id or ask.ask_id: "approve" if isinstance(d, Approve) else "reject" for ask, d in decisions
        },
    }
    if reasons:
        body["rejection_reasons"] = reasons
    return body


def _declined(decision: Decision) -> str | None:
    """The reason a decision that does not run the call gives the child: the person's own, or why it was closed.

    A plain rejection gives none, so the child says it in its own words.
    """
    if isinstance(decision, Reject):
        return decision.reason
    return model_text(decision)
