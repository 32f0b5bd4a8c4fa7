"""In-memory verbs of workflow runs: their saved state, and a failed run taken up again to retry its node."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pydantic_ai.messages import ModelMessage

from ...exceptions import RunConflict, RunNotFound, ThreadBusy
from .._records import RunRecord
from ._base import _MemoryBase


class _Workflows(_MemoryBase):
    async def workflow_state(self, run_id: str) -> bytes | None:
        async with self._lock:
            return self._workflow_states.get(run_id)

    async def save_workflow_state(
        self,
        run: RunRecord,
        *,
        owner: str,
        state: bytes,
        now: float,
        new_messages: Sequence[ModelMessage] = (),
    ) -> None:
        async with self._lock:
            self._own(run.run_id, owner)
            self._append_messages(run, new_messages)
            self._workflow_states[run.run_id] = bytes(state)

    async def reopen_run(self, run: RunRecord, *, owner: str, until: float, now: float) -> RunRecord:
        async with self._lock:
            if run.run_id not in self._runs:
                raise RunNotFound(run.run_id)
            current = self._run(run.run_id)
            if current.status != "failed":
                raise RunConflict(run.run_id, f"the run is {current.status}; only a failed run is taken up again")
            thread = self._threads[current.thread_id]
            if thread.active_run_id not in (None, run.run_id):
                raise ThreadBusy(run.run_id, f"thread {current.thread_id!r} has moved on to another run")
            self._threads[current.thread_id] = replace(thread, active_run_id=run.run_id)
            self._update_run(run.run_id, now, status="running", error=None, lease_owner=owner, lease_expires_at=until)
            return self._run(run.run_id)
