"""Answers to requests, and the rules that check an answer against its request.

Everything here is pure: `check_decision` either returns the decision to record or raises
an error naming the problem, and the caller does the I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, TypeAlias

from pydantic import BeforeValidator, Discriminator, TypeAdapter
from pydantic.json_schema import JsonSchemaValue
from typing_extensions import TypedDict

from ..exceptions import AlreadyDecided, InvalidDecision, RequestExpired
from .escalation import shown_duration
from .finite import non_finite
from .inputs import form_formats, input_field_problems
from .requests import (
    DEFERRED,
    REDACTED,
    ApprovalRequest,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    Request,
    RuleTerms,
    Scope,
    redacted,
)

DecidedBy: TypeAlias = Literal["person", "permission", "service", "expiry", "system"]
"""Who took a decision: a person, a remembered grant, a service, the expiry sweep, or sayso itself."""

Via: TypeAlias = Literal["python", "cli", "rest", "web", "a2a", "ag-ui", "mcp", "email", "slack"]
"""The interface a person's decision (or what they closed unanswered) came through: "Approved by alice (CLI)"."""

VIA_LABELS: dict[str, str] = {
    "python": "Python",
    "cli": "CLI",
    "rest": "REST",
    "web": "web UI",
    "a2a": "A2A",
    "ag-ui": "AG-UI",
    "mcp": "MCP",
    "email": "email",
    "slack": "Slack",
}
"""How each interface is named to a person."""


@dataclass(frozen=True, kw_only=True)
class Approve:
    """Run the call, optionally with edited arguments, and optionally remember the approval."""

    kind: Literal["approve"] = "approve"
    scope: Scope = "once"
    edited_args: dict[str, Any] | None = None
    """Arguments to run instead of the proposed ones; validated against the tool's schema."""
    payload: Any = None
    """Data the person sends back with the approval (ADK's confirmation payload). Where the tool asked from its
    body with a `response_schema` it is feedback checked against that schema (read as `Approval.response`);
    otherwise it goes unchecked. A body reads it as `Approval.payload` instead of the payload it attached."""


@dataclass(frozen=True, kw_only=True)
class Reject:
    """Do not run the call; the model reads the reason."""

    kind: Literal["reject"] = "reject"
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class Skip:
    """Do not run the call and do not answer the question; the model reads why."""

    kind: Literal["skip"] = "skip"
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class Answer:
    """Answers to an `ask_user` request, one list of strings per question, in order."""

    kind: Literal["answer"] = "answer"
    answers: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, kw_only=True)
class ClientResult:
    """The value a client tool returned."""

    kind: Literal["client_result"] = "client_result"
    value: Any


@dataclass(frozen=True, kw_only=True)
class ClientError:
    """The error a client tool reported; the model reads it."""

    kind: Literal["client_error"] = "client_error"
    message: str


@dataclass(frozen=True, kw_only=True)
class Accept:
    """Give an MCP server what it asked for: the form's content, or (URL mode, no content) "done"."""

    kind: Literal["accept"] = "accept"
    content: dict[str, Any] | None = None
    """Form mode: values that fit the requested schema. URL mode: `None`, the page was visited."""


@dataclass(frozen=True, kw_only=True)
class Decline:
    """Refuse what an MCP server asked for; the server decides how its tool goes on."""

    kind: Literal["decline"] = "decline"


@dataclass(frozen=True, kw_only=True)
class Cancel:
    """Dismiss what an MCP server asked for without choosing; the server decides how its tool goes on."""

    kind: Literal["cancel"] = "cancel"


@dataclass(frozen=True, kw_only=True)
class Provide:
    """The value a person gives for an `input` request; checked against the request's response schema."""

    kind: Literal["provide"] = "provide"
    value: Any
    """The answer as JSON (an object for a model, a string for `str`, ...)."""


@dataclass(frozen=True, kw_only=True)
class Expired:
    """Recorded by the expiry sweep, never sent by a person: the request's time ran out."""

    kind: Literal["expired"] = "expired"
    expires_at: float
    reason: str | None = None
    """What the rule's `on_timeout` says about it, read by the model with the expiry."""


LEGACY_KINDS: Mapping[str, str] = {"result": "client_result", "error": "client_error"}
"""A client tool's answer's older tags (stored decisions and older clients still say them): read as today's."""


