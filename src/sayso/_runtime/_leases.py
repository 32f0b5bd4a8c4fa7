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

from .._results import RunResult
from .._store import RunRecord
from ..exceptions import RunConflict, StoreError

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
