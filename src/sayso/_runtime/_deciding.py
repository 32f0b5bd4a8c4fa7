"""Deciding: checking a decision, recording it (with the grant it creates), expiry, and what follows.

Every decision is checked before anything is written — who may decide (the one access rule),
whether the answer fits the request, whether an edit keeps the subject the person saw — so a
refused decision changes nothing and the pause stays open. The first decision wins. When the
last open request of a pause is decided, the run resumes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Literal

from .._core.access import Principal, refusal, root_agent
from .._core.advance import approved_calls
from .._core.audit_events import AuditEvent
from .._core.decisions import Approve, Decision, DecisionRecord, Expire, Reject, Via, check_decision
from .._core.grants import Grant
from .._core.limits import check_decision as check_size
from .._core.requests import ApprovalRequest, Request
from .._core.resume import open_requests, plan_resume
from .._core.votes import Quorum, Vote, quorum, same_as_shown, tally, vote_event
from .._engine.deferred import audit_body
from .._store import Decided, PauseState, RequestWithRun, ResumeClaim, RunRecord, Verdict
from ..exceptions import AlreadyDecided, InvalidDecision, NotAllowed, PauseConsumed, RequestNotFound, RunConflict
from . import _remote, _step, _tree
from ._cycle import Cycle
from ._kernel import Kernel, new_id
from ._results import DecideResult, RunResult
from ._runner import DEFAULTS, CallOptions


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
            counted = tally(
                request, found.votes, to_record, principal=principal.name, now=now, via=via, alone=principal.local
            )
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
            or c.kind_of(run) != "agent"
        ):
            # Delegates, pauses still waiting and workflow runs (whose resume reads their state
            # with the claim) go the general way, after the commit.
            return verdict
        plan = plan_resume(run.run_id, state.requests, decided, force=False, now=now)
        executing = list(approved_calls(state.requests, plan))
        return replace(verdict, resume=ResumeClaim(executing=executing, grants_of=run.principal or ""))

    done = await k.store.decide_request(request_id, judge, owner=k.holder, until=now + k.lease_seconds, now=now)
    if done is None:
        raise RequestNotFound(request_id)
    record = done.verdict.record
    recorded = record is not None or done.verdict.vote is not None
    standing = quorum_after(done)
    if record is not None:
        k.events.decided([done.found.request], [record])
    if done.claim is not None:
        run = await _resume_claimed(c, done, options)
        return DecideResult(request_id=request_id, recorded=True, run=run, quorum=standing)
    top = await _tree.root(k, done.found.run)
    if not resume or record is None:
        run = await _tree.result(k, top.run_id)
        return DecideResult(request_id=request_id, recorded=recorded, run=run, quorum=standing)
    run = await resume_if_ready(c, top, options)
    return DecideResult(request_id=request_id, recorded=recorded, run=run, quorum=standing)


def needs_votes(request: Request) -> bool:
    """Whether a request is decided by several approvers' votes (docs/guides/routing.md#quorum)."""
    return (
        isinstance(request, ApprovalRequest) and request.routing is not None and request.routing.approvals_required > 1
    )


def quorum_after(done: Decided) -> Quorum | None:
    """Where a request that needs several approvals stands after this decision (`None` for any other)."""
    request = done.found.request
    if not needs_votes(request) or request.routing is None:
        return None
    votes = [*done.found.votes, *([done.verdict.vote] if done.verdict.vote else [])]
    return quorum(request.routing, votes, starter=request.principal)


async def _resume_claimed(c: Cycle, done: Decided, options: CallOptions) -> RunResult:
    """Carry on a run whose pause the decision's own commit consumed (see `decide`)."""
    k = c.k
    assert done.claim is not None and done.verdict.record is not None and done.verdict.resume is not None
    requests = done.state.requests
    decisions = {**done.state.decisions, done.verdict.record.request_id: done.verdict.record}
    built = k.built(done.claim.run.agent)
    await _step.tell_services(k, built, requests, decisions)
    return await _step.execute(
        k,
        c,
        built,
        done.claim.run,
        options=options,
        prompt=None,
        requests=requests,
        decisions=decisions,
        marked=frozenset(done.verdict.resume.executing),
        history=done.claim.history,
        stored_grants=done.claim.grants,
    )


