"""SQL verbs of workflow runs: their saved state, and a failed run taken up again to retry its node."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pydantic_ai.messages import ModelMessage

from ...exceptions import RunConflict, RunNotFound, ThreadBusy
from .._records import RunRecord
from . import _rows
from ._base import _SqlBase
from ._tx import Sql, Tx

_LEASE_OWNER = Sql("SELECT lease_owner FROM runs WHERE run_id = :run_id")
_TAKE_THREAD_BACK = Sql(
    "UPDATE threads SET active_run_id = :run_id "
    "WHERE thread_id = :thread_id AND (active_run_id IS NULL OR active_run_id = :run_id)"
)
_REOPEN_RUN = Sql(
    "UPDATE runs SET status = 'running', error = NULL, lease_owner = :owner, lease_expires_at = :until, "
    "updated_at = :now, revision = revision + 1 WHERE run_id = :run_id AND status = 'failed'"
)


class _Workflows(_SqlBase):
    async def workflow_state(self, run_id: str) -> bytes | None:
        async def work(tx: Tx) -> bytes | None:
            return await _rows.workflow_state(tx, run_id)

        return await self._read(work)

    async def save_workflow_state(
        self,
        run: RunRecord,
        *,
        owner: str,
        state: bytes,
        now: float,
        new_messages: Sequence[ModelMessage] = (),
    ) -> None:
        async def work(tx: Tx) -> None:
            row = await tx.one(_LEASE_OWNER, {"run_id": run.run_id})
            if row is None or row["lease_owner"] != owner:
                raise RunConflict(run.run_id, "this process lost its lease on the run; another process carries it on")
            await _rows.append_messages(tx, run, new_messages)
            await _rows.put_workflow_state(tx, run.run_id, state, now)

        await self._write(work, durable=False)

    async def reopen_run(self, run: RunRecord, *, owner: str, until: float, now: float) -> RunRecord:
        async def work(tx: Tx) -> RunRecord:
            row = await tx.one(_rows.GET_RUN, {"run_id": run.run_id})
            if row is None:
                raise RunNotFound(run.run_id)
            current = _rows.run_record(row)
            if current.status != "failed":
                raise RunConflict(run.run_id, f"the run is {current.status}; only a failed run is taken up again")
            if await tx.run(_TAKE_THREAD_BACK, {"run_id": run.run_id, "thread_id": current.thread_id}) != 1:
                raise ThreadBusy(run.run_id, f"thread {current.thread_id!r} has moved on to another run")
            params = {"run_id": run.run_id, "owner": owner, "until": until, "now": now}
            if await tx.run(_REOPEN_RUN, params) != 1:
                raise RunConflict(run.run_id, "another process took the run up first")
            return replace(
                current,
                status="running",
                error=None,
                lease_owner=owner,
                lease_expires_at=until,
                updated_at=now,
                revision=current.revision + 1,
            )

        return await self._write(work)
