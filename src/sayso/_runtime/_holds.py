"""Held pauses: a server's form that only the process holding its live MCP call can hand back.

See docs/guides/mcp.md#which-answers-survive-a-restart.

A form an MCP server pushed on a live call of a tool that may not be called again
(`ElicitationRequest.needs_holder`) is answered on that very call, so only the process holding it
can deliver the answer. That process holds the paused run — a lease on it, saved with the pause and
renewed while the call waits (`_live`) — and carries the run on once the form is answered, from
whichever process the answer came: another process records the decision and hands the run over.

Once the holder stopped (its hold lapsed, or it is a dead process of this host), or the server
dropped the call (the holder sees it end), nobody can deliver an answer. The request is then
closed as cancelled, by sayso (`close_orphaned`, run by the sweeps and by the first decision that
finds it so; `close_forms`, by the holder), and the model reads that the call did not complete; a
decision on it is refused with `CallEnded` before anything of it is taken.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from .._core import deciding
from .._core.audit_events import audit_body
from .._core.deciding import needs_holder
from .._core.decisions import Cancel, DecisionRecord
from .._core.requests import DelegateRequest, Request
from .._core.resume import open_requests
from .._store import RequestWithRun, RunRecord, holder_is_dead
from ._kernel import Kernel

POLL_SECONDS = 0.25
"""How often a holder looks for answers given elsewhere, and a decider elsewhere for the holder's progress."""

HANDOVER_SECONDS = 30.0
"""How long a decision taken in another process waits for the holder to carry the run on before it answers."""


def hold_alive(run: RunRecord, now: float) -> bool:
    """Whether a paused run is held by a process that may still be alive (the core's rule, with the holder's pid)."""
    return deciding.hold_alive(run, now, gone=holder_is_dead(run.lease_holder))


def held_elsewhere(k: Kernel, run: RunRecord, now: float) -> bool:
    """Whether another live process holds this paused run: only it may carry the run on."""
    return hold_alive(run, now) and run.lease_holder != k.holder


def check_holder(found: RequestWithRun, now: float) -> None:
    """Refuse a decision on a form nobody can deliver any more (the core's `check_holder`, with the holder's liveness).

    Raises:
        CallEnded: the live call that asked the form ended with the process holding it.
    """
    deciding.check_holder(found, found.run, now, gone=holder_is_dead(found.run.lease_holder))


async def close_orphaned(k: Kernel, run: RunRecord) -> bool:
    """Close as cancelled the forms of a paused run whose holder is gone, and end its hold; whether any was closed.

    The caller carries the run on afterwards when nothing else is open (the model reads that each
    call did not complete). A form decided meanwhile keeps its decision.
    """
    now = k.clock()
    if run.status != "paused" or run.pause_id is None or hold_alive(run, now):
        return False
    state = await k.store.pause_state(run.pause_id)
    orphans = [r for r in open_requests(state.requests, state.decisions) if needs_holder(r)]
    await close_forms(k, orphans)
    if run.lease_holder is not None:
        await k.store.release_hold(run.run_id, run.lease_holder)
    return bool(orphans)


async def close_forms(k: Kernel, forms: Sequence[Request]) -> None:
    """Close forms nobody can deliver an answer to as cancelled, by sayso (then `check_holder` refuses answers)."""
    now = k.clock()
    records = [
        DecisionRecord(request_id=r.request_id, decision=Cancel(), by="system", principal=None, decided_at=now)
        for r in forms
    ]
    if records:
        await k.store.add_decisions(records, audit=[audit_body(r, d) for r, d in zip(forms, records, strict=True)])
        k.events.decided(forms, records)


async def held_in_tree(k: Kernel, run: RunRecord) -> RunRecord | None:
    """The run of a paused tree that another live process holds (the run itself or a delegate below), if any."""
    now = k.clock()
    if run.status != "paused" or run.pause_id is None:
        return None
    if held_elsewhere(k, run, now):
        return run
    state = await k.store.pause_state(run.pause_id)
    for request in open_requests(state.requests, state.decisions):
        if isinstance(request, DelegateRequest):
            held = await held_in_tree(k, await k.store.get_run(request.child_run_id))
            if held is not None:
                return held
    return None


async def handed_over(k: Kernel, run_id: str, pause_id: str) -> None:
    """Wait while the live holder of a run's pause carries it on with an answer given here (bounded).

    Returns once the run left that pause and is not running, once its holder is gone (a sweep
    closes what it held), or after `HANDOVER_SECONDS`; the caller then says where the run stands.
    """
    with anyio.move_on_after(HANDOVER_SECONDS):
        while True:
            run = await k.store.get_run(run_id)
            if run.pause_id != pause_id:
                if run.status != "running":
                    return
            elif not hold_alive(run, k.clock()):
                return
            await anyio.sleep(POLL_SECONDS)