async def answer_pause(
    c: Cycle,
    run_id: str,
    answers: Mapping[str, Decision],
    *,
    principal: Principal,
    rest: Literal["wait", "skip"],
    options: CallOptions,
    via: Via | None = None,
) -> RunResult:
    """Answer several requests of one paused run at once: all are checked before any is recorded.

    Requests the answers leave out wait (`rest="wait"`) or count as skipped (`rest="skip"`).
    """
    k = c.k
    for request_id, decision in answers.items():
        check_size(request_id, decision, k.limits)
    top = await _tree.root(k, await k.store.get_run(run_id))
    if top.status != "paused":
        raise RunConflict(top.run_id, f"the run is {top.status}; only a paused run takes answers")
    waiting = {r.request_id: r for r in await _tree.open_leaves(k, top)}
    now = k.clock()
    records: list[tuple[Request, DecisionRecord, Grant | None]] = []
    voted: list[tuple[str, Decision]] = []
    for request_id, decision in answers.items():
        request = waiting.get(request_id)
        if request is None:
            found = await k.store.request_with_run(request_id)
            if found is None or (await _tree.root(k, found.run)).run_id != top.run_id:
                raise RequestNotFound(request_id)
            check_allowed(found.request, principal)
            if check_decision(found.request, decision, existing=found.decision, now=now) is None:
                continue  # the same decision again: a harmless no-op
            raise AlreadyDecided(request_id, "it is no longer open")
        check_allowed(request, principal)
        to_record = check_decision(request, decision, existing=None, now=now)
        assert to_record is not None, "an open request has no decision to repeat"
        if needs_votes(request):
            voted.append((request_id, to_record))  # counted by the one vote path, after every check
            continue
        if edits_arguments(request, to_record):
            check_same_subject(k, request, to_record, agent=(await k.store.get_run(request.run_id)).agent)
        record = DecisionRecord(
            request_id=request_id, decision=to_record, by="person", principal=principal.name, decided_at=now, via=via
        )
        records.append((request, record, grant_from(request, to_record, now, giver=principal, options=options)))
    for request_id, decision in voted:
        await decide(c, request_id, decision, principal=principal, resume=False, via=via, options=options)
    earlier = await k.store.record_decisions(
        [record for _, record, _ in records],
        audit=[audit_body(request, record) for request, record, _ in records],
        grants=[grant for _, _, grant in records if grant is not None],
    )
    if earlier:
        raise AlreadyDecided(earlier[0].request_id, "another decision was recorded first; the first decision wins")
    k.events.decided([r for r, _, _ in records], [d for _, d, _ in records])
    top = await k.store.get_run(top.run_id)
    if rest == "skip":
        try:
            return await c.advance(top, force=True, options=options)
        except PauseConsumed:
            return await _tree.result(k, top.run_id)
    return await resume_if_ready(c, top, options)


async def resume_if_ready(c: Cycle, top: RunRecord, options: CallOptions = DEFAULTS) -> RunResult:
    """Resume a paused top-level run when nothing below it is open any more; else say where it stands."""
    k = c.k
    if top.status != "paused" or top.pause_id is None:
        return await _tree.result(k, top.run_id)
    state = await k.store.pause_state(top.pause_id)
    if await _tree.leaves_in(k, state.requests, state.decisions):
        return await _tree.result(k, top.run_id)
    try:
        return await c.advance(top, force=False, options=options, state=state)
    except PauseConsumed:
        return await _tree.result(k, top.run_id)  # another decider's resume carries the run on


