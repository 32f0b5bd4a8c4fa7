"""sayso as a client of a remote agent's HITL: what a paused remote task asks, and the answer that goes back.

A remote agent speaks kagent's v1 extension or kagent 0.x's DataParts; which one is read from
the pause itself (the card only says whether v1 is offered). The answer goes back in the
form the pause came in. A plain rejection carries no reason: the child's model then reads its
own "declined" wording, not ours twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from a2a.types import Message, Part, TaskState, TaskStatus
from google.protobuf.struct_pb2 import Value

from ...._core.decisions import Answer, Approve, Decision, Reject
from ...._core.model_text import model_text
from ...._core.requests import Question
from ...._runtime import RemoteAsk, RemoteOutcome
from ._legacy import LEGACY_CONFIRMATION
from ._messages import data_parts, json_of, struct_of
from ._views import HITL_URI
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
            return RemoteOutcome(status="paused", task_id=task_id, context_id=context_id, text=text, asks=asks)
        return RemoteOutcome(status="input_without_hitl", task_id=task_id, context_id=context_id, text=text)
    return RemoteOutcome(status="failed", task_id=task_id, context_id=context_id, text=text or "no answer")


def asks_of(payload: Mapping[str, Any]) -> tuple[RemoteAsk, ...]:
    """What a paused remote task waits on: the *visible* tools of its v1 request (`nested.tools` when nested)."""
    nested = payload.get("nested") if isinstance(payload.get("nested"), dict) else None
    if payload.get("type") == "ask_user_request":
        if nested is not None:
            tools = nested.get("tools") or []
            ask_id = str(tools[0]["id"]) if tools else str(payload.get("id"))
        else:
            ask_id = str(payload.get("id"))
        questions = _questions(payload.get("questions"))
        return (RemoteAsk(kind="question", ask_id=ask_id, tool_name="ask_user", questions=questions),)
    if payload.get("type") == "tool_approval_request":
        tools = (nested or payload).get("tools") or []
        return tuple(
            RemoteAsk(
                kind="approval",
                ask_id=str(t["id"]),
                call_id=str(t.get("call_id") or t["id"]),
                tool_name=str(t.get("name") or "tool"),
                args=dict(t.get("args") or {}),
                hint=payload.get("hint"),
            )
            for t in tools
            if isinstance(t, dict) and t.get("id")
        )
    return ()


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
        hint = confirmation.get("hint") if isinstance(confirmation.get("hint"), str) else None
        payload = _obj(confirmation.get("payload"))
        inner = [p for p in payload.get("hitl_parts") or () if isinstance(p, dict)]
        if inner:
            asks.extend(_legacy_ask(str(p.get("id") or ""), p.get("originalFunctionCall"), hint) for p in inner)
        else:
            asks.append(_legacy_ask(str(data.get("id") or ""), call, hint))
    return tuple(a for a in asks if a.ask_id)


def _obj(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else."""
    return value if isinstance(value, dict) else {}


def _legacy_ask(confirmation_id: str, raw_call: Any, hint: str | None) -> RemoteAsk:
    call = _obj(raw_call)
    name = str(call.get("name") or "tool")
    args = _obj(call.get("args"))
    call_id = str(call.get("id") or confirmation_id)
    if name == "ask_user":
        return RemoteAsk(
            kind="question",
            ask_id=confirmation_id,
            call_id=call_id,
            tool_name="ask_user",
            questions=_questions(args.get("questions")),
            wire="legacy",
        )
    return RemoteAsk(
        kind="approval", ask_id=confirmation_id, call_id=call_id, tool_name=name, args=args, hint=hint, wire="legacy"
    )


def _questions(raw: Any) -> tuple[Question, ...]:
    return tuple(
        Question(
            question=str(q.get("question", "")),
            choices=tuple(str(c) for c in q.get("choices") or ()),
            multiple=bool(q.get("multiple", False)),
        )
        for q in raw or ()
        if isinstance(q, dict)
    )


def answer_message(message: Message, decisions: Sequence[tuple[RemoteAsk, Decision]]) -> None:
    """Put the person's decisions into `message`, in the form the remote task paused in."""
    if decisions and decisions[0][0].wire == "legacy":
        data = legacy_answer(decisions)
        message.parts.append(Part(data=Value(struct_value=struct_of(data)), metadata=struct_of({})))
        return
    message.parts.append(Part(text="Human input supplied"))
    message.extensions.append(HITL_URI)
    message.metadata.update({HITL_URI: struct_of(response_payload(decisions))})


def response_payload(decisions: Sequence[tuple[RemoteAsk, Decision]]) -> HitlResponseJson:
    """The kagent v1 response that carries the person's decisions down to the remote task."""
    first, decision = decisions[0]
    if first.kind == "question":
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
