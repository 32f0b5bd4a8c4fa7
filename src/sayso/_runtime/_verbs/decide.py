"""The verb decide: one decision checked, recorded (with the grant it creates) and, when it was the last, resumed.

Every decision is checked before anything is written — who may decide (the one access rule),
whether the answer fits the request, whether an edit keeps the subject the person saw — so a
refused decision changes nothing and the pause stays open. The first decision wins. When the
last open request of a top-level agent run's pause is decided, the same commit claims the resume.
"""

from __future__ import annotations

from dataclasses import replace

from ..._core.access import Principal
from ..._core.advance import approved_calls
from ..._core.decisions import Decision, DecisionRecord, Via, check_decision
from ..._core.limits import check_decision as check_size
from ..._core.resume import open_requests, plan_resume
from ..._engine.deferred import audit_body
from ..._store import PauseState, RequestWithRun, ResumeClaim, Verdict
from ...exceptions import AlreadyDecided, CallEnded, RequestNotFound
from .. import _holds, _tree
from .._cycle import Cycle
from .._results import DecideResult
from .._runner import DEFAULTS, CallOptions
from .resume import close_orphaned, resume_if_ready
from .rules import check_allowed, check_same_subject, grant_from


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
        to_record = check_decision(request, decision, existing=found.decision, now=now)
        if to_record is None:
            return Verdict(record=None)  # the same decision again: a harmless no-op
        if found.pause_status != "open":
            raise AlreadyDecided(request_id, "its pause was already resumed or closed")
        check_same_subject(k, request, to_record, agent=found.run.agent)
        record = DecisionRecord(
            request_id=request_id, decision=to_record, by="person", principal=principal.name, decided_at=now, via=via
        )
        verdict = Verdict(
            record=record,
            audit=[audit_body(request, record)],
            grant=grant_from(request, to_record, now, giver=principal, options=options),
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
    if record is not None:
        k.events.decided([done.found.request], [record])
    if done.claim is not None:
        run = await c.runner(done.claim.run).resume_decided(done, options)
        return DecideResult(request_id=request_id, recorded=True, run=run)
    top = await _tree.root(k, done.found.run)
    if not resume:
        return DecideResult(request_id=request_id, recorded=record is not None, run=await _tree.result(k, top.run_id))
    return DecideResult(request_id=request_id, recorded=record is not None, run=await resume_if_ready(c, top, options))
