"""What one A2A pause shows of a sayso pause (`PauseView`), and the status text kagent's rules give it.

See docs/guides/a2a.md#tasks.

One A2A pause shows one kind of request: the open approvals first, then each question on its
own, then each MCP elicitation on its own, and one agent at a time; the run stays paused in
sayso until every open request is decided, so the same task pauses again for what is left.

kagent's extension has no elicitation of its own, so an elicitation is shown to kagent clients as
an `ask_user_request` they already answer (a first question "accept, decline or cancel", then one
question per form field, or "done" for a page to visit), with the structured request under our
own key; a client that reads it may answer with an `elicitation_response` (see `_elicitations`).

A workflow's `input` request has no kagent form: its pause's text is the message, and the
payload and JSON Schema go under `SAYSO_KEY` (see `_inputs` for the answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ...._core.requests import (
    ApprovalRequest,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    Request,
    default_hint,
    shown_args,
)
from ...._runtime import RemoteTask
from ....exceptions import InvalidInput
from ._wire import QuestionJson

HITL_URI = "https://kagent.dev/extensions/hitl/v1"
"""kagent's human-in-the-loop extension, v1."""

SAYSO_KEY = "https://sayso.dev/extensions/requests/v1"
"""Our own metadata key, next to kagent's payload: what kagent's strict models have no field for."""

EXTENSION_DESCRIPTION = "Human in the loop for tool approval, ask user, and nested subagents"

GENERIC_TEXT = "Human input is required before the agent can continue."
"""The status text of a pause that carries no tool call (kagent's status-text rule 5; docs/guides/a2a.md#tasks)."""

HITL_RESPONSE = "hitl_response"
"""The `field` of an `InvalidInput` raised for a HITL response that does not answer its pause."""

ShownRequest: TypeAlias = ApprovalRequest | QuestionRequest | ElicitationRequest | InputRequest

ShownKind: TypeAlias = Literal["approval", "question", "elicitation", "input"]


def refused(problem: str) -> InvalidInput:
    """The error for a HITL response that does not answer the pause it was sent to; nothing was recorded."""
    return InvalidInput(problem, field=HITL_RESPONSE)


@dataclass(frozen=True, kw_only=True)
class PauseView:
    """What one A2A pause message shows of a sayso pause: one kind of request, from one agent."""

    kind: ShownKind
    requests: tuple[ShownRequest, ...]
    """The requests the person decides now: several approvals, or exactly one question, elicitation or input."""
    task_id: str
    """The A2A task (the top-level run) that waits."""
    subagent: str | None = None
    """The top-level agent's delegate that asked, when the requests come from a nested agent."""
    remote: RemoteTask | None = None
    """The remote A2A task that asked, when the delegate is a remote agent: the nested block then
    names the child's own task, context and ids, as kagent's remote tool does.

    See docs/guides/a2a.md#remote-agents-as-delegates.
    """

    @property
    def parent_id(self) -> str:
        """The id kagent's `nested` form gives the parent's call; clients never send it back."""
        return f"{self.task_id}/{self.subagent}"

    def tool_id(self, request: ShownRequest) -> str:
        """The id a client sends back for a shown request: the remote child's own id, or the request's."""
        return request.tool_call_id if self.remote is not None else request.request_id

    def call_id(self, request: ShownRequest) -> str:
        """The model's id for the call behind a shown request (the remote model's, for a remote child)."""
        if self.remote is not None and isinstance(request, ApprovalRequest) and isinstance(request.payload, dict):
            remote_call = request.payload.get("call_id")
            if isinstance(remote_call, str) and remote_call:
                return remote_call
        return request.tool_call_id

    def visible_ids(self) -> list[str]:
        """The ids a response must carry: one per shown request."""
        return [self.tool_id(r) for r in self.requests]

    def request_for(self, tool_id: str) -> ShownRequest | None:
        """The shown request a client's id names, if any."""
        return next((r for r in self.requests if self.tool_id(r) == tool_id), None)


