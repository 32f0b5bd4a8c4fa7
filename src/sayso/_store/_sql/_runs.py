"""SQL reads of runs: the sweeps' queries (lapsed, stalled, expired runs, stuck ledger entries) and a run's messages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._messages import decode_history
from .._records import RunRecord, StuckExecution
from . import _rows
from ._base import _SqlBase
from ._tx import Tx

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage
    from sqlalchemy import Connection, Select


class _Runs(_SqlBase):
    async def lapsed_runs(self, *, now: float, host: str | None = None, limit: int = 100) -> list[RunRecord]:
        query = lapsed_runs_query(now, host, limit)

        def work(conn: Connection) -> list[RunRecord]:
            return [_rows.run_record(dict(row._mapping)) for row in conn.execute(query).all()]

        return await self._sa_read(work)

    async def stalled_runs(self, *, before: float, limit: int = 100) -> list[str]:
        def work(conn: Connection) -> list[str]:
            return [row.run_id for row in conn.execute(stalled_runs_query(conn.dialect.name, before, limit)).all()]

        return await self._sa_read(work)

    async def expired_runs(self, now: float) -> list[str]:
        async def work(tx: Tx) -> list[str]:
            return [row["run_id"] for row in await tx.all(_rows.EXPIRED_RUNS, {"now": now})]

        return await self._raw_read(work)

    # the message log

    async def run_messages(self, run_id: str) -> list[ModelMessage]:
        async def work(tx: Tx) -> list[bytes]:
            return [bytes(row["body"]) for row in await tx.all(_rows.RUN_MESSAGES, {"run_id": run_id})]

        return decode_history(await self._raw_read(work))

    # the at-most-once ledger

    async def stuck_executions(self, *, run_id: str | None = None, limit: int = 100) -> list[StuckExecution]:
        import sqlalchemy as sa

        from .. import _tables as t

        e = t.executions
        query = sa.select(e.c.request_id, e.c.run_id, e.c.started_at).where(e.c.status == "executing")
        if run_id is not None:
            query = query.where(e.c.run_id == run_id)
        else:
            ended = sa.select(t.runs.c.run_id).where(t.runs.c.run_id == e.c.run_id, t.runs.c.status != "running")
            query = query.where(ended.exists())
        query = query.order_by(e.c.started_at).limit(limit)

        def work(conn: Connection) -> list[StuckExecution]:
            return [
                StuckExecution(request_id=row.request_id, run_id=row.run_id, started_at=row.started_at)
                for row in conn.execute(query).all()
            ]

        return await self._sa_read(work)


def lapsed_runs_query(now: float, host: str | None, limit: int) -> Select[Any]:
    """Held runs whose lease lapsed, or whose holder was a process of `host` (restarted): the sweep's first question.

    `lease_holder IS NOT NULL` is the condition of the partial index `ix_runs_held`, as it says it: both databases
    read the held runs alone (a few), in lease order, never every run the store ever had.
    """
    import sqlalchemy as sa

    from .. import _tables as t

    r = t.runs
    stale = r.c.lease_expires_at < now
    if host is not None:
        stale = sa.or_(stale, r.c.lease_holder.startswith(f"{host}:", autoescape=True))
    live = r.c.status.in_(("running", "paused"))  # a paused run has a lease only while held
    return sa.select(r).where(r.c.lease_holder.is_not(None), live, stale).order_by(r.c.lease_expires_at).limit(limit)


def stalled_runs_query(dialect: str, before: float, limit: int) -> Select[tuple[str]]:
    """Paused runs whose pause waits on nobody and saw no decision since `before`: the recovery sweep's question.

    SQLite, without statistics, takes `status = 'open'` for a selective key of `ix_requests_open` and would answer
    each paused run's "does it still wait on someone" by reading every open request (the sweep grew with the square
    of the open requests: seconds, every few seconds, on an idle server); `likelihood` tells it the term is not,
    so it looks the pause's requests up by `pause_id`. PostgreSQL has statistics.
    """
    import sqlalchemy as sa

    from .. import _tables as t

    p, r, d = t.pauses, t.requests, t.decisions
    is_open = r.c.status == "open"
    if dialect == "sqlite":
        is_open = sa.func.likelihood(is_open, sa.literal_column("0.9"))  # a constant: SQLite takes no parameter here
    waits_on_someone = sa.select(r.c.request_id).where(r.c.pause_id == p.c.pause_id, is_open, r.c.kind != "delegate")
    decided_lately = (
        sa.select(d.c.request_id)
        .join(r, r.c.request_id == d.c.request_id)
        .where(r.c.pause_id == p.c.pause_id, d.c.decided_at >= before)
    )
    # The open pauses alone, through `ix_pauses_open` (its condition as a constant, which SQLite needs to use it), each
    # one's run looked up by key: a join would let SQLite read every run to find the few paused ones.
    runs_paused_there = sa.select(t.runs.c.run_id).where(
        t.runs.c.run_id == p.c.run_id, t.runs.c.pause_id == p.c.pause_id, t.runs.c.status == "paused"
    )
    return (
        sa.select(p.c.run_id)
        .where(
            p.c.status == sa.literal_column("'open'"),
            runs_paused_there.exists(),
            p.c.created_at < before,
            ~waits_on_someone.exists(),
            ~decided_lately.exists(),
        )
        .order_by(p.c.created_at)
        .limit(limit)
    )
