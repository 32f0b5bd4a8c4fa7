"""The verb resume: carrying a paused run on once it is decided (or forced), or a run whose process died.

`resume` is the caller's verb (it refuses while requests are open, unless forced); `resume_if_ready`
is where decide, answer and recover end: the top-level run resumes when nothing below it is open
any more, and a resume another decider got to first is not an error.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..._core.access import Principal, skip_refusal
from ..._core.requests import Request
from ..._store import RunRecord
from ...exceptions import NotAllowed, NotReady, PauseConsumed, RunConflict
from .. import _holds, _tree
from .._cycle import Cycle
from .._results import RunResult
from .._runner import DEFAULTS, CallOptions


async def resume(
    c: Cycle, run: RunRecord, *, force: bool, options: CallOptions, principal: Principal | None = None
) -> RunResult:
    """Resume a paused run, or carry on a run whose process died.

    Forced, the open requests count as skipped: only for the thread's owner, or a `principal` who may
    decide each of them (`None`: the Python API, unchecked).
    """
    k = c.k
    if run.status == "paused" and run.pause_id is not None:
        waiting = await _tree.open_leaves(k, run)
        if waiting and not force:
            ids = ", ".join(r.request_id for r in waiting)
            raise NotReady(run.run_id, f"{len(waiting)} request(s) still open ({ids}); decide them or force the resume")
        if principal is not None:
            check_may_skip(principal, waiting)
        return await c.advance(run, force=force, options=options)
    if run.status == "running":
        return await c.carry_on(run, options)
    if run.status == "failed":
        return await c.runner(run).retry(run, options)  # a workflow's failed node runs again; others refuse
    raise RunConflict(run.run_id, f"the run is {run.status}; only a paused run can be resumed")


async def resume_if_ready(
    c: Cycle, top: RunRecord, options: CallOptions = DEFAULTS, *, wait_for_holder: bool = True
) -> RunResult:
    """Resume a paused top-level run when nothing below it is open any more; else say where it stands.

    A run whose answered form another live process holds is carried on by that process: this waits
    for it (bounded, `_holds.handed_over`; not when `wait_for_holder` is false, as for a sweep) and
    says where the run stands then.
    """
    k = c.k
    if top.status != "paused" or top.pause_id is None:
        # Carried on here already (a live form's holder took the answer first): where it stands once that is done.
        await c.carried_here(top.run_id)
        return await _tree.result(k, top.run_id)
    state = await k.store.pause_state(top.pause_id)
    if await _tree.leaves_in(k, state.requests, state.decisions):
        return await _tree.result(k, top.run_id)
    held = None if k.routes_held_calls else await _holds.held_in_tree(k, top)
    if held is not None:
        # Another live process holds the call a form of this tree was answered for: it carries the run on.
        assert held.pause_id is not None
        if wait_for_holder:
            await _holds.handed_over(k, held.run_id, held.pause_id)
        return await _tree.result(k, top.run_id)
    try:
        return await c.advance(top, force=False, options=options, state=state)
    except PauseConsumed:
        return await _tree.result(k, top.run_id)  # another decider's resume carries the run on


def check_may_skip(principal: Principal, waiting: Sequence[Request]) -> None:
    """Refuse to close `waiting` unanswered for a `principal` who is not their owner and may not decide one.

    Raises:
        NotAllowed: names the request, and why the principal may not decide it.
    """
    refused = skip_refusal(principal, waiting)
    if refused is not None:
        request, why = refused
        raise NotAllowed(
            request.request_id, f"{why}; only the thread's owner, or who may decide it, closes it unanswered"
        )


async def close_orphaned(c: Cycle, request_id: str) -> None:
    """The request's form can be delivered by nobody: close it (and its run's others) as cancelled, carry the run on."""
    found = await c.k.store.request_with_run(request_id)
    if found is not None and await _holds.close_orphaned(c.k, found.run):
        await resume_if_ready(c, await _tree.root(c.k, found.run))