def pause_view(task_id: str, open_requests: Sequence[Request], *, depth: int = 0) -> PauseView | None:
    """The part of a pause to show now, or `None` when nothing open can be answered over A2A.

    Approvals come before questions (kagent cannot mix them in one pause), and requests of one
    agent path at a time (one `nested` block per pause). `depth` is how deep the task's own run
    sits (0 for a top-level run; a delegate's task read on its own endpoint is deeper), so the
    nested block names the task's direct child. Whether that child is remote is the caller's to
    add (`remote`), as it needs a read.
    """
    approvals = [r for r in open_requests if isinstance(r, ApprovalRequest)]
    questions = [r for r in open_requests if isinstance(r, QuestionRequest)]
    elicitations = [r for r in open_requests if isinstance(r, ElicitationRequest)]
    inputs = [r for r in open_requests if isinstance(r, InputRequest)]
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
    elif inputs:
        return PauseView(kind="input", requests=(inputs[0],), task_id=task_id)
    else:
        return None
    parts = path.split("/")
    subagent = parts[depth + 1] if len(parts) > depth + 1 else None
    return PauseView(kind=kind, requests=shown, task_id=task_id, subagent=subagent)


def views_of(task_id: str, requests: Sequence[Request], *, depth: int = 0) -> list[PauseView]:
    """Every view one sayso pause is shown as, in turn (approvals, then each question, elicitation, input)."""
    views: list[PauseView] = []
    left = list(requests)
    while (view := pause_view(task_id, left, depth=depth)) is not None:
        views.append(view)
        shown = {r.request_id for r in view.requests}
        left = [r for r in left if r.request_id not in shown]
    return views


# --- status text (kagent's rule; docs/guides/a2a.md#tasks)


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


def own_hint(request: ApprovalRequest) -> str | None:
    """The tool's own hint; sayso's default wording counts as none, as kagent's text rules expect."""
    return None if request.hint == default_hint(request.tool_name) else request.hint


def questions_json(request: QuestionRequest) -> list[QuestionJson]:
    """A question request's questions as kagent writes them."""
    return [{"question": q.question, "choices": list(q.choices), "multiple": q.multiple} for q in request.questions]


ELICITATION_ACTIONS = ("accept", "decline", "cancel")


def shown_questions(request: ShownRequest) -> list[QuestionJson]:
    """The questions of a question request, or those an elicitation is shown as to a kagent client."""
    if isinstance(request, QuestionRequest):
        return questions_json(request)
    assert isinstance(request, ElicitationRequest)
    if request.mode == "url":
        question = f"{request.message} Visit {request.url}, then answer done (or decline, or cancel)."
        return [{"question": question, "choices": ["done", "decline", "cancel"], "multiple": False}]
    schema = request.requested_schema or {}
    required = set(schema.get("required", []))
    questions: list[QuestionJson] = [
        {"question": request.message, "choices": list(ELICITATION_ACTIONS), "multiple": False}
    ]
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


def _pending(view: PauseView) -> list[_Pending]:
    """The top-level pending operations of a view: the shown calls, or the one call to the delegate."""
    if view.subagent is not None:
        return [_Pending(name=view.subagent, hint=delegate_hint(view), args={})]
    if view.kind in ("question", "elicitation"):
        return [_Pending(name="ask_user", hint=None, args={"questions": shown_questions(view.requests[0])})]
    return [_Pending(name=r.tool_name, hint=own_hint(r), args=shown_args(r)) for r in approvals_of(view)]


def delegate_hint(view: PauseView) -> str:
    """The hint of a delegate's pause: kagent's remote-agent wording for a remote child, ours for a local one."""
    who = f"Remote agent '{view.subagent}'" if view.remote is not None else f"Agent '{view.subagent}'"
    if view.kind == "elicitation":
        (asked,) = view.requests
        assert isinstance(asked, ElicitationRequest)
        return f"{who} asks: {asked.message}"
    if view.kind == "question":
        (question,) = view.requests
        assert isinstance(question, QuestionRequest)
        return f"{who} asks: {' '.join(q.question for q in question.questions)}"
    names = ", ".join(r.tool_name for r in view.requests)
    return f"{who} requires approval for tool(s): {names}"


def approvals_of(view: PauseView) -> list[ApprovalRequest]:
    """The approvals a view shows."""
    return [r for r in view.requests if isinstance(r, ApprovalRequest)]


def view_text(view: PauseView | None) -> str:
    """The status text of a pause showing `view` (the generic line when there is nothing to show)."""
    if view is not None and view.kind == "input":
        (request,) = view.requests
        assert isinstance(request, InputRequest)
        return request.message
    return status_text(_pending(view)) if view is not None else GENERIC_TEXT