def current_kind(raw: Any) -> Any:
    """A decision as JSON with an older tag (`result`, `error`) renamed to today's; anything else unchanged."""
    if isinstance(raw, Mapping) and isinstance(kind := raw.get("kind"), str) and kind in LEGACY_KINDS:
        return {**raw, "kind": LEGACY_KINDS[kind]}
    return raw


Decision: TypeAlias = Annotated[
    Approve | Reject | Skip | Answer | ClientResult | ClientError | Provide | Accept | Decline | Cancel | Expired,
    Discriminator("kind"),
    BeforeValidator(current_kind),
]
"""Any answer to any request (read from JSON, an older record's tag too: `LEGACY_KINDS`)."""

DECISION_ADAPTER: TypeAdapter[Decision] = TypeAdapter(Decision, config=DEFERRED)

DecisionKind: TypeAlias = Literal[
    "approve",
    "reject",
    "skip",
    "answer",
    "client_result",
    "client_error",
    "provide",
    "accept",
    "decline",
    "cancel",
    "expired",
]
"""The `kind` of every decision, as records name it."""

RecordedKind: TypeAlias = DecisionKind | Literal["result", "error"]
"""A decision's kind in a record kept exactly as written (an approval record, an audit body): older ones
say a client tool's answer was `result` or `error` (`LEGACY_KINDS`)."""


class ArgEdit(TypedDict):
    """One field a person's edit changed: no `before` when the edit added it, no `after` when it removed it."""

    field: str
    before: NotRequired[Any]
    after: NotRequired[Any]


class QuestionAnswer(TypedDict):
    """One answered `ask_user` question, as the model (and the approval record) reads it."""

    question: str
    answer: list[str]


_ALLOWED: dict[str, tuple[str, ...]] = {
    "approval": ("approve", "reject", "skip"),
    "question": ("answer", "skip"),
    "client_tool": ("client_result", "client_error", "skip"),
    "elicitation": ("accept", "decline", "cancel"),
    "input": ("provide", "skip"),
}


def decisions_taken(kind: str) -> tuple[str, ...]:
    """The kinds of decision a request of `kind` takes, as `check_decision` holds it to them (none for a delegate's)."""
    return _ALLOWED.get(kind, ())


@dataclass(frozen=True, kw_only=True)
class DecisionRecord:
    """A decision as stored: what was decided, by whom and when."""

    request_id: str
    decision: Decision
    by: DecidedBy
    principal: str | None
    decided_at: float
    via: Via | None = None
    """The interface the decision came through; `None` for sayso's own decisions (and older records)."""
    closed: bool = False
    """Closed unanswered: a skip recorded because the run went on without it (a forced resume, a new message, a
    cancel), by whoever did that. Not a decision on the request itself, so statistics do not count it as one."""


def check_decision(
    request: Request,
    decision: Decision,
    *,
    existing: DecisionRecord | None,
    now: float,
) -> Decision | None:
    """Check `decision` against `request` and what was decided before.

    Returns:
        The decision to record, or `None` when it repeats the one already recorded (a no-op).

    Raises:
        AlreadyDecided: a different decision was recorded first.
        RequestExpired: the request's TTL has passed, whether or not the expiry sweep recorded it yet (a
            decision arriving after the sweep is told the same as one arriving before it).
        InvalidDecision: the decision does not fit the request; the message names the problem.
    """
    if existing is not None and existing.by == "expiry":
        raise RequestExpired(request.request_id, expiry_said(request))
    if existing is not None:
        if existing.decision == decision:
            return None
        if existing.closed and isinstance(existing.decision, Skip):  # nobody decided it: its run went on without it
            by = f" by {existing.principal}" if existing.principal else ""
            raise AlreadyDecided(
                request.request_id, f"it was closed unanswered{by}: {existing.decision.reason or 'its run went on'}"
            )
        raise AlreadyDecided(
            request.request_id,
            f"already decided ({existing.decision.kind} by {existing.by}); the first decision wins",
        )
    if request.expires_at is not None and now >= request.expires_at:
        raise RequestExpired(request.request_id, expiry_said(request))
    if request.kind == "delegate":
        raise InvalidDecision(request.request_id, "a delegate's call is answered through the delegate's own requests")
    if decision.kind not in decisions_taken(request.kind):
        allowed = ", ".join(decisions_taken(request.kind))
        raise InvalidDecision(request.request_id, f"this {request.kind} request takes {allowed}, not {decision.kind!r}")
    for label, value in _decided_values(decision).items():
        odd = non_finite(value)
        if odd is not None:
            raise InvalidDecision(request.request_id, f"{label}: {odd}, which JSON cannot carry; send a finite number")
    if isinstance(decision, Approve):
        assert isinstance(request, ApprovalRequest)
        _check_approve(request, decision)
    elif isinstance(decision, Answer):
        assert isinstance(request, QuestionRequest)
        _check_answers(request, decision)
    elif isinstance(decision, Accept):
        assert isinstance(request, ElicitationRequest)
        _check_accept(request, decision)
    elif isinstance(decision, Provide):
        assert isinstance(request, InputRequest)
        _check_input(request.request_id, request.response_schema, decision.value)
    return decision


