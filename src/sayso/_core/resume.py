"""When a pause may be resumed, and with what, as pure functions over requests and decisions.

See docs/concepts/decisions.md#resume-rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..exceptions import NotReady
from .decisions import Approve, Decision, DecisionRecord, Skip, Via
from .policy import timeout_decision
from .requests import Request, RuleTerms
from .votes import Vote, standing_args

SKIPPED_FOR_MESSAGE = "the person sent a message instead of answering"
SKIPPED_FOR_FORCE = "the run was resumed before this request was answered"
SKIPPED_FOR_CANCEL = "the run was cancelled before this request was answered"


def skipped_at_work(delegate: str) -> str:
    """Why a forced resume closed a delegate's request while its run was still at work (or cut off mid-call).

    Not "before this request was answered": the delegate may have done its work, an approved call
    included (a remote agent killed while it ran one), so what the parent reads says it is not known.
    """
    return (
        f"the run was resumed while the delegate {delegate} had not answered yet: "
        "what it did is unknown, so check its effect before trying again"
    )


@dataclass(frozen=True)
class Closer:
    """Who closes a pause's open requests unanswered (forcing a resume, cancelling, sending a message instead).

    Each skip it adds names them, as a decision names its decider: the audit log says who closed a
    request and through which interface. sayso closes one unanswered itself only where no person
    acts (a timeout is the expiry's, a form whose holder is gone sayso's).
    """

    principal: str
    """Who closes them."""
    via: Via | None = None
    """The interface they did it through."""


@dataclass(frozen=True, kw_only=True)
class ResumePlan:
    """What a resume applies: a decision for every request of the pause."""

    decisions: dict[str, DecisionRecord]
    """Every request's decision, keyed by request id."""
    added: list[DecisionRecord]
    """Skips the resume itself adds for requests nobody answered (forced resume or new message)."""


def open_requests(requests: Sequence[Request], decided: Mapping[str, DecisionRecord]) -> list[Request]:
    """The requests of a pause that still wait for a decision."""
    return [r for r in requests if r.request_id not in decided]


def plan_resume(
    run_id: str,
    requests: Sequence[Request],
    decided: Mapping[str, DecisionRecord],
    *,
    force: bool,
    now: float,
    skip_reason: str = SKIPPED_FOR_FORCE,
    closer: Closer | None = None,
    reasons: Mapping[str, str] | None = None,
) -> ResumePlan:
    """Decide whether a pause can resume now, skipping what is still open when forced.

    The skips are the `closer`'s (`None`: sayso's own), each for `skip_reason` unless `reasons` (by request
    id) gives its own.

    Raises:
        NotReady: requests are still open and `force` is false.
    """
    waiting = open_requests(requests, decided)
    if waiting and not force:
        ids = ", ".join(r.request_id for r in waiting)
        raise NotReady(run_id, f"{len(waiting)} request(s) still open ({ids}); decide them or force the resume")
    added = [
        DecisionRecord(
            request_id=r.request_id,
            decision=Skip(reason=(reasons or {}).get(r.request_id, skip_reason)),
            by="system" if closer is None else "person",
            principal=None if closer is None else closer.principal,
            decided_at=now,
            via=None if closer is None else closer.via,
            closed=True,
        )
        for r in waiting
    ]
    return ResumePlan(decisions={**decided, **{d.request_id: d for d in added}}, added=added)


def plan_expiry(
    requests: Sequence[Request],
    decided: Mapping[str, DecisionRecord],
    *,
    now: float,
    votes: Mapping[str, Sequence[Vote]] | None = None,
) -> list[DecisionRecord]:
    """The expiries that close a pause whose open requests have all run out; none while one still waits in time.

    A pause with a request that never expires (or nothing open at all) is left as it is. An
    `on_timeout: approve` approves the arguments as they stand: an edit vote (`votes`, by request
    id) put its arguments to the approvers, and the call never runs with those it replaced.
    """
    waiting = open_requests(requests, decided)
    if not waiting or any(r.expires_at is None or r.expires_at > now for r in waiting):
        return []
    return [
        DecisionRecord(
            request_id=r.request_id,
            decision=_timed_out(r, (votes or {}).get(r.request_id, ()), now),
            by="expiry",
            principal=None,
            decided_at=now,
        )
        for r in waiting
    ]


def _timed_out(request: Request, votes: Sequence[Vote], now: float) -> Decision:
    on_timeout = request.on_timeout if isinstance(request, RuleTerms) else None
    decision = timeout_decision(on_timeout, request.expires_at or now)
    if not isinstance(decision, Approve) or not votes:
        return decision
    standing = standing_args(request, votes)
    return decision if standing == request.args else Approve(edited_args=dict(standing))
