"""An MCP elicitation over A2A, client -> agent: the decision a kagent answer (or sayso's own) takes.

A pause shows an elicitation as an `ask_user_request` (`_views.shown_questions`): the action
first, then one question per form field, or "done" for a page. kagent clients answer it as they
answer questions (v1 `ask_user_response`, or 0.x `ask_user_answers`); a client that reads sayso's
key may instead send an `elicitation_response` `{type, id, action, content?}`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...._core.decisions import Accept, Cancel, Decision, Decline
from ...._core.requests import ElicitationRequest
from ._views import ELICITATION_ACTIONS, PauseView, ShownRequest, refused, shown_questions

ELICITATION_RESPONSE = "elicitation_response"
"""sayso's own response type for an elicitation: `{type, id, action, content?}`."""


def elicitation_from_answers(request: ElicitationRequest, answers: Sequence[Sequence[str]]) -> Decision:
    """The decision answers to an elicitation's questions take: the action first, then each field's value.

    Values are read by the field's type (numbers, booleans; `-` leaves an optional field out);
    the runtime then checks the content against the schema and names any field still wrong.

    Raises:
        InvalidInput: the answers do not fit the questions (`field` is `HITL_RESPONSE`).
    """
    expected = len(shown_questions(request))
    if len(answers) != expected:
        raise refused(f"expected {expected} answer(s), one per question, got {len(answers)}")
    action = (answers[0][0] if answers[0] else "").strip().lower()
    if request.mode == "url":
        action = {"done": "accept"}.get(action, action)
    if action not in ELICITATION_ACTIONS:
        raise refused(f"the first answer must be one of {', '.join(ELICITATION_ACTIONS)}, not {action!r}")
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


def elicitation_from_v1(view: PauseView, payload: Mapping[str, Any]) -> list[tuple[ShownRequest, Decision]]:
    """The decision a v1 `ask_user_response` or sayso's `elicitation_response` takes for the shown elicitation."""
    (asked,) = view.requests
    assert isinstance(asked, ElicitationRequest)
    expected = view.tool_id(asked)
    if payload.get("id") != expected:
        parent = " (the parent's id is never sent back)" if payload.get("id") == view.parent_id else ""
        raise refused(f"invalid correlation: the answer's id must be {expected!r}{parent}")
    if payload.get("type") == "ask_user_response":
        return [(asked, elicitation_from_answers(asked, answer_lists(payload.get("answers"))))]
    action, content = payload.get("action"), payload.get("content")
    if action not in ELICITATION_ACTIONS:
        raise refused(f"'action' must be one of {', '.join(ELICITATION_ACTIONS)}, not {action!r}")
    if content is not None and not isinstance(content, dict):
        raise refused("'content' must be an object of the form's fields")
    if action == "decline":
        return [(asked, Decline())]
    if action == "cancel":
        return [(asked, Cancel())]
    return [(asked, Accept(content=content))]


def elicitation_from_legacy(view: PauseView, decision_type: str, answers: Any) -> list[tuple[ShownRequest, Decision]]:
    """The decision a kagent 0.x message takes for the shown elicitation: its answers, or a reject (decline)."""
    (asked,) = view.requests
    assert isinstance(asked, ElicitationRequest)
    if isinstance(answers, list):
        return [(asked, elicitation_from_answers(asked, answer_lists(answers)))]
    if decision_type == "reject":
        return [(asked, Decline())]
    raise refused("this task waits for what a server asked: send decision_type approve with ask_user_answers")


def answer_lists(raw: Any) -> list[list[str]]:
    """The words of kagent's positional `[{answer: [...]}]`, one list per question."""
    if not isinstance(raw, list):
        raise refused("'answers' must be a list of {answer: [string, ...]}, one per question")
    lists = [entry.get("answer") if isinstance(entry, dict) else None for entry in raw]
    if not all(isinstance(values, list) and all(isinstance(v, str) for v in values) for values in lists):
        raise refused("each answer must be an object {answer: [string, ...]}")
    return [list(values) for values in lists if isinstance(values, list)]
