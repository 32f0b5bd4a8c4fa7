"""What one A2A pause shows of a sayso pause (`PauseView`), and the status text kagent's rules give it.

See docs/guides/a2a.md#tasks.

One A2A pause shows one kind of request: the open approvals first, then each question on its
own, then each MCP elicitation on its own, and one agent at a time; the run stays paused in
sayso until every open request is decided, so the same task pauses again for what is left.

kagent's extension has no elicitation of its own, so an elicitation is shown to kagent clients as
an `ask_user_request` they already answer (a first question "accept, decline or cancel", then one
question per form field, or "done" for a page to visit), with the structured request under our
own key; a client that reads it may answer with an `elicitation_response` (see `_elicitations`).

A workflow's `input` request has no kagent form of its own: it is shown as an `ask_user_request`
too (one question per field of an object schema, else one question), its text is the message
(kagent's generic line when it has none), and the payload and JSON Schema go under `SAYSO_KEY`
(see `_inputs` for the answer).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from pydantic.json_schema import JsonSchemaValue

from ...._core.requests import (
    ApprovalRequest,
    DelegateRequest,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    Request,
    default_hint,
    shown_args,
)
from ...._core.votes import Vote, quorum, shown_standing_args
from ...._runtime import RemoteTask
from ....exceptions import InvalidInput
from ._wire import LegacyCallJson, QuestionJson

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


ELICITATION_KEYS = ("type", "id", "action", "content")
"""The keys of sayso's own `elicitation_response`. kagent's payloads are read as its wire reference says
sayso reads them: unknown keys ignored, the known ones checked strictly; sayso's own objects (this
response, sayso's key) are checked whole, as REST checks a decision's body."""


def only_known(value: Mapping[str, Any], known: Sequence[str], what: str) -> None:
    """Refuse a key sayso's own format does not define: a misspelled key ignored would decide something else.

    Raises:
        InvalidInput: `value` has a key outside `known` (`field` is `HITL_RESPONSE`).
    """
    unknown = sorted(set(value) - set(known))
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        raise refused(f"{what} has no key {names}; its keys are {', '.join(known)}")


@dataclass(frozen=True, kw_only=True)
class PauseView:
    """What one A2A pause message shows of a sayso pause: one kind of request, from one agent."""

    kind: ShownKind
    requests: tuple[ShownRequest, ...]
    """The requests the person decides now: several approvals, or exactly one question, elicitation or input."""
    task_id: str
    """The A2A task (the top-level run) that waits."""
    subagent: str | None = None
    """The nested agent that asked, when the requests come from one: the leaf of the agent path, however
    deep (the full path is in sayso's own metadata, `agent_path`)."""
    remote: RemoteTask | None = None
    """The remote A2A task that asked, when the delegate is a remote agent: the nested block then
    names the child's own task, context and ids, as kagent's remote tool does.

    See docs/guides/a2a.md#remote-agents-as-delegates.
    """
    delegate: DelegateRequest | None = None
    """The task's own call that handed the work down (to its direct child), when the requests come from a
    nested agent and the call is known: its real name, arguments and id stand for the parent's call."""
    votes: Mapping[str, tuple[Vote, ...]] = dataclasses.field(default_factory=dict)
    """The votes cast on the shown requests that need several approvals, by request id (docs/guides/routing.md)."""

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

    def args_of(self, request: ShownRequest) -> Mapping[str, Any]:
        """The arguments a shown call is approved with now: after an edited vote, the edit (docs/guides/routing.md)."""
        return shown_standing_args(request, self.votes.get(request.request_id, ()))

    def visible_ids(self) -> list[str]:
        """The ids a response must carry: one per shown request."""
        return [self.tool_id(r) for r in self.requests]

    def request_for(self, tool_id: str) -> ShownRequest | None:
        """The shown request a client's id names, if any."""
        return next((r for r in self.requests if self.tool_id(r) == tool_id), None)


def pause_view(
    task_id: str, open_requests: Sequence[Request], *, depth: int = 0, delegates: Sequence[DelegateRequest] = ()
) -> PauseView | None:
    """The part of a pause to show now, or `None` when nothing open can be answered over A2A.

    Approvals come before questions (kagent cannot mix them in one pause), and requests of one
    agent path at a time (one `nested` block per pause). `depth` is how deep the task's own run
    sits (0 for a top-level run; a delegate's task read on its own endpoint is deeper), so the
    nested block names the agent that asked, below the task. `delegates` are the tree's delegate
    calls, from which the task's own call to its direct child is found. Whether the asker is
    remote is the caller's to add (`remote`), as it needs a read.
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
    if len(parts) <= depth + 1:
        return PauseView(kind=kind, requests=shown, task_id=task_id)
    return PauseView(
        kind=kind,
        requests=shown,
        task_id=task_id,
        subagent=parts[-1],
        delegate=_call_below(task_id, shown[0].run_id, delegates),
    )


def _call_below(task_id: str, run_id: str, delegates: Sequence[DelegateRequest]) -> DelegateRequest | None:
    """The task's own delegate call whose work `run_id` is part of (walking up the tree), if the calls show it."""
    by_child = {d.child_run_id: d for d in delegates}
    call = by_child.get(run_id)
    while call is not None and call.run_id != task_id:
        call = by_child.get(call.run_id)
    return call


def views_of(task_id: str, requests: Sequence[Request], *, depth: int = 0) -> list[PauseView]:
    """Every view one sayso pause is shown as, in turn (approvals, then each question, elicitation, input).

    `requests` may hold the tree's delegate calls too: they name the task's call in nested views.
    """
    views: list[PauseView] = []
    delegates = [r for r in requests if isinstance(r, DelegateRequest)]
    left = list(requests)
    while (view := pause_view(task_id, left, depth=depth, delegates=delegates)) is not None:
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
    args: Mapping[str, Any]


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
    """The questions of a question request, or those an elicitation or a workflow's input is shown as."""
    if isinstance(request, QuestionRequest):
        return questions_json(request)
    if isinstance(request, InputRequest):
        return input_questions(request)
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


def input_fields(request: InputRequest) -> dict[str, JsonSchemaValue] | None:
    """The fields of an input asked field by field (an object schema with properties), or `None`: one answer."""
    schema = request.response_schema
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict):
        return None
    fields = {str(k): v for k, v in properties.items() if isinstance(v, dict)}
    return fields or None


