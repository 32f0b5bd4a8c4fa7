"""SQL verbs of the at-most-once ledger: an approved call is marked before it runs and finished with its result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import sqlalchemy as sa
from sqlalchemy import Connection

from ..._core.audit_events import AuditEvent
from .. import _tables as t
from .._records import ExecutionRecord, StuckExecution
from . import _chain, _rows
from ._base import _SqlBase
from ._tx import Tx


class _Ledger(_SqlBase):
    async def begin_execution(self, request_id: str, run_id: str, now: float) -> ExecutionRecord | None:
        async def earlier(tx: Tx) -> ExecutionRecord | None:
            row = await tx.one(_rows.GET_EXECUTION, {"request_id": request_id})
            if row is None:
                return None
            result = row["result"]
            return ExecutionRecord(
                request_id=request_id, status=row["status"], result=None if result is None else bytes(result)
            )

        async def work(tx: Tx) -> ExecutionRecord | None:
            found = await earlier(tx)
            if found is None:
                await tx.run(_rows.INSERT_EXECUTION, {"request_id": request_id, "run_id": run_id, "now": now})
            return found

        return await self._write(work, race=earlier)

    async def finish_execution(
        self,
        request_id: str,
        result: bytes,
        now: float,
        *,
        audit: Sequence[AuditEvent] = (),
        status: Literal["done", "unknown"] = "done",
    ) -> None:
        async def work(tx: Tx) -> None:
            params = {"request_id": request_id, "status": status, "result": result, "now": now}
            if await tx.run(_rows.RESOLVE_EXECUTION, params) == 1:  # resolved once, however many sweeps race to it
                await _chain.append_audit(tx, audit)

        await self._write(work)

    async def stuck_executions(self, *, run_id: str | None = None, limit: int = 100) -> list[StuckExecution]:
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
