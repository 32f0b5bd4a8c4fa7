"""The verb answer: several requests of one paused run answered at once, all checked before any is recorded.

Requests the answers leave out wait, or count as skipped and the run resumes now. The answers are
recorded in one transaction; one refused answer records none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Literal

from ..._core.access import Principal, skip_refusal
from ..._core.audit_events import audit_body
from ..._core.deciding import (
    check_allowed,
    check_feedback,
    check_same_subject,
    edits_arguments,
    grant_from,
    keep_secrets,
    needs_holder,
    needs_votes,
)
from ..._core.decisions import Approve, Decision, DecisionRecord, Via, check_decision
from ..._core.grants import Grant
from ..._core.limits import check_decision as check_size
from ..._core.requests import Request
from ..._core.resume import Closer
from ..._store import RunRecord
from ...exceptions import AlreadyDecided, CallEnded, PauseConsumed, RequestNotFound, RunConflict
from .. import _holds, _tree
from .._cycle import Cycle
from .._kernel import new_id
from .._results import RunResult
from .._runner import CallOptions
from .decide import decide, refuse_answered_elsewhere
from .resume import close_orphaned, resume_if_ready
from .rules import feedback_of, subject_of_edit


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
    for request_id, given in answers.items():
        request = waiting.get(request_id)
        if request is None:
            found = await k.store.request_with_run(request_id)
            if found is None or (await _tree.root(k, found.run)).run_id != top.run_id:
                raise RequestNotFound(request_id)
            check_allowed(found.request, principal)
            decision = keep_secrets(found.request, given)
            if check_decision(found.request, decision, existing=found.decision, now=now) is None:
                continue  # the same decision again: a harmless no-op
            raise AlreadyDecided(request_id, "it is no longer open")
        check_allowed(request, principal)
        await _check_holder(c, request, now)
        to_record = check_decision(request, keep_secrets(request, given), existing=None, now=now)
        assert to_record is not None, "an open request has no decision to repeat"
        check_feedback(request, to_record, feedback_of(k, request, to_record))
        if edits_arguments(request, to_record) and not _as_proposed(request, to_record):
            # A vote's too, before any vote is cast: arguments a vote names as they stand kept the subject already.
            agent = (await k.store.get_run(request.run_id)).agent
            check_same_subject(request, to_record, subject_of_edit(k, request, to_record, agent=agent))
        if needs_votes(request):
            voted.append((request_id, to_record))  # counted by the one vote path, after every check
            continue
        record = DecisionRecord(
            request_id=request_id, decision=to_record, by="person", principal=principal.name, decided_at=now, via=via
        )
        grant = grant_from(
            request,
            to_record,
            now,
            giver=principal,
            grant_id=new_id("grt"),
            host_keeps_grants=options.host_keeps_grants,
        )
        records.append((request, record, grant))
    # One a remote task no longer waits on refuses them all, as any refusal does.
    await refuse_answered_elsewhere(c, [r.request_id for r, _, _ in records], principal=principal, options=options)
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
    # Not paused any more: a live form's holder here took the answers first and carries the run on.
    if top.status == "paused" and rest == "skip":
        if await _rest(c, top, principal, voted=[request_id for request_id, _ in voted]) == "skip":
            try:
                # What the answers left out is skipped by who answered.
                closing = replace(options, closer=Closer(principal.name, via))
                return await c.advance(top, force=True, options=closing)
            except PauseConsumed:
                return await _tree.result(k, top.run_id)
    return await resume_if_ready(c, top, options)


def _as_proposed(request: Request, decision: Decision) -> bool:
    """Whether a vote names the proposed arguments (as an interface that shows them does): no edit to check."""
    return needs_votes(request) and isinstance(decision, Approve) and decision.edited_args == request.args


async def _rest(c: Cycle, top: RunRecord, principal: Principal, *, voted: list[str]) -> Literal["wait", "skip"]:
    """Whether what the answers left out may be skipped now, or waits.

    A vote short of its quorum keeps the pause open: nothing left out is skipped past it. And what the caller
    may not decide is not theirs to skip (`skip_refusal`): it waits for its decider.
    """
    still = await _tree.open_leaves(c.k, top)
    if any(r.request_id in voted for r in still) or skip_refusal(principal, still) is not None:
        return "wait"
    return "skip"


async def _check_holder(c: Cycle, request: Request, now: float) -> None:
    """Refuse an answer only a gone holder could deliver (its form closes as cancelled), before its content is taken."""
    if not needs_holder(request):
        return
    found = await c.k.store.request_with_run(request.request_id)
    assert found is not None, "an open request is stored"
    try:
        _holds.check_holder(found, now)
    except CallEnded:
        await close_orphaned(c, request.request_id)
        raise
