"""What `run`, `resume` and `decide` return, and their plain-JSON form used by the CLI and the APIs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from .._core.decisions import DECISION_ADAPTER
from .._core.requests import (
    ApprovalRequest,
    ClientToolRequest,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    Request,
    is_remote_call,
    redacted,
    shown_args,
)
from .._core.stats import Stats
from .._core.votes import Quorum, Vote, quorum
from .._store import RequestState, RunStatus

RequestStatus = Literal["open", "decided", "closed", "expired"]
"""Where a request stands: waiting, decided, past its expiry, or closed unanswered with its run."""


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """Where a run stands: completed with its output, or paused with the requests it waits on."""

    run_id: str
    thread_id: str
    agent: str
    status: RunStatus
    output: str | None = None
    """The final text, when completed."""
    requests: tuple[Request, ...] = ()
    """What the run waits on, when paused."""
    error: str | None = None
    """What went wrong, when failed."""
    votes: Mapping[str, tuple[Vote, ...]] = field(default_factory=dict)
    """The votes cast on its routed requests, by request id (docs/guides/routing.md#quorum)."""


@dataclass(frozen=True, kw_only=True)
class DecideResult:
    """The outcome of one decision."""

    request_id: str
    recorded: bool
    """False when the decision repeated one already taken (a harmless no-op)."""
    run: RunResult
    """The run after the decision: still paused on other requests, or resumed to its next stop."""
    quorum: Quorum | None = None
    """Where a request that needs several approvals stands after this vote (docs/guides/routing.md#quorum)."""


def rfc3339(seconds: float | None) -> str | None:
    """A time as RFC 3339 in UTC (`2026-01-02T03:04:05.678Z`), how sayso's JSON says when things happen."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def request_json(request: Request, *, votes: Sequence[Vote] | None = None) -> dict[str, Any]:
    """A request as plain JSON, the same shape on every interface.

    `created` and `expires` are RFC 3339; `created_at` and `expires_at` say the same in seconds
    since the epoch and are kept for existing clients (deprecated). A routed request says who may
    decide it (`approvers`) and, when it needs several approvals and its `votes` were read, where it
    stands (`quorum`).
    """
    body: dict[str, Any] = {
        "id": request.request_id,
        "kind": request.kind,
        "mode": request.mode,
        "is_nested": request.is_nested,
        "run_id": request.run_id,
        "thread_id": request.thread_id,
        "chat_thread_id": request.chat_thread_id or request.thread_id,
        "agent_path": request.agent_path,
        "parent_call_id": request.parent_call_id,
        "tool_call_id": request.tool_call_id,
        "tool_name": request.tool_name,
        "args": shown_args(request),
        "created": rfc3339(request.created_at),
        "expires": rfc3339(request.expires_at),
        "created_at": request.created_at,
        "expires_at": request.expires_at,
    }
    if isinstance(request, ApprovalRequest):
        body.update(
            hint=request.hint,
            subject=asdict(request.subject) if request.subject else None,
            scopes=list(request.scopes),
            editable=not is_remote_call(request),
            payload=request.payload,
            tool=asdict(request.tool_info) if request.tool_info else None,
            response_schema=request.response_schema,
            on_reject=request.on_reject,
            asked_because=request.asked_because,
            rule=request.rule,
            why=request.why,
        )
    elif isinstance(request, QuestionRequest):
        body["questions"] = [asdict(q) | {"choices": list(q.choices)} for q in request.questions]
    elif isinstance(request, ClientToolRequest):
        body.update(description=request.description, args_schema=request.args_schema)
    elif isinstance(request, InputRequest):
        body.update(
            node=request.node,
            message=request.message,
            payload=request.payload,
            response_schema=request.response_schema,
            asked_because=request.asked_because,
            rule=request.rule,
            why=request.why,
        )
    elif isinstance(request, ElicitationRequest):
        body.update(
            message=request.message,
            server=request.server,
            requested_schema=request.requested_schema,
            url=request.url,
            elicitation_id=request.elicitation_id,
            durable=elicitation_durable(request),
        )
    if request.routing is not None:
        body.update(routing_json(request, votes))
    return body


class ApproverJson(TypedDict):
    name: str
    groups: list[str]
    """The rule's groups it was named through; empty when named directly."""


class ApproversJson(TypedDict):
    """Who may decide a routed request: the rule's names, and the principals they stand for."""

    named: list[str]
    principals: list[ApproverJson]
    """Everyone who may decide it (the run's starter left out unless `self_approval`)."""
    approvals_required: int
    self_approval: bool


class VoteJson(TypedDict):
    principal: str
    decision: str
    round: int
    voted: str | None
    via: str | None
    reason: str | None
    edited: bool


class QuorumJson(TypedDict):
    """Where a vote stands: `text` is what a person reads (`1 of 2, waiting for sre`)."""

    text: str
    required: int
    approved_by: list[str]
    waiting_for: list[str]
    round: int
    args: Any
    """The arguments the next approver sees when an edit changed them (redacted); `None`: the proposed ones."""
    votes: list[VoteJson]


class RoutingJson(TypedDict):
    approvers: ApproversJson
    quorum: NotRequired[QuorumJson]


def routing_json(request: Request, votes: Sequence[Vote] | None) -> RoutingJson:
    """Who may decide a routed request, and (several approvals needed) where it stands: docs/guides/routing.md."""
    routing = request.routing
    assert routing is not None
    deciders = routing.deciders(request.principal)
    body = RoutingJson(
        approvers=ApproversJson(
            named=list(routing.named),
            principals=[
                ApproverJson(name=a.name, groups=list(a.groups)) for a in routing.approvers if a.name in deciders
            ],
            approvals_required=routing.approvals_required,
            self_approval=routing.self_approval,
        )
    )
    if routing.approvals_required > 1 and votes is not None:
        body["quorum"] = quorum_json(
            quorum(routing, votes, starter=request.principal, proposed=request.args), redact=request.redact
        )
    return body


def quorum_json(standing: Quorum, *, redact: Sequence[str] = ()) -> QuorumJson:
    """Where a vote stands, as plain JSON."""
    return QuorumJson(
        text=standing.text,
        required=standing.required,
        approved_by=list(standing.approved_by),
        waiting_for=list(standing.waiting_for),
        round=standing.round,
        args=redacted(standing.args, redact),
        votes=[vote_json(v) for v in standing.votes],
    )


def vote_json(vote: Vote) -> VoteJson:
    """One vote as plain JSON (the edited arguments are the quorum's `args`, redacted there)."""
    return VoteJson(
        principal=vote.principal,
        decision=vote.decision,
        round=vote.round,
        voted=rfc3339(vote.voted_at),
        via=vote.via,
        reason=vote.reason,
        edited=vote.edited_args is not None,
    )


def elicitation_durable(request: ElicitationRequest) -> bool:
    """Whether an answer to this elicitation reaches the server whichever process takes it.

    See docs/guides/mcp.md#which-answers-survive-a-restart.

    A URL retry, a parked task and a stateless round trip are durable; a form pushed on a live call
    goes back only while the process holding that call lives (else it is replayed or closes as cancelled).
    """
    return request.delivery != "live"


def run_json(result: RunResult) -> dict[str, Any]:
    """A run result as plain JSON."""
    return {
        "run_id": result.run_id,
        "thread_id": result.thread_id,
        "agent": result.agent,
        "status": result.status,
        "output": result.output,
        "error": result.error,
        "requests": [request_json(r, votes=result.votes.get(r.request_id, ())) for r in result.requests],
    }


class DecideJson(TypedDict):
    request_id: str
    recorded: bool
    run: Mapping[str, object]
    quorum: NotRequired[QuorumJson]


def decide_json(result: DecideResult) -> DecideJson:
    """A decision's outcome as plain JSON; a vote on a request that needs several approvals says where it stands."""
    body = DecideJson(request_id=result.request_id, recorded=result.recorded, run=run_json(result.run))
    if result.quorum is not None:
        body["quorum"] = quorum_json(result.quorum)
    return body


def request_status(state: RequestState, *, now: float) -> RequestStatus:
    """Where a request stands: decided, expired, still open, or closed unanswered.

    A request whose time ran out is `expired` before the expiry sweep records what its timeout does
    and after (the decision then says what that was): its status does not change under a reader.
    """
    if state.decision is not None and state.decision.by == "expiry":
        return "expired"
    if state.decision is not None:
        return "closed" if state.decision.closed else "decided"
    if state.request.expires_at is not None and now >= state.request.expires_at:
        return "expired"
    return "open" if state.pause_status == "open" else "closed"


def request_state_json(state: RequestState, *, now: float) -> dict[str, Any]:
    """A request, where it stands, and its decision: who took it, through which interface, and when."""
    record = state.decision
    return {
        "request": request_json(state.request, votes=state.votes),
        "status": request_status(state, now=now),
        "decision": DECISION_ADAPTER.dump_python(record.decision, mode="json") if record else None,
        "decided_by": record.by if record else None,
        "principal": record.principal if record else None,
        "via": record.via if record else None,
        "decided": rfc3339(record.decided_at) if record else None,
    }


class StatsJson(TypedDict):
    """`stats_json`'s shape: `Stats` with its times as RFC 3339 and the window's length."""

    since: str | None
    until: str | None
    window_seconds: float
    overall: object
    by_tool: object
    by_rule: object
    by_approver: object


def stats_json(stats: Stats) -> StatsJson:
    """Approval statistics as plain JSON, the same on REST and the CLI (times RFC 3339)."""
    return StatsJson(
        since=rfc3339(stats.since),
        until=rfc3339(stats.until),
        window_seconds=stats.until - stats.since,
        overall=asdict(stats.overall),
        by_tool={name: asdict(r) for name, r in stats.by_tool.items()},
        by_rule={name: asdict(r) for name, r in stats.by_rule.items()},
        by_approver={name: asdict(r) for name, r in stats.by_approver.items()},
    )
