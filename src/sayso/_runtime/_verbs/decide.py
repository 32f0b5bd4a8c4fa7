"""The verb decide: one decision checked, recorded (with the grant it creates) and, when it was the last, resumed.

Every decision is checked before anything is written — who may decide (the one access rule),
whether the answer fits the request, whether an edit keeps the subject the person saw — so a
refused decision changes nothing and the pause stays open. The first decision wins, one taken at a
remote agent too: a decision on an ask its remote task no longer waits on is refused before
anything is recorded. A request that needs several approvals takes votes
(docs/guides/routing.md#quorum): each recorded in the same transaction that judged it, the Nth
approval deciding it. When the last open request of a top-level agent run's pause is decided, the
same commit claims the resume.

When an engine elsewhere runs the request's run (Temporal), the decision goes to it instead
(`decide_there`), its workflow judging it by the same rule; what the store already settles (who may
not decide, a request already decided) is answered from the store first, as it is here, so a run
whose workflow has ended answers as a run here would.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..._core.access import Principal
from ..._core.deciding import check_allowed, needs_votes, settled_already
from ..._core.decisions import Decision, Via
from ..._core.limits import check_decision as check_size
from ..._core.votes import Quorum, quorum
from ..._store import Decided
from ...exceptions import AlreadyDecided, CallEnded, RequestNotFound, RunConflict, StoreError
from .. import _tree
from .._cycle import Cycle
from .._remote import ANSWERED_ELSEWHERE
from .._results import DecideResult
from .._runner import DEFAULTS, CallOptions, DecisionCall
from .resume import close_orphaned, resume_if_ready
from .rules import approval_facts, decision_ask


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

    One transaction reads the request with its run and pause, checks the decision (the core's
    `judge`, pure, over the ask built here), records it and — when nothing else is open and the
    run is a top-level agent's — consumes the pause, marks the approved calls in the ledger and
    reads the history, so the runner resumes it straight away. Anything else (a delegate, a
    workflow, a pause still open) is carried on by the cycle after the commit. An approval's request is
    read first (a request's tool, run and schema never change): the subject an edit would have and the
    verdict of the type its feedback was asked in reach the rule as data.
    """
    k = c.k
    check_size(request_id, decision, k.limits)
    await refuse_answered_elsewhere(c, [request_id], principal=principal, options=options, resume=resume)
    now = k.clock()
    subject, feedback = await approval_facts(c, request_id, decision)
    ask = decision_ask(
        c,
        request_id,
        decision,
        principal=principal,
        now=now,
        via=via,
        resume=resume,
        options=options,
        edited_subject=subject,
        feedback=feedback,
    )
    try:
        done = await k.store.decide_request(ask, until=now + k.lease_seconds)
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


async def refuse_answered_elsewhere(
    c: Cycle, request_ids: Sequence[str], *, principal: Principal, options: CallOptions, resume: bool = True
) -> None:
    """Refuse decisions on a remote agent's ask that its task no longer waits on; the run goes on as the task did.

    See docs/guides/a2a.md#remote-agents-as-delegates. The task was answered at the remote agent first
    (or went on without the ask): the decision would not take effect, so nothing of it is recorded. The
    request is closed unanswered instead and the run carries on with the remote task's outcome. Only
    someone who may decide the request learns so.

    Raises:
        NotAllowed: the principal may not decide the request.
        AlreadyDecided: the remote task no longer waits on it.
    """
    if not c.remote.urls:
        return
    for request_id in request_ids:
        found = await c.k.store.request_with_run(request_id)
        if found is None or not c.remote.serves(found.run):
            continue
        check_allowed(found.request, principal)
        if not await c.remote.answered_elsewhere(found):
            continue
        if resume:
            await resume_if_ready(c, await _tree.root(c.k, found.run), options)
        raise AlreadyDecided(request_id, ANSWERED_ELSEWHERE)


def quorum_after(done: Decided) -> Quorum | None:
    """Where a request that needs several approvals stands after this decision (`None` for any other)."""
    request = done.found.request
    if not needs_votes(request) or request.routing is None:
        return None
    votes = [*done.found.votes, *([done.verdict.vote] if done.verdict.vote else [])]
    return quorum(request.routing, votes, starter=request.principal, proposed=request.args)


async def decide_there(c: Cycle, call: DecisionCall, options: CallOptions) -> DecideResult:
    """Deliver a decision to the engine that runs its request's top-level run (its workflow judges it).

    What the store already settles is answered here first (the workflow checks again inside, and the
    first decision wins there): someone who may not decide the request is refused before the engine
    hears of it, and a decided request is decided whether or not its run's workflow still runs.

    Raises:
        RequestNotFound: no request has this id (or the principal may not see it).
        NotAllowed: the principal may not decide it.
        AlreadyDecided: a different decision was taken first.
        RunConflict: the run's workflow cannot take the decision, and the store does not say why.
    """
    k = c.k
    assert c.engine is not None
    found = await k.store.request_with_run(call.request_id)
    if found is None:
        raise RequestNotFound(call.request_id)
    top = await _tree.root(k, found.run)
    if settled_already(found, call.decision, call.principal, now=k.clock()):
        return DecideResult(request_id=call.request_id, recorded=False, run=await _tree.result(k, top.run_id))
    try:
        recorded = await c.engine.decide(top, call, options)
    except StoreError as exc:
        raise await _unreached(c, exc, call.request_id) from exc
    except RunConflict:
        # Its workflow has ended (or is not there): the store says what became of the request.
        now = await k.store.request_with_run(call.request_id)
        if now is None or not settled_already(now, call.decision, call.principal, now=k.clock()):
            raise
        recorded = False
    return DecideResult(request_id=call.request_id, recorded=recorded, run=await _tree.result(k, top.run_id))


async def _unreached(c: Cycle, exc: StoreError, request_id: str) -> StoreError:
    """`exc` of a decision the engine could not take, saying whether the request was decided all the same.

    The engine may have recorded it before it stopped answering (the cluster restarting mid-segment),
    so the store, which a front reaches on its own, says where the request stands now.
    """
    try:
        state = await c.k.store.get_request(request_id)
    except StoreError:
        return exc
    if state is None or state.decision is None:
        now = f"request {request_id!r} is still open: no decision is recorded on it"
    else:
        taken = state.decision
        now = f"request {request_id!r} is decided ({taken.decision.kind}, by {taken.principal or taken.by}): "
        now += "its run goes on on the engine's workers"
    return StoreError(f"{exc}; {now}", service=exc.service)
