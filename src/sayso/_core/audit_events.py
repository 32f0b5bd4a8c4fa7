"""What sayso writes down about what was done: the approval record on a decided call, and audit events.

Both are JSON objects kept exactly as written (the audit chain hashes each body; a call's result
keeps its approval record in the history), so they are `TypedDict`s: plain dicts at run time, one
shape per kind for the type checker, and one pydantic adapter (`AUDIT_EVENT_ADAPTER`) that reads a
body back as the event it is. A key marked `NotRequired` is left out when it does not apply, as the
records have always been written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired, TypeAlias, assert_never

from pydantic import ConfigDict, Discriminator, Tag, TypeAdapter, with_config
from typing_extensions import TypedDict

from .decisions import (
    Accept,
    Answer,
    Approve,
    ArgEdit,
    Cancel,
    ClientError,
    ClientResult,
    DecidedBy,
    DecisionKind,
    DecisionRecord,
    Decline,
    Expired,
    Provide,
    RecordedKind,
    Reject,
    Skip,
    Via,
    arg_edits,
    question_answers,
)
from .requests import DEFERRED, ApprovalRequest, QuestionRequest, Request, Scope, redacted
from .service import ServiceNotice

_EXACT = ConfigDict(extra="forbid")
"""A body read back holds the keys its shape names, and no others."""

ANCHORED_EVENT = "audit_anchored"
"""The signed record that vouches for the unsigned records before it, written when a key is first used."""


@with_config(_EXACT)
class ShownAnswer(TypedDict):
    """An answered `ask_user` question as records show it: an answer the agent redacts is `«redacted»`."""

    question: str
    answer: list[str] | str


@with_config(_EXACT)
class ApprovalRecord(TypedDict):
    """What was decided on a request, by whom, on which arguments (docs/concepts/decisions.md#what-the-model-reads).

    Kept on the call's result, and (as a `decision` event) in the audit log. The keys after
    `proposed_args` say what the decision was.
    """

    request_id: str
    tool_name: str
    run_id: str
    thread_id: str
    agent_path: str
    decision: RecordedKind
    by: DecidedBy
    principal: str | None
    decided_at: float
    proposed_args: dict[str, Any]
    via: NotRequired[Via]
    """The interface the decision came through."""
    scope: NotRequired[Scope]
    """An approval's scope."""
    approved_args: NotRequired[dict[str, Any]]
    executed_args: NotRequired[dict[str, Any]]
    edits: NotRequired[list[ArgEdit]]
    """An edit, field by field (redacted)."""
    response: NotRequired[Any]
    """What the person sent back with an approval (redacted)."""
    reason: NotRequired[str]
    """Why a call was rejected or skipped, when the person said."""
    answers: NotRequired[list[ShownAnswer]]
    value: NotRequired[Any]
    """A client tool's result or a workflow input's value (redacted)."""
    message: NotRequired[str]
    """A client tool's error."""
    content: NotRequired[Any]
    """An elicitation's accepted content (redacted)."""
    expires_at: NotRequired[float]
    """When an expired request ran out."""
    subject: NotRequired[str]
    """The subject's key an approval was bound to."""
    subject_label: NotRequired[str]


@with_config(_EXACT)
class GrantRecord(TypedDict):
    """A call a remembered approval (a grant) let run without asking: the record kept on its result."""

    decision: Literal["approve"]
    by: Literal["permission"]
    grant_id: str
    scope: Scope
    principal: str
    subject: str
    subject_label: str
    granted_at: float
    decided_at: float
    proposed_args: dict[str, Any]
    approved_args: dict[str, Any]
    executed_args: dict[str, Any]


class ShownDecision(TypedDict, total=False):
    """What a transcript's decision line shows of a call's approval record (or grant record).

    Never the raw arguments: the call's own line shows them, and an edit is shown field by field, redacted.
    """

    request_id: str
    decision: DecisionKind
    by: DecidedBy
    principal: str | None
    via: Via
    decided_at: float
    scope: Scope
    reason: str
    edits: list[ArgEdit]
    answers: list[ShownAnswer]
    value: Any
    message: str
    content: Any
    expires_at: float
    grant_id: str
    subject_label: str
    quorum: str
    """A vote on a request that needs several approvals, before its decision line: `vote 1 of 2` (of the votes cast)."""


@with_config(_EXACT)
class DecisionEvent(ApprovalRecord):
    """A request was decided (by a person, a service, the expiry sweep or sayso)."""

    event: Literal["decision"]


@with_config(_EXACT)
class GrantedCall(TypedDict):
    """Which call of which run a grant covered."""

    tool_name: str
    run_id: str
    thread_id: str
    tool_call_id: str | None


@with_config(_EXACT)
class GrantDecisionEvent(GrantRecord, GrantedCall):
    """A grant let a call run without asking (written before the call runs)."""

    event: Literal["decision"]


@with_config(_EXACT)
class ExecutedEvent(TypedDict):
    """An approved call ran, with these arguments."""

    event: Literal["executed"]
    request_id: str
    tool_name: str
    executed_args: dict[str, Any]
    at: float
    error: NotRequired[str]
    """What the call raised (the model read it as the call's result)."""


@with_config(_EXACT)
class GrantExecutedEvent(GrantedCall):
    """A call a grant covered ran, with these arguments."""

    event: Literal["executed"]
    grant_id: str
    executed_args: dict[str, Any]
    at: float


@with_config(_EXACT)
class RefusedEvent(TypedDict):
    """An approved call no longer matched what was approved: it was not run, and its run failed saying so."""

    event: Literal["refused"]
    request_id: str
    tool_name: str
    reason: str
    at: float


@with_config(_EXACT)
class PolicyDeniedEvent(TypedDict):
    """A policy rule denied a call: it did not run, and the model read the rule's reason as its result."""

    event: Literal["policy_denied"]
    tool_name: str
    run_id: str
    thread_id: str
    tool_call_id: str | None
    rule: str
    reason: str
    principal: str | None
    proposed_args: dict[str, Any]
    at: float


@with_config(_EXACT)
class EscalatedEvent(TypedDict):
    """A waiting request took a step of its rule's escalation (remind, notify, add approvers)."""

    event: Literal["escalated"]
    request_id: str
    tool_name: str
    run_id: str
    rule: str | None
    step: int
    """Which step (0 for the first)."""
    after_seconds: float
    remind: bool
    notify: list[str]
    add_approvers: list[str]
    reason: str
    """What the step does, in words: `no decision after 1h: notify slack:#ops`."""
    at: float


@with_config(_EXACT)
class OutcomeUnknownEvent(TypedDict):
    """An approved call was cut off by a crash: it may or may not have run, and never runs again."""

    event: Literal["outcome_unknown"]
    request_id: str
    run_id: str
    tool_name: str | None
    at: float
    reason: str


@with_config(_EXACT)
class StepUnknownEvent(TypedDict):
    """A tool's or node's step (`sayso.step`) was cut off by a crash: it may or may not have done its work."""

    event: Literal["step_unknown"]
    run_id: str
    scope: str
    """The tool call's id, or the workflow node and its pass."""
    step: str
    occurrence: int
    at: float


@with_config(_EXACT)
class GrantRevokedEvent(TypedDict):
    """A person revoked a grant."""

    event: Literal["grant_revoked"]
    grant_id: str
    principal: str
    at: float


@with_config(_EXACT)
class ServiceNotifiedEvent(ServiceNotice):
    """A service was told how its own approval request was decided, or could not be.

    See docs/concepts/pauses.md#tools-whose-service-asks.
    """

    event: Literal["service_notified"]
    delivered: bool
    problem: str | None


@with_config(_EXACT)
class AnchoredEvent(TypedDict):
    """The signed record that vouches for the unsigned records up to `through_seq` (written once, on purpose)."""

    event: Literal["audit_anchored"]
    through_seq: int
    through_hash: str
    at: float


def _event_tag(body: Any) -> str | None:
    """Which event a body is: its `event`, and for a decision or an execution whether a grant allowed it."""
    if not isinstance(body, Mapping):
        return None
    event = body.get("event")
    if event in ("decision", "executed") and "grant_id" in body:
        return f"{event}:grant"
    return event if isinstance(event, str) else None


@with_config(_EXACT)
class VoteEvent(TypedDict):
    """One person's vote on a request that needs several approvals (docs/guides/routing.md#quorum)."""

    event: Literal["vote"]
    request_id: str
    tool_name: str
    run_id: str
    thread_id: str
    agent_path: str
    principal: str
    decision: Literal["approve", "reject"]
    round: int
    """0 on the proposed arguments; each edit starts the next round."""
    voted_at: float
    progress: str
    """Where the request stood after the vote: `1 of 2, waiting for finance`."""
    via: NotRequired[Via]
    reason: NotRequired[str]
    edits: NotRequired[list[ArgEdit]]
    """An edit, field by field against the proposed arguments (redacted): it restarted the count."""


AuditEvent: TypeAlias = Annotated[
    Annotated[DecisionEvent, Tag("decision")]
    | Annotated[GrantDecisionEvent, Tag("decision:grant")]
    | Annotated[ExecutedEvent, Tag("executed")]
    | Annotated[GrantExecutedEvent, Tag("executed:grant")]
    | Annotated[OutcomeUnknownEvent, Tag("outcome_unknown")]
    | Annotated[StepUnknownEvent, Tag("step_unknown")]
    | Annotated[RefusedEvent, Tag("refused")]
    | Annotated[PolicyDeniedEvent, Tag("policy_denied")]
    | Annotated[EscalatedEvent, Tag("escalated")]
    | Annotated[GrantRevokedEvent, Tag("grant_revoked")]
    | Annotated[ServiceNotifiedEvent, Tag("service_notified")]
    | Annotated[AnchoredEvent, Tag(ANCHORED_EVENT)]
    | Annotated[VoteEvent, Tag("vote")],
    Discriminator(_event_tag),
]
"""Everything sayso writes to the audit log, one shape per event."""

_TIME_KEYS: Mapping[str, str] = {
    "decision": "decided_at",
    "decision:grant": "decided_at",
    "service_notified": "decided_at",
    "vote": "voted_at",
}
"""Where the events that do not say `at` say when they happened, by tag (`_event_tag`)."""


def time_key(tag: str) -> str:
    """The key under which the event tagged `tag` (`decision:grant` for a grant's) says when it happened."""
    return _TIME_KEYS.get(tag, "at")


def event_time(body: Mapping[str, Any]) -> float | None:
    """When the event a record's body holds happened, under whichever key its kind keeps it; `None` if it says not.

    Every event says when (a decision and a service's notice `decided_at`, a vote `voted_at`, the others
    `at`), so an interface that shows the log reads it here instead of guessing one key for all.
    """
    at = body.get(time_key(_event_tag(body) or ""))
    return float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None


AUDIT_EVENT_ADAPTER: TypeAdapter[AuditEvent] = TypeAdapter(AuditEvent, config=DEFERRED)
"""The one adapter that reads an audit record's body back as its event (built on first use: most
commands never read one back, and building it costs each of them ~15 ms)."""


def decision_event(record: ApprovalRecord) -> DecisionEvent:
    """The audit event of a decision: its approval record, named."""
    return DecisionEvent(event="decision", **record)


def approval_record(request: Request, record: DecisionRecord) -> ApprovalRecord:
    """The record kept on a decided call's result: what was decided, by whom, on which arguments.

    See docs/concepts/decisions.md#what-the-model-reads.

    It says everything a person reads about the decision later (the transcript and the audit log
    show it): the scope of an approval, the reason of a rejection or skip, an edit field by field,
    the answer given (redacted where the agent's `redact` says so), when a request expired, and
    the interface the decision came through.
    """
    decision = record.decision
    entry = ApprovalRecord(
        request_id=request.request_id,
        tool_name=request.tool_name,
        run_id=request.run_id,
        thread_id=request.thread_id,
        agent_path=request.agent_path,
        decision=decision.kind,
        by=record.by,
        principal=record.principal,
        decided_at=record.decided_at,
        proposed_args=request.args,
    )
    if record.via is not None:
        entry["via"] = record.via
    redact = request.redact
    match decision:
        case Approve():
            approved = decision.edited_args if decision.edited_args is not None else request.args
            entry["scope"], entry["approved_args"], entry["executed_args"] = decision.scope, approved, approved
            if decision.edited_args is not None:
                entry["edits"] = arg_edits(request.args, decision.edited_args, redact=redact)
            if decision.payload is not None:
                entry["response"] = redacted(decision.payload, redact)
        case Reject() | Skip():
            if decision.reason:
                entry["reason"] = decision.reason
        case Answer():
            assert isinstance(request, QuestionRequest)
            entry["answers"] = redacted(question_answers(request, decision), redact)
        case ClientResult() | Provide():
            entry["value"] = redacted(decision.value, redact)
        case ClientError():
            entry["message"] = decision.message
        case Accept():
            entry["content"] = redacted(decision.content, redact)
        case Expired():
            entry["expires_at"] = decision.expires_at
        case Decline() | Cancel():
            pass
        case _:
            assert_never(decision)
    if isinstance(request, ApprovalRequest) and request.subject is not None:
        entry["subject"] = request.subject.key
        entry["subject_label"] = request.subject.label
    return entry


def audit_body(request: Request, record: DecisionRecord) -> DecisionEvent:
    """The audit record of a decision: the approval record plus the event name."""
    return decision_event(approval_record(request, record))
