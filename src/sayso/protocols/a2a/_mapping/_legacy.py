"""kagent 0.x's DataPart format, both ways, and ADK's FunctionResponse answer (docs/guides/a2a.md#kagent-0x-and-adk).

A 0.x pause is one `adk_request_confirmation` DataPart per pending call; a 0.x decision is a
DataPart with `decision_type` (approve, reject, batch, or ask_user_answers). An ADK client may
instead send the FunctionResponse of the confirmation itself, `{confirmed, payload}`: the
payload reaches a tool that asked from its body (`require_approval`'s `Approval.payload`).
Unlike kagent 0.x, a call that a decision leaves out is refused, never approved.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...._core.decisions import Accept, Answer, Approve, Decision, Decline, Provide, Reject, Skip
from ...._core.model_text import model_text
from ...._core.requests import ApprovalRequest, ElicitationRequest, InputRequest, QuestionRequest
from ....exceptions import InvalidInput
from ._elicitations import elicitation_from_legacy
from ._v1 import answers_of, match_ids, nested_ids, sayso_edits
from ._views import (
    PauseView,
    ShownRequest,
    delegate_call,
    delegate_hint,
    input_answer_words,
    refused,
    shown_questions,
    view_text,
)
from ._wire import (
    LegacyCallJson,
    LegacyConfirmationJson,
    LegacyConfirmationPart,
    LegacyDecisionJson,
    LegacyHitlPart,
    LegacyNestedJson,
)

LEGACY_CONFIRMATION = "adk_request_confirmation"
"""The function name of kagent 0.x's confirmation DataParts."""

LEGACY_DECISIONS = ("approve", "reject", "batch")

CALL_METADATA: dict[str, str | bool] = {
    "kagent_type": "function_call",
    "kagent_is_long_running": True,
    "adk_type": "function_call",
    "adk_is_long_running": True,
}
"""The metadata of a confirmation DataPart, under both prefixes readers look up."""


# --- agent -> client


def legacy_parts(view: PauseView) -> list[tuple[LegacyConfirmationPart, dict[str, str | bool]]]:
    """The pause as kagent 0.x wrote it: one `adk_request_confirmation` DataPart (data, metadata) per pending call."""
    if view.subagent is not None:
        hitl_parts: list[LegacyHitlPart] = [
            {"name": LEGACY_CONFIRMATION, "id": view.tool_id(r), "originalFunctionCall": _legacy_call(view, r)}
            for r in view.requests
        ]
        task_id, context_id = nested_ids(view)
        payload: LegacyNestedJson = {
            "task_id": task_id,
            "context_id": context_id,
            "subagent_name": view.subagent,
            "hitl_parts": hitl_parts,
        }
        data = _confirmation(view.parent_id, delegate_call(view), delegate_hint(view), payload)
        return [(data, dict(CALL_METADATA))]
    out: list[tuple[LegacyConfirmationPart, dict[str, str | bool]]] = []
    for request in view.requests:
        hint = request.hint if isinstance(request, ApprovalRequest) else view_text(view)
        out.append((_confirmation(view.tool_id(request), _legacy_call(view, request), hint, None), dict(CALL_METADATA)))
    return out


def _legacy_call(view: PauseView, request: ShownRequest) -> LegacyCallJson:
    if isinstance(request, QuestionRequest | ElicitationRequest | InputRequest):
        return {"name": "ask_user", "args": {"questions": shown_questions(request)}, "id": view.call_id(request)}
    return {"name": request.tool_name, "args": dict(view.args_of(request)), "id": view.call_id(request)}


def _confirmation(
    confirmation_id: str, call: LegacyCallJson, hint: str, payload: LegacyNestedJson | None
) -> LegacyConfirmationPart:
    # `payload` is always written (`null` when empty): kagent 0.x clients read it without a default.
    confirmation: LegacyConfirmationJson = {"hint": hint, "confirmed": False, "payload": payload}
    return {
        "name": LEGACY_CONFIRMATION,
        "id": confirmation_id,
        "args": {"originalFunctionCall": call, "toolConfirmation": confirmation},
    }


