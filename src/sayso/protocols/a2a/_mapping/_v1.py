"""kagent's HITL extension v1 payloads, both ways: pause requests out, responses in (docs/guides/a2a.md#tasks).

A response decides exactly the requests a pause showed (every id once, no other): kagent's
strict order of checks. What kagent's strict models have no field for (an edit of the
arguments, a wider scope) travels under sayso's own key beside kagent's payload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any, cast

from ...._core.decisions import Answer, Approve, Decision, Provide, Reject
from ...._core.model_text import model_text
from ...._core.requests import (
    SCOPES_BY_WIDTH,
    ApprovalRequest,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    RuleTerms,
)
from ...._runtime import routing_json
from ._elicitations import ELICITATION_RESPONSE, elicitation_from_v1
from ._views import (
    ELICITATION_KEYS,
    HITL_RESPONSE,
    SAYSO_KEY,
    PauseView,
    ShownRequest,
    approvals_of,
    delegate_call,
    input_answer_words,
    only_known,
    refused,
    shown_questions,
    view_text,
)
from ._wire import (
    ApprovalJson,
    HitlRequestJson,
    HitlResponseJson,
    NestedJson,
    SaysoPayloadJson,
    SaysoRequestJson,
    ToolCallJson,
    ToolInfoJson,
)

SAYSO_KEYS = ("approvals",)
"""What a client may send under sayso's own key."""

EDIT_KEYS = ("edited_args", "scope", "payload")
"""The keys of one approval under sayso's key (REST's approve body, but for its kind)."""

RESPONSE_TYPES = {
    "approval": "tool_approval_response",
    "question": "ask_user_response",
    "elicitation": "ask_user_response",
    "input": "ask_user_response",
}

__all__ = [
    "HITL_RESPONSE",
    "decisions_from_v1",
    "refused",
    "request_payload",
    "response_of",
    "sayso_edits",
    "sayso_payload",
]


# --- agent -> client


def _tool_json(view: PauseView, request: ApprovalRequest) -> ToolCallJson:
    return {
        "id": view.tool_id(request),
        "call_id": view.call_id(request),
        "name": request.tool_name,
        "args": dict(view.args_of(request)),
    }


def _ask_tool_json(view: PauseView, request: QuestionRequest | ElicitationRequest) -> ToolCallJson:
    """The synthetic tool a nested question (or elicitation) is shown as (kagent's identifiers; docs/guides/a2a.md)."""
    return {
        "id": view.tool_id(request),
        "call_id": view.tool_id(request),
        "name": "ask_user",
        "args": {"questions": shown_questions(request)},
    }


def nested_ids(view: PauseView) -> tuple[str, str]:
    """The child's task and context a nested block names: the remote task's own, or the delegate's run."""
    if view.remote is not None:
        return view.remote.task_id, view.remote.context_id
    first = view.requests[0]
    return first.run_id, first.thread_id


def request_payload(view: PauseView) -> HitlRequestJson:
    """The `tool_approval_request` or `ask_user_request` for a view, with no key beyond kagent's schema."""
    first = view.requests[0]
    nested: NestedJson | None = None
    if view.subagent is not None:
        child_tools = (
            [_tool_json(view, r) for r in approvals_of(view)]
            if view.kind == "approval"
            else [_ask_tool_json(view, r) for r in view.requests if isinstance(r, QuestionRequest | ElicitationRequest)]
        )
        task_id, context_id = nested_ids(view)
        nested = {"subagent_name": view.subagent, "task_id": task_id, "context_id": context_id, "tools": child_tools}
    if view.kind in ("question", "elicitation", "input"):
        body: HitlRequestJson = {
            "type": "ask_user_request",
            "id": view.parent_id if nested else first.request_id,
            "questions": shown_questions(first),
        }
    else:
        if nested:
            call = delegate_call(view)
            tools: list[ToolCallJson] = [
                {"id": view.parent_id, "call_id": call["id"], "name": call["name"], "args": call["args"]}
            ]
        else:
            tools = [_tool_json(view, r) for r in approvals_of(view)]
        body = {"type": "tool_approval_request", "hint": view_text(view), "tools": tools}
    if nested is not None:
        body["nested"] = nested
    return body