async def expire(c: Cycle) -> list[RunResult]:
    """Close every paused run whose open requests have all expired; each agent answers with what it knows."""
    k = c.k
    now = k.clock()
    results: list[RunResult] = []
    for run_id in await k.store.expired_runs(now):
        run = await k.store.get_run(run_id)
        if run.status != "paused" or run.pause_id is None:
            continue
        state = await k.store.pause_state(run.pause_id)
        waiting = open_requests(state.requests, state.decisions)
        if not waiting or any(r.expires_at is None or r.expires_at > now for r in waiting):
            continue
        expired = [
            DecisionRecord(
                request_id=r.request_id,
                decision=Expire(expires_at=r.expires_at or now),
                by="expiry",
                principal=None,
                decided_at=now,
            )
            for r in waiting
        ]
        by_id = {r.request_id: r for r in waiting}
        await k.store.add_decisions(expired, audit=[audit_body(by_id[d.request_id], d) for d in expired])
        k.events.decided(waiting, expired)
        top = await _tree.root(k, run)
        if await _tree.open_leaves(k, top):
            continue
        try:
            results.append(await c.advance(top, force=False, options=DEFAULTS))
        except PauseConsumed:
            continue
    return results


def check_allowed(request: Request, principal: Principal) -> None:
    """The thread's owner or an approver for its root agent decides; a routed request, its approvers only.

    See docs/guides/rest.md#who-may-call and docs/guides/routing.md.
    """
    why = refusal(principal, owner=request.principal, agent_path=request.agent_path, routing=request.routing)
    if why is not None:
        raise NotAllowed(request.request_id, why)


def edits_arguments(request: Request, decision: Decision) -> bool:
    """Whether `decision` approves `request` with edited arguments (which must keep its subject)."""
    return isinstance(request, ApprovalRequest) and isinstance(decision, Approve) and decision.edited_args is not None


def check_same_subject(k: Kernel, request: Request, decision: Decision, *, agent: str) -> None:
    """An edit must keep the subject the person saw: a remembered decision never reaches further.

    `agent` is the agent whose run raised the request (its gate knows the subject).
    """
    if not isinstance(request, ApprovalRequest) or not isinstance(decision, Approve):
        return
    if decision.edited_args is not None and _remote.is_remote_call(request):
        raise InvalidDecision(
            request.request_id, "a remote agent's call cannot be edited from here (kagent's HITL has no edits)"
        )
    if decision.edited_args is None or request.subject is None or request.service_request is not None:
        return
    gate = k.built(agent).gate
    subject = gate.subject_for(request.tool_name, decision.edited_args)
    if subject is None or subject.key != request.subject.key:
        shown = subject.label if subject else "no approval at all"
        raise InvalidDecision(
            request.request_id, f"the edit changes what the approval covers ({request.subject.label} → {shown})"
        )


def grant_from(
    request: Request, decision: Decision, now: float, *, giver: Principal, options: CallOptions
) -> Grant | None:
    """The grant an approval with a wider scope creates; none for service-enforced requests, or when a host keeps them.

    This is the one place a grant is made. It is given for the request's root agent and reaches
    no further: an approver for one agent never lets calls through another.

    See docs/concepts/decisions.md#scopes-remembering-an-approval.
    """
    if not isinstance(request, ApprovalRequest) or not isinstance(decision, Approve) or decision.scope == "once":
        return None
    if options.host_keeps_grants:
        return None  # the host keeps remembered approvals for this call; sayso stores none
    if request.service_request is not None or request.subject is None:
        return None
    return Grant(
        grant_id=new_id("grt"),
        tool=request.tool_name,
        subject_key=request.subject.key,
        subject_label=request.subject.label,
        scope=decision.scope,
        principal=request.principal or "",
        agent=root_agent(request.agent_path),
        # "Allow for this chat": the person's chat, also when a delegate (with a thread of its own) asked.
        thread_id=(request.chat_thread_id or request.thread_id) if decision.scope == "thread" else None,
        created_at=now,
        granted_by=giver.name,
    )
