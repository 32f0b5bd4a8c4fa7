"""SQL for `top_runs`: a page of A2A's tasks (top-level runs) and their count, keyset-paged through an index.

`ix_runs_top` holds only top-level runs, by agent and last update, so a page of one agent's tasks
(every owner's: local mode) is read backwards from the cursor's run and stops after the page; a
principal's are found through the index of their threads (`ix_threads_owner_created`) and each
thread's runs (`ix_runs_thread_created`), so another principal's runs are never read.
"""

from __future__ import annotations

import functools

from .._port_top_runs import RunPage, RunQuery
from ._conn import _SqlConn
from ._rows import RUN_COLUMNS, run_record
from ._tx import Sql, Tx


class _TopRuns(_SqlConn):
    async def top_runs(self, query: RunQuery, *, limit: int, before: tuple[float, str] | None = None) -> RunPage:
        params: dict[str, object] = {
            "agent": query.agent,
            "owner": query.owner,
            "thread_id": query.thread_id,
            "status": query.status,
            "updated_from": query.updated_from,
            "limit": limit + 1,
        }
        if before is not None:
            params["before_at"], params["before_id"] = before
        flags = {
            "owner": query.owner is not None,
            "thread": query.thread_id is not None,
            "status": query.status is not None,
            "updated": query.updated_from is not None,
        }
        page, count = top_runs_listing(**flags, after=before is not None), top_runs_count(**flags)

        async def work(tx: Tx) -> RunPage:
            rows = await tx.all(page, {name: params[name] for name in page.names})
            total = await tx.all(count, {name: params[name] for name in count.names})
            runs = [run_record(row) for row in rows[:limit]]
            return RunPage(runs=runs, more=len(rows) > limit, total=int(total[0]["n"]))

        return await self._raw_read(work)


def _from(*, owner: bool, thread: bool, pg: bool) -> str:
    """The tables, in the order they are read, through the index each is read by.

    Without a principal or a thread, the runs of the agent by last update (`ix_runs_top`); with either,
    the threads first (SQLite keeps a `CROSS JOIN`'s order), then each thread's runs. SQLite is told the
    index (`INDEXED BY`): left to choose, it read every run of the agent once per thread; PostgreSQL's
    planner weighs its statistics.
    """
    index = "ix_runs_thread_created" if owner or thread else "ix_runs_top"
    runs = "runs r" if pg else f"runs r INDEXED BY {index}"
    return (
        f"threads th CROSS JOIN {runs}" if owner or thread else f"{runs} JOIN threads th ON th.thread_id = r.thread_id"
    )


def _where(*, owner: bool, thread: bool, status: bool, updated: bool) -> list[str]:
    where = ["r.thread_id = th.thread_id", "r.parent_run_id IS NULL", "r.agent = :agent", "th.agent = :agent"]
    if owner:
        where.append("th.owner = :owner")
    if thread:
        where.append("r.thread_id = :thread_id")
    else:  # a delegate's own thread is shown through its parent, as the thread list does
        where.append(
            "NOT EXISTS (SELECT 1 FROM runs d WHERE d.thread_id = th.thread_id AND d.parent_run_id IS NOT NULL)"
        )
    if status:
        where.append("r.status = :status")
    if updated:
        where.append("r.updated_at >= :updated_from")
    return where


@functools.cache
def top_runs_listing(*, owner: bool, thread: bool, status: bool, updated: bool, after: bool) -> Sql:
    """A page of top-level runs, newest update first by (updated_at, run_id), from the cursor's run when given."""
    where = _where(owner=owner, thread=thread, status=status, updated=updated)
    if after:  # the range first, so an index is entered at the cursor rather than read from the newest run
        where.append("r.updated_at <= :before_at AND (r.updated_at < :before_at OR r.run_id < :before_id)")
    columns = ", ".join(f"r.{c}" for c in RUN_COLUMNS)
    sql = "SELECT {columns} FROM {tables} WHERE {where} ORDER BY r.updated_at DESC, r.run_id DESC LIMIT :limit"
    text, pg = (
        sql.format(columns=columns, tables=_from(owner=owner, thread=thread, pg=pg), where=" AND ".join(where))
        for pg in (False, True)
    )
    return Sql(text, pg=pg)


@functools.cache
def top_runs_count(*, owner: bool, thread: bool, status: bool, updated: bool) -> Sql:
    """How many top-level runs the listing holds across every page."""
    where = _where(owner=owner, thread=thread, status=status, updated=updated)
    text, pg = (
        f"SELECT COUNT(*) AS n FROM {_from(owner=owner, thread=thread, pg=pg)} WHERE {' AND '.join(where)}"
        for pg in (False, True)
    )
    return Sql(text, pg=pg)
