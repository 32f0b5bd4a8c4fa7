"""The verb recover: carrying on every run whose process died, and pauses a dead decider left unresumed.

The sweep `sayso serve` runs at start and every few seconds, and `Sayso.recover`. It reads which
runs' leases lapsed (or whose holder is a dead process of this host), takes each over (a
conditional write: one runtime wins) and lets the cycle hand it to its runner, which redoes its
last segment under the ledger rules; what a dead delegate's parent no longer waits on is closed.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable

from ..._core.requests import DelegateRequest
from ..._store import RunRecord, holder_is_dead
from ...exceptions import PauseConsumed, RunConflict, SaysoError
from .. import _holds, _tree
from .._cycle import Cycle
from .._kernel import Kernel
from .._leases import abandon, resolve_stuck
from .._results import RunResult
from .._runner import DEFAULTS
from .resume import resume_if_ready

logger = logging.getLogger("sayso.leases")


async def recover(c: Cycle, *, on_run: Callable[[str, str], None] | None = None) -> list[RunResult]:
    """Carry on every run whose process died (lease lapsed, or a dead process of this host), under the ledger rules.

    Also resumes a paused run whose every request was decided long enough ago but that nobody
    resumed (the deciding process died between recording the last decision and resuming), and
    closes as cancelled the forms of a held pause whose holder died (`_holds.close_orphaned`).

    Top-level runs are carried on from the store: an approved call that was cut off is recorded as
    `outcome unknown` and never runs twice. A delegate's run is carried on when its parent's pause
    still waits on it (and the tree resumes if that was all it waited on): a remote delegate's proxy cut
    off while it sent decisions down asks its remote task where it stands (`RemoteRunner.carry_on`). One
    whose parent is still running is its parent's segment's to carry on (redone, the segment meets the
    delegate's call again and carries its run on: `Cycle.delegate`); a delegate whose parent moved on
    without it is closed as failed. Several runtimes
    may sweep at once: a conditional take-over gives each run to one. Ledger entries left
    `executing` by segments that ended are resolved as unknown last. `on_run` hears `(run_id, thread_id)`
    of each top-level run as it is carried on (the one a delegate's carrying on resumes, too).
    """

    def carrying(run: RunRecord) -> RunRecord:
        if on_run is not None:
            on_run(run.run_id, run.thread_id)
        return run

    k = c.k
    now = k.clock()
    host = socket.gethostname()
    results: list[RunResult] = []
    lapsed = [
        run
        for run in await k.store.lapsed_runs(now=now, host=host)
        if (run.lease_expires_at is not None and run.lease_expires_at < now) or holder_is_dead(run.lease_holder)
    ]
    for held in (run for run in lapsed if run.status == "paused"):
        # The process holding its live calls stopped: its forms close as cancelled and the run carries on.
        try:
            if await _holds.close_orphaned(k, held):
                results.append(await resume_if_ready(c, carrying(await _tree.root(k, held))))
        except SaysoError:
            logger.exception("could not close the forms of run %s; the next sweep tries again", held.run_id)
    runs = [run for run in lapsed if run.status == "running"]
    for run in sorted(runs, key=lambda r: r.parent_run_id is not None):
        try:
            if run.parent_run_id is None:
                results.append(await c.carry_on(carrying(run), DEFAULTS))
                continue
            parent = await k.store.get_run(run.parent_run_id)
            if parent.status == "running":
                # Its parent's segment carries it on: a live one is running it, and one redone after its
                # process died (this sweep's, the next one's, another runtime's) meets its call again.
                continue
            if await _awaited(k, parent, run.run_id):
                carried = await c.carry_on(run, DEFAULTS)
                if carried.status == "running" and not c.runner(run).local:
                    continue  # a remote delegate's task still at work (or its agent away): asked again next sweep
                results.append(await resume_if_ready(c, carrying(await _tree.root(k, parent))))
            else:
                await abandon(k, run)
        except (RunConflict, PauseConsumed):
            continue  # another runtime took it over first
        except SaysoError:
            logger.exception("could not carry on run %s; the next sweep tries again", run.run_id)
    results.extend(await _resume_stalled(c, now, carrying))
    await c.remote.deliver_cancels()  # cancels a remote agent away at the time could not take
    await resolve_stuck(k)
    return results


async def _resume_stalled(c: Cycle, now: float, carrying: Callable[[RunRecord], RunRecord]) -> list[RunResult]:
    """Resume pauses whose last decision was recorded by a process that died before resuming the run.

    Only pauses nothing happened on for a lease's length are taken, so a live decider resumes its own.
    """
    k = c.k
    results: list[RunResult] = []
    seen: set[str] = set()
    for run_id in await k.store.stalled_runs(before=now - k.lease_seconds):
        top = await _tree.root(k, await k.store.get_run(run_id))
        if top.run_id in seen:
            continue
        seen.add(top.run_id)
        try:
            before = top.pause_id
            outcome = await resume_if_ready(c, carrying(top), wait_for_holder=False)  # a live holder carries its own on
        except SaysoError:
            logger.exception("could not resume run %s; the next sweep tries again", top.run_id)
            continue
        if outcome.status != "paused" or (await k.store.get_run(top.run_id)).pause_id != before:
            results.append(outcome)
    return results


async def _awaited(k: Kernel, parent: RunRecord, child_run_id: str) -> bool:
    """Whether `parent`'s open pause waits on the delegate run `child_run_id`."""
    if parent.status != "paused" or parent.pause_id is None:
        return False
    state = await k.store.pause_state(parent.pause_id)
    return any(
        isinstance(r, DelegateRequest) and r.child_run_id == child_run_id and r.request_id not in state.decisions
        for r in state.requests
    )