def sayso_payload(view: PauseView) -> SaysoPayloadJson:
    """The facts sayso adds about the shown requests, under `SAYSO_KEY`: subject, scopes, expiry, who asked."""
    entries: list[SaysoRequestJson] = []
    for request in view.requests:
        entry: SaysoRequestJson = {
            "id": view.tool_id(request),
            "request_id": request.request_id,
            "kind": request.kind,
            "agent_path": request.agent_path,
            "run_id": request.run_id,
            "expires_at": request.expires_at,
        }
        if isinstance(request, ApprovalRequest):
            entry["subject"] = {"key": request.subject.key, "label": request.subject.label} if request.subject else None
            entry["scopes"] = list(request.scopes)
            entry["hint"] = request.hint
            entry["args_schema"] = request.args_schema
            entry["tool"] = cast(ToolInfoJson, asdict(request.tool_info)) if request.tool_info is not None else None
            if request.response_schema is not None:
                entry["response_schema"] = request.response_schema
        elif isinstance(request, ElicitationRequest):
            entry["mode"], entry["message"], entry["server"] = request.mode, request.message, request.server
            entry["requested_schema"], entry["url"] = request.requested_schema, request.url
            entry["durable"], entry["respond_with"] = request.delivery != "live", ELICITATION_RESPONSE
        elif isinstance(request, InputRequest):
            entry["node"], entry["message"] = request.node, request.message
            entry["payload"], entry["response_schema"] = request.payload, request.response_schema
        if isinstance(request, RuleTerms) and request.why is not None:
            entry["why"], entry["rule"] = request.why, request.rule
        if request.routing is not None:
            routed = routing_json(request, view.votes.get(request.request_id, ()))
            entry["approvers"] = routed["approvers"]
            if "quorum" in routed:
                entry["quorum"] = routed["quorum"]
        entries.append(entry)
    return {"requests": entries}


def response_of(view: PauseView, decisions: Mapping[str, Decision]) -> HitlResponseJson | None:
    """The v1 response that stands for the decisions taken on a view, however they were taken (task history).

    `None` when kagent has no form for them (a question or input that was skipped, or expired; an
    elicitation, whose answer sayso's key carries).
    """
    if view.kind == "elicitation":
        return None
    if view.kind == "input":
        (asked,) = view.requests
        assert isinstance(asked, InputRequest)
        given = decisions.get(asked.request_id)
        if not isinstance(given, Provide):
            return None
        words = input_answer_words(asked, given.value)
        return {"type": "ask_user_response", "id": asked.request_id, "answers": [{"answer": w} for w in words]}
    if view.kind == "question":
        (question,) = view.requests
        decision = decisions.get(question.request_id)
        if not isinstance(decision, Answer):
            return None
        return {
            "type": "ask_user_response",
            "id": view.tool_id(question),
            "answers": [{"answer": list(a)} for a in decision.answers],
        }
    approvals: list[ApprovalJson] = []
    for request in view.requests:
        decision = decisions.get(request.request_id)
        if decision is None:
            continue
        if isinstance(decision, Approve):
            approvals.append({"id": view.tool_id(request), "approved": True})
            continue
        refusal: ApprovalJson = {"id": view.tool_id(request), "approved": False}
        reason = decision.reason if isinstance(decision, Reject) else model_text(decision)
        if reason:
            refusal["rejection_reason"] = reason
        approvals.append(refusal)
    return {"type": "tool_approval_response", "approvals": approvals} if approvals else None


# --- client -> agent


