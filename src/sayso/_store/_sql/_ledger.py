"""SQL verbs of the at-most-once ledger: an approved call is marked before it runs and finished with its result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection

from .. import _tables as t
from .._records import ExecutionRecord
from . import _rows
from ._base import _SqlBase


class _Ledger(_SqlBase):
    async def begin_execution(self, request_id: str, run_id: str, now: float) -> ExecutionRecord | None:
        def earlier(conn: Connection) -> ExecutionRecord | None:
            row = conn.execute(sa.select(t.executions).where(t.executions.c.request_id == request_id)).first()
            return ExecutionRecord(request_id=request_id, status=row.status, result=row.result) if row else None

        def work(conn: Connection) -> ExecutionRecord | None:
            found = earlier(conn)
            if found is None:
                conn.execute(
                    t.executions.insert().values(
                        request_id=request_id, run_id=run_id, status="executing", started_at=now
                    )
                )
            return found

        return await self._write(work, race=earlier)

    async def finish_execution(
        self, request_id: str, result: bytes, now: float, *, audit: Sequence[dict[str, Any]] = ()
    ) -> None:
        def work(conn: Connection) -> None:
            _rows.append_audit(conn, audit)
            conn.execute(
                t.executions.update()
                .where(t.executions.c.request_id == request_id)
                .values(status="done", result=result, finished_at=now)
            )

        await self._write(work)
