"""Leases: which runtime is working on a running run, and taking over runs whose process died.

A running run is held by one runtime (its lease owner) until a deadline the owner keeps moving
with a heartbeat. A run whose lease lapsed, or whose owner is a dead process on this host, may
be taken over by another runtime (one wins: a conditional write), which redoes its last segment
from the store under the ledger rules.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .._core.requests import DelegateRequest
from .._store import RunRecord
from ..exceptions import PauseConsumed, RunConflict, SaysoError, StoreError
from ._results import RunResult

if TYPE_CHECKING:
    from ._kernel import Kernel

logger = logging.getLogger("sayso.leases")


class Heartbeat:
    """One timer per runtime that keeps the lease of every run the runtime works on alive.

    A run segment only registers while it works (`holding`); the timer runs while at least one
    is registered, and each beat renews all of them, so a segment costs two dictionary updates
    instead of a task of its own.
    """

    def __init__(self) -> None:
        self.held: dict[str, int] = {}
        """Runs being worked on, with how many segments of this runtime hold each."""
        self._timer: asyncio.TimerHandle | None = None
        self._beats: set[asyncio.Task[None]] = set()

    def hold(self, k: Kernel, run_id: str) -> None:
        self.held[run_id] = self.held.get(run_id, 0) + 1
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(k.lease_seconds / 3, self._beat, k)

    def release(self, run_id: str) -> None:
        left = self.held.pop(run_id) - 1
        if left:
            self.held[run_id] = left
        elif not self.held and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _beat(self, k: Kernel) -> None:
        loop = asyncio.get_running_loop()
        task = loop.create_task(_renew(k, list(self.held)))
        self._beats.add(task)
        task.add_done_callback(self._beats.discard)
        self._timer = loop.call_later(k.lease_seconds / 3, self._beat, k)


async def _renew(k: Kernel, run_ids: list[str]) -> None:
    for run_id in run_ids:
        try:
            await k.store.renew_lease(run_id, k.owner, k.clock() + k.lease_seconds)
        except StoreError:
            # The run's next write checks the lease itself: a lapsed lease fails it there.
            logger.warning("could not renew the lease of run %s", run_id, exc_info=True)


@contextmanager
def holding(k: Kernel, run: RunRecord) -> Iterator[None]:
    """Keep this runtime's lease on the run alive while it works."""
    k.heartbeat.hold(k, run.run_id)
    try:
        yield
    finally:
        k.heartbeat.release(run.run_id)


async def carry_on(k: Kernel, run: RunRecord) -> RunResult:
    """Take over a run whose process died, and redo its last segment from the store.

    Raises:
        RunConflict: another live runtime holds the run.
    """
    from . import _step, _workflows

    now = k.clock()
    dead = [run.lease_owner] if run.lease_owner and owner_is_dead(run.lease_owner) else []
    if not await k.store.take_over(run.run_id, owner=k.owner, until=now + k.lease_seconds, now=now, dead_owners=dead):
        raise RunConflict(run.run_id, "another live process is carrying this run on; wait for it to pause or finish")
    run = await k.store.get_run(run.run_id)
    if _workflows.hosts(k, run.agent):
        return await _workflows.carry_on(k, run)
    built = k.built(run.agent)
    if run.resume_pause_id is None:
        return await _step.execute(k, built, run, prompt=run.prompt, requests=[], decisions={})
    state = await k.store.pause_state(run.resume_pause_id)
    # The run's own pause: its prompt is already in history. A pause of the run this one
    # superseded: the new message still has to be sent.
    prompt = None if state.run_id == run.run_id else run.prompt
    return await _step.execute(k, built, run, prompt=prompt, requests=state.requests, decisions=state.decisions)