def field_type(field: JsonSchemaValue) -> Any:
    """A field's JSON type, looking through `anyOf` with null (pydantic's optional fields)."""
    if "type" in field:
        return field["type"]
    options = [o for o in field.get("anyOf", []) if isinstance(o, dict) and o.get("type") != "null"]
    return options[0].get("type") if len(options) == 1 else None


def field_choices(field: JsonSchemaValue) -> list[str]:
    """The choices a field offers: its enum (through `anyOf`), `true`/`false` for a boolean, else none."""
    options = [field, *(o for o in field.get("anyOf", []) if isinstance(o, dict))]
    enum = [str(v) for o in options for v in o.get("enum", []) if v is not None]
    return enum or (["true", "false"] if field_type(field) == "boolean" else [])


def input_questions(request: InputRequest) -> list[QuestionJson]:
    """A workflow's input as kagent questions: the message, then one question per field (or the message alone)."""
    fields = input_fields(request)
    if fields is None:
        choices = field_choices(request.response_schema)
        return [{"question": request.message or GENERIC_TEXT, "choices": choices, "multiple": False}]
    required = set(request.response_schema.get("required", []))
    questions: list[QuestionJson] = []
    for index, (name, field) in enumerate(fields.items()):
        text = f"{field.get('title') or name}{'' if name in required else ' (optional: answer - to leave it out)'}"
        if field.get("description"):
            text += f": {field['description']}"
        if index == 0 and request.message:
            text = f"{request.message}\n\n{text}"
        questions.append({"question": text, "choices": field_choices(field), "multiple": field_type(field) == "array"})
    return questions


def input_answer_words(request: InputRequest, value: Any) -> list[list[str]]:
    """A value given to an input, as the answers to its questions would have said it (task history)."""

    def words(item: Any) -> list[str]:
        if isinstance(item, list):
            return [w for v in item for w in words(v)]
        if isinstance(item, str):
            return [item]
        return [json.dumps(item, ensure_ascii=False)]

    fields = input_fields(request)
    if fields is None or not isinstance(value, dict):
        return [words(value)]
    return [words(value[name]) if name in value and value[name] is not None else ["-"] for name in fields]


def _pending(view: PauseView) -> list[_Pending]:
    """The top-level pending operations of a view: the shown calls, or the one call to the delegate."""
    if view.subagent is not None:
        return [_Pending(name=delegate_name(view), hint=delegate_hint(view), args={})]
    if view.kind in ("question", "elicitation"):
        return [_Pending(name="ask_user", hint=None, args={"questions": shown_questions(view.requests[0])})]
    return [_Pending(name=r.tool_name, hint=own_hint(r), args=view.args_of(r)) for r in approvals_of(view)]


def delegate_name(view: PauseView) -> str:
    """The name of the task's pending call in a nested view: its call to the direct child (or the asker's name)."""
    assert view.subagent is not None
    return view.delegate.tool_name if view.delegate is not None else view.subagent


def delegate_call(view: PauseView) -> LegacyCallJson:
    """The task's pending call in a nested view, as kagent shows the parent's call: `{name, args, id}`."""
    if view.delegate is not None:
        return {"name": view.delegate.tool_name, "args": shown_args(view.delegate), "id": view.delegate.tool_call_id}
    return {"name": delegate_name(view), "args": {}, "id": view.parent_id}


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


def not_an_answer(task_id: str, context_id: str, view: PauseView | None, why: str) -> InvalidInput:
    """The refusal of a message to a waiting task that answers nothing: what the task waits for, how to move on.

    kagent keeps such a task waiting (it is no decision); the person moves on with a new message on
    the context, without the task id, which supersedes the pause (docs/concepts/decisions.md#resume-rules).
    """
    waits = {
        "approval": "a tool_approval_response",
        "question": "an ask_user_response",
        "elicitation": "an ask_user_response (or an elicitation_response)",
        "input": "the input, as a DataPart or text",
    }
    wanted = waits[view.kind] if view is not None else "a person's decision elsewhere (REST, the web UI or the CLI)"
    return refused(
        f"{why}; task {task_id!r} waits for {wanted} to: {view_text(view)!r}. To move on instead, "
        f"send a new message on context {context_id!r} without taskId"
    )


def view_text(view: PauseView | None) -> str:
    """The status text of a pause showing `view` (the generic line when there is nothing to show)."""
    if view is not None and view.kind == "input":
        (request,) = view.requests
        assert isinstance(request, InputRequest)
        return request.message or GENERIC_TEXT
    if view is None:
        return GENERIC_TEXT
    return status_text(_pending(view)) + "".join(_standing(view, r) for r in view.requests)


def _standing(view: PauseView, request: ShownRequest) -> str:
    """` · approvals: 1 of 2, waiting for sre` for a shown request that needs several approvals."""
    routing = request.routing
    if routing is None or routing.approvals_required < 2:
        return ""
    votes = view.votes.get(request.request_id, ())
    return f" · approvals: {quorum(routing, votes, starter=request.principal, proposed=request.args).text}"
