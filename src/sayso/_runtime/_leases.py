"""Leases: which runtime is working on a running run, and taking over runs whose process died.

A running run is held by one runtime (its lease owner) until a deadline the owner keeps moving
with a heartbeat. A run whose lease lapsed, or whose owner is a dead process on this host, may
be taken over by another runtime (one wins: a conditional write), which redoes its last segment
from the store under the ledger rules.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from .._results import RunResult
from .._store import RunRecord
from ..exceptions import RunConflict

if TYPE_CHECKING:
    from ._kernel import Kernel


@asynccontextmanager
async def holding(k: Kernel, run: RunRecord) -> AsyncIterator[None]:
    """Keep this runtime's lease on the run alive while it works."""

    async def heartbeat() -> None:
        while True:
            await anyio.sleep(k.lease_seconds / 3)
            await k.store.renew_lease(run.run_id, k.owner, k.clock() + k.lease_seconds)

    async with anyio.create_task_group() as tg:
        tg.start_soon(heartbeat)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


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