async def recover(k: Kernel) -> list[RunResult]:
    """Carry on every run whose process died (lease lapsed, or a dead process of this host), under the ledger rules.

    Also resumes a paused run whose every request was decided long enough ago but that nobody
    resumed (the deciding process died between recording the last decision and resuming).

    Top-level runs are carried on from the store: an approved call that was cut off is recorded as
    `outcome unknown` and never runs twice. A delegate's run is carried on when its parent's pause
    still waits on it (and the tree resumes if that was all it waited on); a delegate whose parent
    moved on (its segment was redone, starting a new delegate) is closed as failed. Several runtimes
    may sweep at once: a conditional take-over gives each run to one. Ledger entries left
    `executing` by segments that ended are resolved as unknown last.
    """
    from . import _deciding, _tree

    now = k.clock()
    host = socket.gethostname()
    results: list[RunResult] = []
    runs = [
        run
        for run in await k.store.lapsed_runs(now=now, host=host)
        if (run.lease_expires_at is not None and run.lease_expires_at < now)
        or (run.lease_owner is not None and owner_is_dead(run.lease_owner))
    ]
    for run in sorted(runs, key=lambda r: r.parent_run_id is not None):
        try:
            if run.parent_run_id is None:
                results.append(await carry_on(k, run))
                continue
            if run.agent in k.remote_urls:
                continue  # a remote delegate's proxy: its parent's resume polls the remote task
            parent = await k.store.get_run(run.parent_run_id)
            if parent.status == "running" and parent.run_id not in {r.run_id for r in runs}:
                continue  # the parent's live process is running this delegate
            if await _awaited(k, parent, run.run_id):
                await carry_on(k, run)
                results.append(await _deciding.resume_if_ready(k, await _tree.root(k, parent)))
            else:
                await abandon(k, run)
        except (RunConflict, PauseConsumed):
            continue  # another runtime took it over first
        except SaysoError:
            logger.exception("could not carry on run %s; the next sweep tries again", run.run_id)
    results.extend(await _resume_stalled(k, now))
    await resolve_stuck(k)
    return results


async def _resume_stalled(k: Kernel, now: float) -> list[RunResult]:
    """Resume pauses whose last decision was recorded by a process that died before resuming the run.

    Only pauses nothing happened on for a lease's length are taken, so a live decider resumes its own.
    """
    from . import _deciding, _tree

    results: list[RunResult] = []
    seen: set[str] = set()
    for run_id in await k.store.stalled_runs(before=now - k.lease_seconds):
        top = await _tree.root(k, await k.store.get_run(run_id))
        if top.run_id in seen:
            continue
        seen.add(top.run_id)
        try:
            before = top.pause_id
            outcome = await _deciding.resume_if_ready(k, top)
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


async def abandon(k: Kernel, run: RunRecord) -> None:
    """Close a dead delegate run whose parent no longer waits on it: failed, its cut-off calls unknown."""
    now = k.clock()
    dead = [run.lease_owner] if run.lease_owner and owner_is_dead(run.lease_owner) else []
    if not await k.store.take_over(run.run_id, owner=k.owner, until=now + k.lease_seconds, now=now, dead_owners=dead):
        raise RunConflict(run.run_id, "another process took this run over")
    await k.store.finish_run(
        await k.store.get_run(run.run_id),
        owner=k.owner,
        new_messages=(),
        status="failed",
        output=None,
        error="abandoned: its process stopped and its parent carried on without it",
        now=k.clock(),
    )
    await resolve_stuck(k, run_id=run.run_id)


async def resolve_stuck(k: Kernel, *, run_id: str | None = None) -> int:
    """Resolve ledger entries no process will finish as `unknown`, each with an `outcome_unknown` audit record.

    With `run_id`, that run's entries (its segment just ended without finishing them); otherwise every
    entry whose run is no longer running. Returns how many were resolved.
    """
    from pydantic_core import to_json

    from .._engine.gate import UNKNOWN_OUTCOME, outcome_unknown

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


def owner_is_dead(owner: str) -> bool:
    """Whether a lease owner on this host is a process that no longer exists."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