def expiry_said(request: Request) -> str:
    """What a decision too late is told: that the request expired, and what its timeout does with the call.

    `on_timeout: approve` runs the call at the next sweep: a refusal that said it will not run would have
    its person leave a call they meant to stop to run. Every interface (and a mailed link) says these words.
    """
    if isinstance(request, InputRequest):  # a workflow's input has no call to run
        return f"the input of node {request.node!r} expired before a decision arrived"
    on_timeout = request.on_timeout if isinstance(request, RuleTerms) else None
    action = on_timeout.action if on_timeout is not None else "expire"
    if action == "expire" or request.expires_at is None:
        return "expired before a decision arrived; the call will not run"
    after = shown_duration(request.expires_at - request.created_at)
    verb, runs = ("approves", "will run") if action == "approve" else ("rejects", "will not run")
    return f"expired before a decision arrived; the rule {verb} it on timeout (after {after}), so the call {runs}"


def _decided_values(decision: Decision) -> dict[str, object]:
    """The values a decision carries that a person typed, by the name a message calls them."""
    if isinstance(decision, Approve):
        return {"edited arguments": decision.edited_args, "payload": decision.payload}
    if isinstance(decision, Provide | ClientResult):
        return {"value": decision.value}
    if isinstance(decision, Accept):
        return {"content": decision.content}
    return {}


def _check_input(request_id: str, schema: JsonSchemaValue, value: Any, *, what: str = "") -> None:
    """Refuse a value that breaks a response schema, naming every field and why (`fields` for forms)."""
    fields = input_field_problems(schema, value)
    if fields:
        problems = "; ".join(f"{where}: {why}" if where else why for where, why in fields.items())
        raise InvalidDecision(request_id, what + problems, fields=fields)


def _check_approve(request: ApprovalRequest, decision: Approve) -> None:
    if decision.scope not in request.scopes:
        offered = ", ".join(request.scopes)
        raise InvalidDecision(request.request_id, f"scope {decision.scope!r} is not offered here (offered: {offered})")
    if request.response_schema is not None:
        if decision.payload is None and input_field_problems(request.response_schema, None):
            fields = ", ".join(request.response_schema.get("properties") or ())
            needs = "this approval needs the feedback the tool asked for" + (f" ({fields})" if fields else "")
            raise InvalidDecision(request.request_id, "payload: " + needs, fields={"": needs})
        _check_input(request.request_id, request.response_schema, decision.payload, what="payload: ")
    if decision.edited_args is None:
        return
    if request.args_schema is None:
        return
    problem = schema_problem(decision.edited_args, request.args_schema)
    if problem is not None:
        raise InvalidDecision(request.request_id, f"edited arguments are invalid: {problem}")


def _check_answers(request: QuestionRequest, decision: Answer) -> None:
    questions = request.questions
    if len(decision.answers) != len(questions):
        raise InvalidDecision(
            request.request_id, f"expected {len(questions)} answer(s), one per question, got {len(decision.answers)}"
        )
    for question, answer in zip(questions, decision.answers, strict=True):
        picked = [a for a in answer if a.strip()]
        if not picked:
            raise InvalidDecision(request.request_id, f"question {question.question!r} needs an answer")
        if question.multiple:
            continue
        # Free text is always allowed beside the choices (kagent: "alongside (or instead of)"):
        # a single-select question takes one of its choices, the person's own words, or both.
        chosen = [a for a in picked if a in question.choices]
        own = [a for a in picked if a not in question.choices]
        if len(chosen) > 1:
            raise InvalidDecision(
                request.request_id,
                f"question {question.question!r} takes one of its choices, got {len(chosen)}: "
                + ", ".join(map(repr, chosen)),
            )
        if len(own) > 1:
            raise InvalidDecision(
                request.request_id,
                f"question {question.question!r} takes one answer in the person's own words "
                f"(beside at most one choice), got {len(own)}",
            )


