"""The verb decide: one decision checked, recorded (with the grant it creates) and, when it was the last, resumed.

Every decision is checked before anything is written — who may decide (the one access rule),
whether the answer fits the request, whether an edit keeps the subject the person saw — so a
refused decision changes nothing and the pause stays open. The first decision wins. A request that
needs several approvals takes votes (docs/guides/routing.md#quorum): each recorded in the same
transaction that judged it, the Nth approval deciding it. When the last open request of a top-level
agent run's pause is decided, the same commit claims the resume.
"""

from __future__ import annotations

from dataclasses import replace

from ..._core.access import Principal
from ..._core.advance import approved_calls
from ..._core.audit_events import AuditEvent
from ..._core.decisions import Approve, Decision, DecisionRecord, Reject, Via, check_decision
from ..._core.limits import check_decision as check_size
from ..._core.resume import open_requests, plan_resume
from ..._core.votes import Quorum, Vote, quorum, same_as_shown, tally, vote_event
from ..._engine.deferred import audit_body
from ..._store import Decided, PauseState, RequestWithRun, ResumeClaim, Verdict
from ...exceptions import AlreadyDecided, CallEnded, RequestNotFound
from .. import _holds, _tree
from .._cycle import Cycle
from .._results import DecideResult
from .._runner import DEFAULTS, CallOptions
from .resume import close_orphaned, resume_if_ready
from .rules import check_allowed, check_same_subject, grant_from, needs_votes


async def decide(
    c: Cycle,
    request_id: str,
    decision: Decision,
    *,
    principal: Principal,
    resume: bool,
    via: Via | None = None,
    options: CallOptions = DEFAULTS,
) -> DecideResult:
    """Record one decision; when it was the last open request of the pause, resume the run.

    One transaction reads the request with its run and pause, checks the decision (`judge`, pure),
    records it and — when nothing else is open and the run is a top-level agent's — consumes the
    pause, marks the approved calls in the ledger and reads the history, so the runner resumes
    it straight away. Anything else (a delegate, a workflow, a pause still open) is carried on
    by the cycle after the commit.
    """
    k = c.k
    check_size(request_id, decision, k.limits)
    now = k.clock()

    def judge(found: RequestWithRun, state: PauseState) -> Verdict:
        request = found.request
        check_allowed(request, principal)
        _holds.check_holder(found, now)
        voted = needs_votes(request) and isinstance(decision, Approve)
        given = same_as_shown(request, found.votes, decision) if voted and isinstance(decision, Approve) else decision
        to_record = check_decision(request, given, existing=found.decision, now=now)
        if to_record is None:
            return Verdict(record=None)  # the same decision again: a harmless no-op
        if found.pause_status != "open":
            raise AlreadyDecided(request_id, "its pause was already resumed or closed")
        check_same_subject(k, request, to_record, agent=found.run.agent)
        vote: Vote | None = None
        audit: list[AuditEvent] = []
        if needs_votes(request) and isinstance(to_record, Approve | Reject):
            alone = principal.local
            counted = tally(request, found.votes, to_record, principal=principal.name, now=now, via=via, alone=alone)
            if counted.vote is None:
                return Verdict(record=None)  # this person's approval is counted already
            vote, audit = counted.vote, [vote_event(request, counted.vote, counted.quorum)]
            if counted.resolved is None:
                return Verdict(record=None, audit=audit, vote=vote)  # the pause waits for more approvals
            to_record = counted.resolved
        record = DecisionRecord(
            request_id=request_id, decision=to_record, by="person", principal=principal.name, decided_at=now, via=via
        )
        verdict = Verdict(
            record=record,
            audit=[*audit, audit_body(request, record)],
            grant=grant_from(request, to_record, now, giver=principal, options=options),
            vote=vote,
        )
        run = found.run
        decided = {**state.decisions, request_id: record}
        if (
            not resume
            or run.parent_run_id is not None
            or run.status != "paused"
            or open_requests(state.requests, decided)
            or not c.runner(run).claims_with_decision
            or _holds.held_elsewhere(k, run, now)
        ):
            # Delegates, pauses still waiting and runs whose runner does not claim with the
            # decision (a workflow's resume reads its state with the claim) go the general way,
            # after the commit; a pause another live process holds is carried on by that process.
            return verdict
        plan = plan_resume(run.run_id, state.requests, decided, force=False, now=now)
        executing = list(approved_calls(state.requests, plan))
        return replace(verdict, resume=ResumeClaim(executing=executing, grants_of=run.principal or ""))

    try:
        done = await k.store.decide_request(request_id, judge, holder=k.holder, until=now + k.lease_seconds, now=now)
    except CallEnded:
        await close_orphaned(c, request_id)
        raise
    if done is None:
        raise RequestNotFound(request_id)
    record = done.verdict.record
    recorded = record is not None or done.verdict.vote is not None
    standing = quorum_after(done)
    if record is not None:
        k.events.decided([done.found.request], [record])
    elif done.verdict.vote is not None:
        k.events.touched()  # a vote short of the quorum: watches look now, and tell the others where it stands
    if done.claim is not None:
        run = await c.runner(done.claim.run).resume_decided(done, options)
        return DecideResult(request_id=request_id, recorded=True, run=run, quorum=standing)
    top = await _tree.root(k, done.found.run)
    if not resume or record is None:
        run = await _tree.result(k, top.run_id)  # a vote short of the quorum: the pause waits
        return DecideResult(request_id=request_id, recorded=recorded, run=run, quorum=standing)
    run = await resume_if_ready(c, top, options)
    return DecideResult(request_id=request_id, recorded=recorded, run=run, quorum=standing)


def quorum_after(done: Decided) -> Quorum | None:
    """Where a request that needs several approvals stands after this decision (`None` for any other)."""
    request = done.found.request
    if not needs_votes(request) or request.routing is None:
        return None
    votes = [*done.found.votes, *([done.verdict.vote] if done.verdict.vote else [])]
    return quorum(request.routing, votes, starter=request.principal)