def decisions_from_v1(
    view: PauseView, payload: Mapping[str, Any], extras: Mapping[str, Any] | None = None
) -> list[tuple[ShownRequest, Decision]]:
    """The decisions a v1 response takes for the shown requests, all or nothing.

    kagent's keys are read as its wire reference says sayso reads them: unknown ones ignored, the
    known ones checked strictly. `extras` is what the message carried under sayso's own key:
    per shown id, `edited_args`, `scope` or `payload` for an approval (checked by the runtime like
    any decision: an edit must fit the tool's schema and subject).

    Raises:
        InvalidInput: the response does not decide exactly the shown requests, or is malformed
            (`field` is `HITL_RESPONSE`).
    """
    if view.kind == "input":
        raise refused("this task waits for input: send the answer as a DataPart, or as text")
    edits = sayso_edits(view, extras)
    kind = payload.get("type")
    expected = RESPONSE_TYPES[view.kind]
    if view.kind == "elicitation" and kind in (expected, ELICITATION_RESPONSE):
        if kind == ELICITATION_RESPONSE:  # sayso's own type, read as strictly as its key
            only_known(payload, ELICITATION_KEYS, f"a {kind}")
        return elicitation_from_v1(view, payload)
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
        if not approved and tool_id in edits:
            raise refused(f"approval {tool_id!r}: an edit or a scope goes with an approval, not a rejection")
        seen.append(tool_id)
        chosen[tool_id] = edits.get(tool_id, Approve()) if approved else Reject(reason=reason or None)
    return match_ids(view, seen, chosen)


def sayso_edits(view: PauseView, extras: Mapping[str, Any] | None) -> dict[str, Approve]:
    """The approvals sayso's key carries (`{"approvals": {id: {edited_args?, scope?, payload?}}}`), by shown id.

    Checked as REST checks a decision's body: a key it does not define, or a value of the wrong
    shape, refuses the whole message, since the call it would have edited must not run unedited.

    Raises:
        InvalidInput: an unknown key, a wrong shape, an id the pause does not show, or approvals
            under sayso's key for a pause that asks no approval (`field` is `HITL_RESPONSE`).
    """
    if extras is None:
        return {}
    only_known(extras, SAYSO_KEYS, f"sayso's {SAYSO_KEY!r}")
    entries = extras.get("approvals")
    if entries is None:
        return {}
    if not isinstance(entries, dict):
        raise refused("sayso's 'approvals' must be an object: {id: {edited_args?, scope?, payload?}}")
    if entries and view.kind != "approval":
        raise refused(f"sayso's 'approvals' edit approvals; this task waits for a {RESPONSE_TYPES[view.kind]}")
    known = set(view.visible_ids())
    out: dict[str, Approve] = {}
    for tool_id, entry in entries.items():
        if tool_id not in known:
            raise refused(f"sayso's approvals name {tool_id!r}, which this pause does not show")
        if not isinstance(entry, dict):
            raise refused(f"sayso's approval {tool_id!r} must be an object {{edited_args?, scope?, payload?}}")
        only_known(entry, EDIT_KEYS, f"sayso's approval {tool_id!r}")
        edited, scope = entry.get("edited_args"), entry.get("scope", "once")
        if edited is not None and not isinstance(edited, dict):
            raise refused(f"sayso's approval {tool_id!r}: 'edited_args' must be an object")
        if scope not in SCOPES_BY_WIDTH:
            raise refused(f"sayso's approval {tool_id!r}: 'scope' must be once, thread or always")
        out[tool_id] = Approve(scope=scope, edited_args=edited, payload=entry.get("payload"))
    return out


def match_ids(
    view: PauseView, seen: Sequence[str], chosen: Mapping[str, Decision]
) -> list[tuple[ShownRequest, Decision]]:
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
    return [(r, chosen[view.tool_id(r)]) for r in view.requests]


def _answer_from_v1(view: PauseView, payload: Mapping[str, Any]) -> list[tuple[ShownRequest, Decision]]:
    (question,) = view.requests
    assert isinstance(question, QuestionRequest)
    expected = view.tool_id(question)
    if payload.get("id") != expected:
        parent = " (the parent's id is never sent back)" if payload.get("id") == view.parent_id else ""
        raise refused(f"invalid correlation: the answer's id must be {expected!r}{parent}")
    return [(question, Answer(answers=answers_of(question, payload.get("answers"))))]


def answers_of(question: QuestionRequest, raw: Any) -> tuple[tuple[str, ...], ...]:
    """The answers of kagent's positional `[{answer: [...]}]`, one per question."""
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
