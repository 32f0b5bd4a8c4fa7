"""The verb cancel: a paused or working run and everything below it stop; open requests close as skipped.

A working run is stopped where it is (its delegates too) only by the runtime running it; what
already ran is kept, and nothing a cancelled pause approved runs.
"""

from __future__ import annotations

from ..._core.access import Principal
from ..._core.resume import SKIPPED_FOR_CANCEL, Closer
from ..._store import RunRecord
from ...exceptions import RunConflict
from .. import _tree
from .._cycle import Cycle
from .._results import RunResult
from .resume import check_may_skip


async def cancel(c: Cycle, run: RunRecord, *, closer: Closer, principal: Principal | None = None) -> RunResult:
    """Cancel a paused or working run and everything below it: open requests close as skipped, nothing runs.

    A working run is stopped where it is (its delegates too) when this runtime is the one running
    it; what already ran is kept. A paused run's open requests close only for the thread's owner, or a
    `principal` who may decide each of them (`None`: the Python API, unchecked); their skips are the `closer`'s.
    """
    k = c.k
    top = await _tree.root(k, run)
    if top.status == "running":
        working = k.working.get(top.run_id)
        if working is None:
            raise RunConflict(top.run_id, "another process is working on the run; cancel it there, or once it pauses")
        k.cancelling.add(top.run_id)
        try:
            working.scope.cancel()
            await working.done.wait()
        finally:
            k.cancelling.discard(top.run_id)
        return await _tree.result(k, top.run_id)
    if top.status != "paused":
        raise RunConflict(top.run_id, f"the run is {top.status}; only a paused or working run can be cancelled")
    if principal is not None:
        check_may_skip(principal, await _tree.open_leaves(k, top))
    await c.remote.cancel_remote(await _tree.cancel_tree(k, top.run_id, SKIPPED_FOR_CANCEL, closer))
    return await _tree.result(k, top.run_id)
