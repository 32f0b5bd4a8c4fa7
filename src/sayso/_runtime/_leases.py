"""Leases: which runtime is working on a running run, taking one over, and the calls its dead holder cut off.

A running run is held by one runtime (its lease holder) until a deadline the holder keeps moving
with a heartbeat (`_heartbeat`). A run whose lease lapsed, or whose holder is a dead process on
this host, may be taken over by another runtime (one wins: a conditional write), which redoes its
last segment from the store under the ledger rules; the sweep that finds such runs is the verb
`_verbs.recover`'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pydantic_core import to_json

from .._engine.gate import UNKNOWN_OUTCOME, outcome_unknown
from .._store import RunRecord, holder_is_dead
from ..exceptions import RunConflict
from ._kernel import Kernel

ABANDONED = "abandoned: its process stopped and its parent carried on without it"
"""Why a delegate's run whose process died and whose parent no longer waits on it failed."""


@contextmanager
def holding(k: Kernel, run: RunRecord) -> Iterator[None]:
    """Keep this runtime's lease on the run alive while it works."""
    k.heartbeat.hold(run.run_id)
    try:
        yield
    finally:
        k.heartbeat.release(run.run_id)


async def take_over(k: Kernel, run: RunRecord) -> RunRecord:
    """Take over a running run whose holder died (its lease lapsed, or it is a dead process of this host).

    Raises:
        RunConflict: another live runtime holds the run.
    """
    now = k.clock()
    dead = [run.lease_holder] if run.lease_holder is not None and holder_is_dead(run.lease_holder) else []
    if not await k.store.take_over(
        run.run_id, holder=k.holder, until=now + k.lease_seconds, now=now, dead_holders=dead
    ):
        raise RunConflict(run.run_id, "another live process is carrying this run on; wait for it to pause or finish")
    return await k.store.get_run(run.run_id)


async def release(k: Kernel, run_id: str) -> bool:
    """Let go of this runtime's lease on a running run it stops working on: another runtime may take it over at once.

    A conditional write on the holder, so only the lease's holder lets go of it (a lease another
    runtime took over meanwhile stays that runtime's); the lease is left lapsed rather than
    cleared, which is what `take_over` takes. A process that dies lets go of nothing: its lease
    lapses, or its holder is found dead. Whether this runtime held it.
    """
    return await k.store.renew_lease(run_id, k.holder, until=0.0)


async def abandon(k: Kernel, run: RunRecord, *, error: str = ABANDONED) -> None:
    """Close a dead run, failed with `error` (by default: a delegate's, whose parent no longer waits on it).

    A top-level run its front never handed to the engine is closed so too (`_cycle.NEVER_HANDED_OVER`).

    Its cut-off calls are recorded unknown.

    Raises:
        RunConflict: another live process holds the run, or it is no longer running.
    """
    now = k.clock()
    dead = [run.lease_holder] if run.lease_holder is not None and holder_is_dead(run.lease_holder) else []
    if not await k.store.take_over(
        run.run_id, holder=k.holder, until=now + k.lease_seconds, now=now, dead_holders=dead
    ):
        raise RunConflict(run.run_id, "another process took this run over")
    await k.store.finish_run(
        await k.store.get_run(run.run_id),
        holder=k.holder,
        new_messages=(),
        status="failed",
        output=None,
        error=error,
        now=k.clock(),
    )
    await resolve_stuck(k, run_id=run.run_id)


async def resolve_stuck(k: Kernel, *, run_id: str | None = None) -> int:
    """Resolve ledger entries no process will finish as `unknown`, each with an `outcome_unknown` audit record.

    With `run_id`, that run's entries (its segment just ended without finishing them); otherwise every
    entry whose run is no longer running. Returns how many were resolved.
    """
    stuck = await k.store.stuck_executions(run_id=run_id)
    for entry in stuck:
        state = await k.store.get_request(entry.request_id)
        body = outcome_unknown(
            request_id=entry.request_id,
            run_id=entry.run_id,
            tool_name=state.request.tool_name if state is not None else None,
            at=k.clock(),
        )
        await k.store.finish_execution(
            entry.request_id, to_json(UNKNOWN_OUTCOME), k.clock(), audit=[body], status="unknown"
        )
    return len(stuck)