def legacy_decision_data(view: PauseView, decisions: Mapping[str, Decision]) -> LegacyDecisionJson | None:
    """The 0.x decision that stands for the decisions taken on a view (task history); `None` if none."""
    taken = [(r, decisions[r.request_id]) for r in view.requests if r.request_id in decisions]
    if not taken or view.kind == "elicitation":
        return None  # kagent 0.x has no form for an elicitation's answer: sayso's key carries it
    if view.kind == "input":
        ((asked, given),) = taken
        assert isinstance(asked, InputRequest)
        if not isinstance(given, Provide):
            return {"decision_type": "reject", "rejection_reason": model_text(given) or "skipped"}
        words = input_answer_words(asked, given.value)
        return {"decision_type": "approve", "ask_user_answers": [{"answer": w} for w in words]}
    if view.kind == "question":
        _, decision = taken[0]
        if isinstance(decision, Answer):
            return {"decision_type": "approve", "ask_user_answers": [{"answer": list(a)} for a in decision.answers]}
        return {"decision_type": "reject", "rejection_reason": model_text(decision) or "skipped"}
    body: LegacyDecisionJson = {
        "decision_type": "batch",
        "decisions": {view.call_id(r): "approve" if isinstance(d, Approve) else "reject" for r, d in taken},
    }
    reasons = {
        view.call_id(r): reason
        for r, d in taken
        if not isinstance(d, Approve) and (reason := d.reason if isinstance(d, Reject) else model_text(d))
    }
    if reasons:
        body["rejection_reasons"] = reasons
    return body


# --- client -> agent


@dataclass(frozen=True, kw_only=True)
class Confirmation:
    """ADK's FunctionResponse to one `adk_request_confirmation`: confirmed or not, with the client's payload."""

    confirmation_id: str
    confirmed: bool
    payload: Any = None


@dataclass(frozen=True, kw_only=True)
class LegacyInput:
    """What a 0.x message decides: a `decision_type` DataPart, or ADK FunctionResponses, or nothing."""

    decision: dict[str, Any] | None = None
    confirmations: tuple[Confirmation, ...] = field(default=())

    def __bool__(self) -> bool:
        return self.decision is not None or bool(self.confirmations)


def legacy_input(parts: Sequence[tuple[dict[str, Any], dict[str, Any]]]) -> LegacyInput:
    """What a message's DataParts (data, metadata) decide in 0.x terms; text is never a decision.

    The first DataPart whose `decision_type` is approve, reject or batch wins; otherwise every
    FunctionResponse of `adk_request_confirmation` (`{confirmed, payload}`, or ADK's
    `{"response": "<json>"}` wrapping of it) counts.

    Raises:
        InvalidInput: a FunctionResponse without a boolean `confirmed`.
    """
    confirmations: list[Confirmation] = []
    for data, _metadata in parts:
        if data.get("decision_type") in LEGACY_DECISIONS:
            return LegacyInput(decision=data)
        if data.get("name") == LEGACY_CONFIRMATION and "response" in data:
            confirmations.append(_function_response(data))
    return LegacyInput(confirmations=tuple(confirmations))


def _function_response(data: Mapping[str, Any]) -> Confirmation:
    response = data.get("response")
    if isinstance(response, dict) and set(response) == {"response"} and isinstance(response["response"], str):
        try:
            response = json.loads(response["response"])
        except ValueError:
            raise refused("the FunctionResponse's 'response' is not JSON") from None
    confirmation_id = data.get("id")
    if not isinstance(confirmation_id, str) or not confirmation_id:
        raise refused("a FunctionResponse to adk_request_confirmation needs its confirmation 'id'")
    if not isinstance(response, dict) or not isinstance(response.get("confirmed"), bool):
        raise refused(f"FunctionResponse {confirmation_id!r}: 'confirmed' must be a JSON boolean")
    return Confirmation(
        confirmation_id=confirmation_id, confirmed=response["confirmed"], payload=response.get("payload")
    )


def decisions_from_legacy(
    view: PauseView, given: LegacyInput, extras: Mapping[str, Any] | None = None
) -> list[tuple[ShownRequest, Decision]]:
    """The decisions a 0.x message takes for the shown requests, all or nothing.

    `extras` is what the message carried under sayso's own key: kagent 0.x has no room for an
    edit, so edits there are refused rather than dropped (the call would run unedited).

    Raises:
        InvalidInput: the decision does not fit the pause (`field` is `HITL_RESPONSE`).
    """
    if view.kind == "input":
        raise refused("this task waits for input: send the answer as a DataPart, or as text")
    if sayso_edits(view, extras):
        raise refused("sayso's edits and scopes go with a v1 tool_approval_response, not with kagent 0.x's decisions")
    if given.decision is None:
        return _from_confirmations(view, given.confirmations)
    data = given.decision
    decision_type = data["decision_type"]
    answers = data.get("ask_user_answers")
    if view.kind == "elicitation":
        return elicitation_from_legacy(view, decision_type, answers)
    if view.kind == "question":
        return _answers_from_legacy(view, data)
    if isinstance(answers, list):
        raise refused("this task waits for approvals, not for ask_user_answers")
    if decision_type == "approve":
        return [(r, Approve()) for r in view.requests]
    if decision_type == "reject":
        return [(r, Reject(reason=legacy_reason(data.get("rejection_reason")))) for r in view.requests]
    return _batch_from_legacy(view, data)


