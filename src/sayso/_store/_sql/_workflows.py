"""SQL verbs of workflow runs: their saved state, and a failed run taken up again to retry its node."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import sqlalchemy as sa
from pydantic_ai.messages import ModelMessage
from sqlalchemy import Connection

from ...exceptions import RunConflict, RunNotFound, ThreadBusy
from .. import _tables as t
from .._records import RunRecord
from . import _rows
from ._base import _SqlBase


class _Workflows(_SqlBase):
    async def workflow_state(self, run_id: str) -> bytes | None:
        def work(conn: Connection) -> bytes | None:
            return _rows.workflow_state(conn, run_id)

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
        def work(conn: Connection) -> None:
            _rows.own(conn, run.run_id, owner)
            _rows.append_messages(conn, run, new_messages)
            _rows.put_workflow_state(conn, run.run_id, state, now)

        await self._write(work, durable=False)

    async def reopen_run(self, run: RunRecord, *, owner: str, until: float, now: float) -> RunRecord:
        values: dict[str, Any] = {"status": "running", "error": None, "lease_owner": owner, "lease_expires_at": until}

        def work(conn: Connection) -> RunRecord:
            row = conn.execute(sa.select(t.runs).where(t.runs.c.run_id == run.run_id)).first()
            if row is None:
                raise RunNotFound(run.run_id)
            current = _rows.run_record(dict(row._mapping))
            if current.status != "failed":
                raise RunConflict(run.run_id, f"the run is {current.status}; only a failed run is taken up again")
            claimed = conn.execute(
                t.threads.update()
                .where(
                    t.threads.c.thread_id == current.thread_id,
                    sa.or_(t.threads.c.active_run_id.is_(None), t.threads.c.active_run_id == run.run_id),
                )
                .values(active_run_id=run.run_id)
            )
            if claimed.rowcount != 1:
                raise ThreadBusy(run.run_id, f"thread {current.thread_id!r} has moved on to another run")
            if _rows.update_run(conn, run.run_id, now, t.runs.c.status == "failed", **values) != 1:
                raise RunConflict(run.run_id, "another process took the run up first")
            return replace(current, **values, updated_at=now, revision=current.revision + 1)

        return await self._write(work)
