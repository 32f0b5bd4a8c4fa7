"""Quorum votes on a routed request: each person's vote, where the request stands, and what one more vote does.

See docs/guides/routing.md#quorum. `tally` is the one place a vote is weighed: the store records
what it returns inside the transaction that read the votes before it (first decision wins, and a
vote is counted once across replicas).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

from pydantic import TypeAdapter, with_config

from .audit_events import VoteEvent
from .decisions import Approve, Reject, Via, arg_edits
from .requests import DEFERRED, Request, redacted
from .routing import Routing

VoteKind: TypeAlias = Literal["approve", "reject"]


@with_config(DEFERRED)
@dataclass(frozen=True, kw_only=True)
class Vote:
    """One person's vote on a routed request that needs several approvals."""

    request_id: str
    principal: str
    decision: VoteKind
    round: int
    """Which arguments the vote was on: 0 for the proposed ones, each edit starts the next round."""
    voted_at: float
    via: Via | None = None
    edited_args: Mapping[str, Any] | None = None
    """The arguments an edit proposed (this vote starts a new round on them)."""
    reason: str | None = None
    """Why a rejection rejected, when the person said."""


VOTE_ADAPTER: TypeAdapter[Vote] = TypeAdapter(Vote)
"""The one adapter votes are stored through."""


@dataclass(frozen=True, kw_only=True)
class Quorum:
    """Where a request that needs several approvals stands: who approved, who is still waited for."""

    required: int
    approved_by: tuple[str, ...]
    """Who approved the current arguments, in order."""
    waiting_for: tuple[str, ...]
    """The approvers (principals, or the groups they were named through) who may still approve."""
    round: int
    """0 until the first edit; each edit starts the next round."""
    may_vote: tuple[str, ...] = ()
    """The principals whose vote may still count on the arguments as they stand: the deciders who have not
    approved in this round (an edit gives back their vote to those who approved before it); nobody once the votes
    decided the request. The one place "may still vote" is decided (`waiting_for` and reminders read it)."""
    args: Mapping[str, Any] | None = None
    """The arguments the next approver sees when an edit changed them from the proposed ones; `None`: the proposed
    ones stand (none was edited, or an edit went back to them). The one place "edited" is decided."""
    votes: tuple[Vote, ...] = ()

    @property
    def count(self) -> str:
        """`1 of 2`: the approvals of the arguments as they stand, of those required."""
        return f"{len(self.approved_by)} of {self.required}"

    @property
    def text(self) -> str:
        """`1 of 2, waiting for sre`: what every interface shows."""
        waiting = f", waiting for {', '.join(self.waiting_for)}" if self.waiting_for else ""
        edited = " (edited arguments)" if self.args is not None else ""
        return f"{self.count}{edited}{waiting}"


def quorum(routing: Routing, votes: Sequence[Vote], *, starter: str | None, proposed: Mapping[str, Any]) -> Quorum:
    """Where a routed request stands after `votes` (oldest first); `proposed`: the request's own arguments.

    An edit back to the proposed arguments starts a round on them, yet leaves them unedited: what runs is what
    was proposed, and no interface says otherwise.
    """
    current = max((v.round for v in votes), default=0)
    this_round = [v for v in votes if v.round == current and v.decision == "approve"]
    approved = tuple(dict.fromkeys(v.principal for v in this_round))
    args = next((v.edited_args for v in this_round if v.edited_args is not None), None)
    if args == proposed:
        args = None
    # Decided by its votes (a rejection, or enough approvals): it waits for nobody any more.
    decided = any(v.decision == "reject" for v in votes) or len(approved) >= routing.approvals_required
    may_vote = () if decided else tuple(d for d in routing.deciders(starter) if d not in approved)
    waiting: list[str] = []
    for name in routing.named:
        members = [a.name for a in routing.approvers if name in a.groups]
        if (members and any(m in may_vote for m in members)) or (not members and name in may_vote):
            waiting.append(name)
    return Quorum(
        required=routing.approvals_required,
        approved_by=approved,
        waiting_for=tuple(waiting),
        may_vote=may_vote,
        round=current,
        args=args,
        votes=tuple(votes),
    )