def _batch_from_legacy(view: PauseView, data: Mapping[str, Any]) -> list[tuple[ShownRequest, Decision]]:
    """A 0.x batch: one decision per call id shown, each reason a string; a call left out is refused."""
    decisions = data.get("decisions")
    reasons = data.get("rejection_reasons")
    if not isinstance(decisions, dict):
        raise refused("a batch needs 'decisions': {call id: approve | reject}")
    if reasons is not None and not isinstance(reasons, dict):
        raise refused("a batch's 'rejection_reasons' must be an object {call id: reason}")
    reasons = reasons or {}
    by_call = {view.call_id(r): r for r in view.requests}
    seen: list[str] = []
    chosen: dict[str, Decision] = {}
    for call_id, value in decisions.items():
        if value not in ("approve", "reject"):
            continue
        request = by_call.get(call_id)
        key = view.tool_id(request) if request else call_id
        seen.append(key)
        chosen[key] = (
            Approve()
            if value == "approve"
            else Reject(reason=legacy_reason(reasons.get(call_id), f"rejection_reasons.{call_id}"))
        )
    try:
        return match_ids(view, seen, chosen)
    except InvalidInput as exc:
        problem = exc.problem
        # The batch names calls by the model's call ids: say which calls, not which requests.
        for request in view.requests:
            problem = problem.replace(view.tool_id(request), view.call_id(request))
        raise refused(problem) from None


def _answers_from_legacy(view: PauseView, data: Mapping[str, Any]) -> list[tuple[ShownRequest, Decision]]:
    """A 0.x answer to the shown question: its `ask_user_answers`, or a reject (skip)."""
    (question,) = view.requests
    assert isinstance(question, QuestionRequest)
    answers = data.get("ask_user_answers")
    if isinstance(answers, list):
        return [(question, Answer(answers=answers_of(question, answers)))]
    if data["decision_type"] == "reject":
        return [(question, Skip(reason=legacy_reason(data.get("rejection_reason")) or "the person declined to answer"))]
    raise refused("this task waits for answers: send decision_type approve with ask_user_answers")


def _from_confirmations(view: PauseView, confirmations: Sequence[Confirmation]) -> list[tuple[ShownRequest, Decision]]:
    """ADK's FunctionResponses: one per shown confirmation id, or one for the parent's id deciding all it shows."""
    if len(confirmations) == 1 and confirmations[0].confirmation_id == view.parent_id and view.subagent is not None:
        (only,) = confirmations
        return [(r, _confirmed(r, only)) for r in view.requests]
    seen = [c.confirmation_id for c in confirmations]
    chosen: dict[str, Decision] = {}
    for confirmation in confirmations:
        request = view.request_for(confirmation.confirmation_id)
        if request is not None:
            chosen[confirmation.confirmation_id] = _confirmed(request, confirmation)
    return match_ids(view, seen, chosen)


def _confirmed(request: ShownRequest, confirmation: Confirmation) -> Decision:
    """One FunctionResponse as a decision: confirmed with its payload, or declined."""
    payload = confirmation.payload
    if isinstance(request, QuestionRequest):
        if not confirmation.confirmed:
            return Skip(reason="the person declined to answer")
        raw = payload.get("answers") if isinstance(payload, dict) else None
        return Answer(answers=answers_of(request, raw))
    if isinstance(request, ElicitationRequest):
        if not confirmation.confirmed:
            return Decline()
        content = payload.get("content") if isinstance(payload, dict) else None
        return Accept(content=content if isinstance(content, dict) else None)
    if confirmation.confirmed:
        return Approve(payload=payload)
    reason = payload.get("rejection_reason") if isinstance(payload, dict) else None
    return Reject(reason=legacy_reason(reason))


def legacy_reason(value: Any, where: str = "rejection_reason") -> str | None:
    """A 0.x rejection reason: a string (an empty one is none, as kagent drops it), or absent.

    Raises:
        InvalidInput: anything else, which kagent 0.x would drop: refused as v1 and REST refuse it.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise refused(f"'{where}' must be a string, not {value!r}")
    return value or None
