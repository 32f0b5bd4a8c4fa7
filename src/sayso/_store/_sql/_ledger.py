"""SQL verbs of the at-most-once ledger: an approved call is marked before it runs and finished with its result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._records import ExecutionRecord
from . import _rows
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
        self, request_id: str, result: bytes, now: float, *, audit: Sequence[dict[str, Any]] = ()
    ) -> None:
        async def work(tx: Tx) -> None:
            await _rows.append_audit(tx, audit)
            await tx.run(_rows.FINISH_EXECUTION, {"request_id": request_id, "result": result, "now": now})

        await self._write(work)