@dataclass(frozen=True, kw_only=True)
class Tally:
    """What one vote does: recorded (or a repeat, recorded nowhere), and the decision when it resolves."""

    vote: Vote | None
    """The vote to record; `None` when the person's vote is already counted (a harmless repeat)."""
    resolved: Approve | Reject | None
    """The request's decision when this vote resolves it: the Nth approval, or a rejection."""
    quorum: Quorum
    """Where the request stands after the vote."""


def tally(
    request: Request,
    votes: Sequence[Vote],
    decision: Approve | Reject,
    *,
    principal: str,
    now: float,
    via: Via | None,
    alone: bool = False,
) -> Tally:
    """Weigh one vote on a routed `request` against the votes before it. `alone`: local mode's one caller decides."""
    routing, request_id, starter, proposed = request.routing, request.request_id, request.principal, request.args
    assert routing is not None, "only a routed request is voted on"
    before = quorum(routing, votes, starter=starter, proposed=proposed)
    current_args = before.args if before.args is not None else proposed
    if isinstance(decision, Reject):
        vote = Vote(
            request_id=request_id,
            principal=principal,
            decision="reject",
            round=before.round,
            voted_at=now,
            via=via,
            reason=decision.reason,
        )
        return Tally(
            vote=vote, resolved=decision, quorum=quorum(routing, [*votes, vote], starter=starter, proposed=proposed)
        )
    edit = decision.edited_args is not None and decision.edited_args != current_args
    if not edit and principal in before.approved_by:
        return Tally(vote=None, resolved=None, quorum=before)
    vote = Vote(
        request_id=request_id,
        principal=principal,
        decision="approve",
        round=before.round + 1 if edit else before.round,
        voted_at=now,
        via=via,
        edited_args=decision.edited_args if edit else None,
    )
    after = quorum(routing, [*votes, vote], starter=starter, proposed=proposed)
    if not alone and len(after.approved_by) < routing.approvals_required:
        return Tally(vote=vote, resolved=None, quorum=after)
    edited = dict(after.args) if after.args is not None else None
    resolved = Approve(scope="once", edited_args=edited, payload=decision.payload)
    return Tally(vote=vote, resolved=resolved, quorum=after)


def vote_event(request: Request, vote: Vote, after: Quorum) -> VoteEvent:
    """The audit record of one vote: who, when, through which interface, and where the request stood after it."""
    event = VoteEvent(
        event="vote",
        request_id=request.request_id,
        tool_name=request.tool_name,
        run_id=request.run_id,
        thread_id=request.thread_id,
        agent_path=request.agent_path,
        principal=vote.principal,
        decision=vote.decision,
        round=vote.round,
        voted_at=vote.voted_at,
        progress=after.text,
    )
    if vote.via is not None:
        event["via"] = vote.via
    if vote.reason:
        event["reason"] = vote.reason
    if vote.edited_args is not None:
        event["edits"] = arg_edits(request.args, dict(vote.edited_args), redact=request.redact)
    return event


def standing_args(request: Request, votes: Sequence[Vote]) -> Mapping[str, Any]:
    """The arguments the votes are about now: the last edit's in the current round, else the proposed ones."""
    standing = (
        quorum(request.routing, votes, starter=request.principal, proposed=request.args) if request.routing else None
    )
    return standing.args if standing is not None and standing.args is not None else request.args


def shown_standing_args(request: Request, votes: Sequence[Vote]) -> Mapping[str, Any]:
    """The arguments an approval now runs the call with, as they may be shown: what every interface shows its person.

    After an edited vote the next approver approves the edit, not the proposed arguments: showing those
    would have them approve a call they never saw.
    """
    shown: Mapping[str, Any] = redacted(dict(standing_args(request, votes)), request.redact)
    return shown


def same_as_shown(request: Request, votes: Sequence[Vote], decision: Approve) -> Approve:
    """An approval whose "edit" is the arguments as they stand is a plain approval of them, not an edit.

    An interface that names the arguments its person saw (so a vote never approves ones changed
    meanwhile) sends them as `edited_args`; only a change starts a new round.
    """
    return replace(decision, edited_args=None) if decision.edited_args == standing_args(request, votes) else decision
