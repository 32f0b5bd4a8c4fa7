"""Steps several verbs take inside their transaction: recording decisions, consuming a pause to resume its run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..._core.audit_events import AuditEvent
from ..._core.deciding import ResumeClaim
from ..._core.decisions import DecisionRecord
from ..._core.grants import Grant
from ...exceptions import PauseConsumed, RunConflict
from .._messages import decode_history
from .._ops import ClaimRun, ConsumePause, FinishExecutions, NewDecisions, NewEvents, NewExecutions
from .._primitives import StoreTx
from .._records import Claim, ExecutionResult, RunRecord


async def record(tx: StoreTx, records: Sequence[DecisionRecord], audit: Sequence[AuditEvent] = ()) -> None:
    """Record decisions (their requests become `decided`, an outbox event each) with their audit records."""
    await tx.append_audit(audit)  # first: on PostgreSQL its head lock is the one round trip
    if records:
        await tx.add(NewDecisions(records))
        await tx.add(NewEvents("request.decided", [d.request_id for d in records], max(d.decided_at for d in records)))


async def finish(tx: StoreTx, executions: Sequence[ExecutionResult], now: float) -> None:
    """Write the results of approved calls to their ledger entries, their audit records appended first."""
    if executions:
        await tx.append_audit([done.audit for done in executions])  # first: its head lock is the one round trip
        await tx.change(FinishExecutions(executions, now))


async def claim(
    tx: StoreTx,
    run: RunRecord,
    pause_id: str,
    resume: ResumeClaim,
    *,
    holder: str,
    until: float,
    now: float,
    history: bool,
) -> tuple[list[bytes] | None, list[Grant] | None]:
    """Consume the pause and take the run: skips recorded, ledger marks written, history and grants read.

    Raises:
        PauseConsumed: the pause was consumed before.
        RunConflict: one of the skips was decided meanwhile.
    """
    if resume.audit:
        await tx.lock_audit()  # before the pause's row: the one lock order
    if not await tx.change(ConsumePause(pause_id)):
        raise PauseConsumed(run.run_id, "this pause was already resumed; a pause is consumed once")
    if resume.added and await tx.decisions([d.request_id for d in resume.added]):
        raise decided_meanwhile(run.run_id)
    await record(tx, resume.added, resume.audit)
    if resume.executing:
        await tx.add(NewExecutions(resume.executing, run.run_id, now))
    await tx.change(ClaimRun(run_id=run.run_id, pause_id=pause_id, holder=holder, until=until, now=now))
    bodies = await tx.history(run.thread_id) if history else None
    return bodies, await tx.active_grants(resume.grants_of, now)


def claimed(
    run: RunRecord,
    pause_id: str,
    bodies: list[bytes] | None,
    grants: list[Grant] | None,
    *,
    holder: str,
    until: float,
    now: float,
) -> Claim:
    """The run as `claim` left it, with the history decoded outside the transaction."""
    return Claim(
        run=replace(
            run,
            status="running",
            resume_pause_id=pause_id,
            pause_id=None,
            lease_holder=holder,
            lease_expires_at=until,
            updated_at=now,
            revision=run.revision + 1,
        ),
        history=decode_history(bodies) if bodies is not None else None,
        grants=grants,
    )


def decided_meanwhile(run_id: str) -> RunConflict:
    return RunConflict(run_id, "a request this resume closes was decided meanwhile; reload the pause and resume again")


def lost_lease(run_id: str) -> RunConflict:
    return RunConflict(run_id, "this process lost its lease on the run; another process carries it on")