def _check_accept(request: ElicitationRequest, decision: Accept) -> None:
    """URL mode takes no content; form mode takes content that fits the requested schema, field by field."""
    if request.mode == "url":
        if decision.content is not None:
            raise InvalidDecision(request.request_id, "a URL request is accepted without content: the page was visited")
        return
    content = {} if decision.content is None else decision.content
    if not isinstance(content, dict):
        raise InvalidDecision(request.request_id, f"content must be an object of fields, not {content!r}")
    schema = request.requested_schema or {"type": "object", "properties": {}}
    fields = {**_undeliverable(content, schema), **field_problems(content, schema)}
    if fields:
        listed = "; ".join(f"{name}: {problem}" if name else problem for name, problem in fields.items())
        raise InvalidDecision(request.request_id, f"content is invalid: {listed}", fields=fields, under="content")


def _undeliverable(content: Mapping[str, Any], schema: JsonSchemaValue) -> dict[str, str]:
    """Fields an MCP form answer cannot carry back to its server, whatever the schema leaves open.

    A form is flat (MCP's `ElicitResult`: each value a string, number, boolean, list of strings or
    null), and only its own fields go back: the client would refuse anything else on delivery,
    after the person's answer was taken and the pause closed.
    """
    fields = schema.get("properties") or {}
    extras_allowed = schema.get("additionalProperties") is True
    problems: dict[str, str] = {}
    for name, value in content.items():
        if name not in fields and not extras_allowed:
            problems[name] = "is not a field of this form"
        elif not (
            value is None
            or isinstance(value, str | int | float | bool)
            or (isinstance(value, list) and all(isinstance(v, str) for v in value))
        ):
            problems[name] = "must be a string, number, boolean, list of strings or null (a form is flat)"
    return problems


def field_problems(value: dict[str, Any], schema: JsonSchemaValue) -> dict[str, str]:
    """How each field of `value` breaks `schema` (a flat object schema, as MCP forms use), by field name.

    A missing required field is reported under its own name; a problem with the whole object
    under `""`. Formats (`email`, `uri`, `date`, ...) are checked too.
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema, format_checker=form_formats())
    problems: dict[str, str] = {}
    for error in sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path))):
        if error.absolute_path:
            name = str(error.absolute_path[0])
        elif error.validator == "required":
            missing = [f for f in error.validator_value if f not in value]
            name = missing[0] if missing else ""
            problems.update({f: "is required" for f in missing[1:]})
            if name:
                problems.setdefault(name, "is required")
                continue
        elif error.validator == "additionalProperties":
            extra = [f for f in value if f not in schema.get("properties", {})]
            problems.update({f: "is not a field of this form" for f in extra})
            continue
        else:
            name = ""
        problems.setdefault(name, error.message)
    return problems


def schema_problem(value: Any, schema: JsonSchemaValue) -> str | None:
    """Every way `value` breaks `schema`, in words, or `None` when it fits."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    problems = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path))):
        where = "/".join(str(p) for p in error.absolute_path)
        problems.append(f"{where}: {error.message}" if where else error.message)
    return "; ".join(problems) or None


def arg_edits(before: dict[str, Any], after: dict[str, Any], *, redact: Sequence[str] = ()) -> list[ArgEdit]:
    """How a person's edit changed a call's arguments, field by field, in the order the fields appear.

    Each change is `{"field", "before", "after"}`; a field the edit added has no `before`, one it
    removed no `after`. Values of redacted fields are shown as redacted, never as they were.
    """
    changes: list[ArgEdit] = []
    for name in [*before, *(k for k in after if k not in before)]:
        if name in before and name in after and before[name] == after[name]:
            continue
        change = ArgEdit(field=name)
        if name in before:
            change["before"] = REDACTED if name in redact else redacted(before[name], redact)
        if name in after:
            change["after"] = REDACTED if name in redact else redacted(after[name], redact)
        changes.append(change)
    return changes


def question_answers(request: QuestionRequest, decision: Answer) -> list[QuestionAnswer]:
    """The `[{question, answer}]` list the model receives for an answered `ask_user`."""
    return [
        QuestionAnswer(question=q.question, answer=[a for a in answer if a.strip()])
        for q, answer in zip(request.questions, decision.answers, strict=True)
    ]
