"""In-memory `top_runs`: A2A's tasks (top-level runs) by owner, agent, thread, status and time, newest first."""

from __future__ import annotations

from .._port_top_runs import RunPage, RunQuery
from ._tx import _MemoryBase


class _TopRuns(_MemoryBase):
    async def top_runs(self, query: RunQuery, *, limit: int, before: tuple[float, str] | None = None) -> RunPage:
        async with self._lock:
            delegated = {r.thread_id for r in self._runs.values() if r.parent_run_id is not None}
            found = [
                self._run(run.run_id)
                for run in self._runs.values()
                if run.parent_run_id is None
                and run.agent == query.agent
                and (thread := self._threads.get(run.thread_id)) is not None
                and thread.agent == query.agent
                and query.owner in (None, thread.owner)
                and (
                    run.thread_id == query.thread_id if query.thread_id is not None else run.thread_id not in delegated
                )
                and query.status in (None, run.status)
                and (query.updated_from is None or run.updated_at >= query.updated_from)
            ]
        found.sort(key=lambda r: (r.updated_at, r.run_id), reverse=True)
        after = [r for r in found if before is None or (r.updated_at, r.run_id) < before]
        return RunPage(runs=after[:limit], more=len(after) > limit, total=len(found))
