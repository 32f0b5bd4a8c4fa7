"""The verb expire: every paused run whose open requests have all expired closes, and its agent answers.

Run by the server's sweep and `Sayso.expire`: the open requests of such a pause are recorded as
expired (audited), and the run resumes when nothing below it is open any more.
"""

from __future__ import annotations

from collections.abc import Callable

from ..._core.audit_events import audit_body
from ..._core.resume import plan_expiry
from ...exceptions import PauseConsumed
from .. import _tree
from .._cycle import Cycle
from .._results import RunResult
from .._runner import DEFAULTS


async def expire(c: Cycle, *, on_run: Callable[[str, str], None] | None = None) -> list[RunResult]:
    """Close every paused run whose open requests have all expired; each agent answers with what it knows.

    `on_run` hears `(run_id, thread_id)` of each top-level run as its agent is about to answer.
    """
    k = c.k
    now = k.clock()
    results: list[RunResult] = []
    for run_id in await k.store.expired_runs(now):
        run = await k.store.get_run(run_id)
        if run.status != "paused" or run.pause_id is None:
            continue
        state = await k.store.pause_state(run.pause_id)
        routed = [r.request_id for r in state.requests if r.routing is not None and r.request_id not in state.decisions]
        votes = await k.store.votes(routed) if routed else {}
        expired = plan_expiry(state.requests, state.decisions, now=now, votes=votes)
        if not expired:
            continue
        by_id = {r.request_id: r for r in state.requests}
        waiting = [by_id[d.request_id] for d in expired]
        await k.store.add_decisions(expired, audit=[audit_body(by_id[d.request_id], d) for d in expired])
        k.events.decided(waiting, expired)
        top = await _tree.root(k, run)
        if await _tree.open_leaves(k, top):
            continue
        if on_run is not None:
            on_run(top.run_id, top.thread_id)
        try:
            results.append(await c.advance(top, force=False, options=DEFAULTS))
        except PauseConsumed:
            continue
    return results
