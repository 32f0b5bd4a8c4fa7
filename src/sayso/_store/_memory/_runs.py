"""In-memory verbs of threads and runs (start, lease, pause, finish, cancel, expiry), the message log, remote tasks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from ..._core.audit_events import AuditEvent
from ..._core.decisions import DecisionRecord
from ..._core.requests import REQUEST_ADAPTER, ClientTool, Request
from ...exceptions import PauseConsumed, RunConflict, RunNotFound, StoreError
from .._records import (
    BegunRun,
    ExecutionResult,
    RemoteTask,
    RunRecord,
    RunStatus,
    ThreadRecord,
    ThreadSummary,
    TranscriptEntry,
)
from .._views import thread_transcript, title
from ._base import _load, _MemoryBase, _Pause, _Request


class _Runs(_MemoryBase):
    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        async with self._lock:
            return self._threads.get(thread_id)

    async def begin_run(
        self,
        *,
        thread_id: str,
        owner: str,
        agent: str,
        run_id: str,
        prompt: str,
        client_tools: Sequence[ClientTool],
        lease_owner: str,
        lease_expires_at: float,
        now: float,
        check: Callable[[ThreadRecord | None], None] | None = None,
        grants_of: str | None = None,
    ) -> BegunRun:
        async with self._lock:
            thread = self._threads.get(thread_id)
            if check is not None:
                check(thread)
            if thread is not None:
                if thread.active_run_id is not None:
                    return BegunRun(thread=thread, run=None, history=[], grants=None)
            if run_id in self._runs:
                raise RunConflict(run_id, f"thread {thread_id!r} changed underneath this run; try again")
            run = RunRecord(
                run_id=run_id,
                thread_id=thread_id,
                agent=thread.agent if thread is not None else agent,
                status="running",
                prompt=prompt,
                client_tools=tuple(client_tools),
                principal=owner,
                resume_pause_id=None,
                pause_id=None,
                output=None,
                error=None,
                lease_owner=lease_owner,
                lease_expires_at=lease_expires_at,
                created_at=now,
                updated_at=now,
                revision=0,
            )
            if thread is None:
                self._threads[thread_id] = ThreadRecord(
                    thread_id=thread_id, owner=owner, agent=agent, active_run_id=run_id, created_at=now
                )
            else:
                self._threads[thread_id] = replace(thread, active_run_id=run_id)
            self._put_run(run)
            return BegunRun(
                thread=thread,
                run=self._run(run_id),
                history=_load(self._messages.get(thread_id, ())),
                grants=self._active_grants(grants_of, now),
            )

    async def start_run(
        self,
        *,
        thread_id: str,
        owner: str,
        agent: str,
        run_id: str,
        prompt: str,
        client_tools: Sequence[ClientTool],
        lease_owner: str,
        lease_expires_at: float,
        now: float,
        expect_active: str | None,
        skips: Sequence[DecisionRecord] = (),
        audit: Sequence[AuditEvent] = (),
        supersede_pause: str | None = None,
        parent_run_id: str | None = None,
        parent_call_id: str | None = None,
        agent_path: str | None = None,
        durable: bool = True,
    ) -> RunRecord:
        record = RunRecord(
            run_id=run_id,
            thread_id=thread_id,
            agent=agent,
            status="running",
            prompt=prompt,
            client_tools=tuple(client_tools),
            principal=owner,
            resume_pause_id=supersede_pause,
            pause_id=None,
            output=None,
            error=None,
            lease_owner=lease_owner,
            lease_expires_at=lease_expires_at,
            created_at=now,
            updated_at=now,
            revision=0,
            parent_run_id=parent_run_id,
            parent_call_id=parent_call_id,
            agent_path=agent_path,
        )
        async with self._lock:
            thread = self._threads.get(thread_id)
            changed = thread is not None and thread.active_run_id != expect_active
            decided = supersede_pause is not None and any(d.request_id in self._decisions for d in skips)
            if changed or decided or run_id in self._runs:
                raise RunConflict(run_id, f"thread {thread_id!r} changed underneath this run; try again")
            if supersede_pause is not None and not self._is_open(supersede_pause):
                raise PauseConsumed(run_id, "the pause was resumed by someone else meanwhile")
            if thread is None:
                self._threads[thread_id] = ThreadRecord(
                    thread_id=thread_id, owner=owner, agent=agent, active_run_id=run_id, created_at=now
                )
            else:
                self._threads[thread_id] = replace(thread, active_run_id=run_id)
            if supersede_pause is not None:
                self._pauses[supersede_pause].status = "consumed"
                assert expect_active is not None
                self._update_run(expect_active, now, status="cancelled", pause_id=None)
                self._insert_decisions(skips, audit)
            self._put_run(record)
            return self._run(run_id)

    async def get_run(self, run_id: str) -> RunRecord:
        async with self._lock:
            if run_id not in self._runs:
                raise RunNotFound(run_id)
            return self._run(run_id)

    async def renew_lease(self, run_id: str, owner: str, until: float) -> bool:
        async with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.lease_owner != owner or run.status != "running":
                return False
            self._runs[run_id] = replace(run, lease_expires_at=until)
            return True

    async def take_over(self, run_id: str, *, owner: str, until: float, now: float, dead_owners: Sequence[str]) -> bool:
        async with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status != "running":
                return False
            lapsed = run.lease_expires_at is not None and run.lease_expires_at < now
            dead = run.lease_owner is not None and run.lease_owner in dead_owners
            if not (lapsed or dead):
                return False
            self._update_run(run_id, now, lease_owner=owner, lease_expires_at=until)
            return True

    async def lapsed_runs(self, *, now: float, host: str | None = None, limit: int = 100) -> list[RunRecord]:
        async with self._lock:
            found = [
                self._run(run.run_id)
                for run in self._runs.values()
                if run.status == "running"
                and (
                    (run.lease_expires_at is not None and run.lease_expires_at < now)
                    or (host is not None and (run.lease_owner or "").startswith(f"{host}:"))
                )
            ]
        return sorted(found, key=lambda r: r.lease_expires_at or 0.0)[:limit]

    async def stalled_runs(self, *, before: float, limit: int = 100) -> list[str]:
        async with self._lock:
            found: list[tuple[float, str]] = []
            for pause_id, pause in self._pauses.items():
                run = self._runs.get(pause.run_id)
                if pause.status != "open" or run is None or run.status != "paused" or run.pause_id != pause_id:
                    continue
                rows = [row for row in self._requests.values() if row.pause_id == pause_id]
                if any(row.status == "open" and row.kind != "delegate" for row in rows):
                    continue
                decided = [self._decisions[r.request_id].decided_at for r in rows if r.request_id in self._decisions]
                if pause.created_at < before and all(at < before for at in decided):
                    found.append((pause.created_at, pause.run_id))
        return [run_id for _, run_id in sorted(found)[:limit]]

    async def save_pause(
        self,
        run: RunRecord,
        *,
        owner: str,
        pause_id: str,
        new_messages: Sequence[ModelMessage],
        requests: Sequence[Request],
        now: float,
        executions: Sequence[ExecutionResult] = (),
        workflow_state: bytes | None = None,
    ) -> None:
        async with self._lock:
            self._own(run.run_id, owner)
            ids = [r.request_id for r in requests]
            if pause_id in self._pauses or len(set(ids)) != len(ids) or any(i in self._requests for i in ids):
                raise StoreError(f"pause {pause_id!r} or one of its requests is stored already")
            self._finish_executions(executions)
            self._append_messages(run, new_messages)
            if workflow_state is not None:
                self._workflow_states[run.run_id] = bytes(workflow_state)
            self._pauses[pause_id] = _Pause(run_id=run.run_id, status="open", created_at=now)
            for position, r in enumerate(requests):
                self._requests[r.request_id] = _Request(
                    request_id=r.request_id,
                    pause_id=pause_id,
                    position=position,
                    run_id=r.run_id,
                    thread_id=r.thread_id,
                    agent_path=r.agent_path,
                    kind=r.kind,
                    status="open",
                    created_at=r.created_at,
                    expires_at=r.expires_at,
                    body=REQUEST_ADAPTER.dump_json(r),
                )
            self._outbox_events("request.opened", ids, now=now)
            self._update_run(
                run.run_id, now, status="paused", pause_id=pause_id, lease_owner=None, lease_expires_at=None
            )

    async def finish_run(
        self,
        run: RunRecord,
        *,
        owner: str,
        new_messages: Sequence[ModelMessage],
        status: RunStatus,
        output: str | None,
        error: str | None,
        now: float,
        executions: Sequence[ExecutionResult] = (),
        workflow_state: bytes | None = None,
    ) -> None:
        async with self._lock:
            self._own(run.run_id, owner)
            self._finish_executions(executions)
            self._append_messages(run, new_messages)
            if workflow_state is not None:
                self._workflow_states[run.run_id] = bytes(workflow_state)
            self._update_run(
                run.run_id,
                now,
                status=status,
                output=output,
                error=error,
                pause_id=None,
                lease_owner=None,
                lease_expires_at=None,
            )
            self._free_thread(run)

    async def cancel_run(
        self, run: RunRecord, *, now: float, skips: Sequence[DecisionRecord], audit: Sequence[AuditEvent] = ()
    ) -> None:
        async with self._lock:
            if run.pause_id is not None and self._is_open(run.pause_id):
                self._pauses[run.pause_id].status = "consumed"
            self._insert_decisions([d for d in skips if d.request_id not in self._decisions], audit)
            stored = self._runs.get(run.run_id)
            if stored is not None and stored.status == "paused":
                self._update_run(run.run_id, now, status="cancelled", pause_id=None)
            self._free_thread(run)

    async def expired_runs(self, now: float) -> list[str]:
        async with self._lock:
            waiting: dict[str, bool] = {}
            for r in self._requests.values():
                if r.status == "open" and self._pauses[r.pause_id].status == "open":
                    expired = r.expires_at is not None and r.expires_at <= now
                    waiting[r.run_id] = waiting.get(r.run_id, True) and expired
            return [run_id for run_id, all_expired in waiting.items() if all_expired]

    # the message log

    async def load_messages(self, thread_id: str) -> list[ModelMessage]:
        async with self._lock:
            return _load(self._messages.get(thread_id, ()))

    async def run_messages(self, run_id: str) -> list[ModelMessage]:
        async with self._lock:
            run = self._runs.get(run_id)
            batches = self._messages.get(run.thread_id, []) if run is not None else []
            return _load(b for b in batches if b.run_id == run_id)

    async def transcript(self, thread_id: str, *, after_seq: int = 0) -> list[TranscriptEntry]:
        async with self._lock:
            batches = [
                (b.seq, b.run_id, ModelMessagesTypeAdapter.validate_json(b.body))
                for b in self._messages.get(thread_id, ())
                if b.seq > after_seq
            ]
            runs = [r for r in self._runs.values() if r.thread_id == thread_id]
            return thread_transcript(batches, runs, after_seq=after_seq)

    async def last_seq(self, thread_id: str) -> int:
        async with self._lock:
            batches = self._messages.get(thread_id)
            return batches[-1].seq if batches else 0

    async def threads(self, *, owner: str | None, limit: int) -> list[ThreadSummary]:
        async with self._lock:
            first: dict[str, RunRecord] = {}
            delegated: set[str] = set()
            for run in self._runs.values():
                if run.parent_run_id is not None:
                    delegated.add(run.thread_id)
                if run.thread_id not in first or run.created_at < first[run.thread_id].created_at:
                    first[run.thread_id] = run
            shown = [th for th in self._threads.values() if th.thread_id not in delegated and owner in (None, th.owner)]
            shown.sort(key=lambda th: th.created_at, reverse=True)
            return [
                ThreadSummary(
                    thread_id=th.thread_id,
                    agent=th.agent,
                    owner=th.owner,
                    active_run_id=th.active_run_id,
                    created_at=th.created_at,
                    title=title(first[th.thread_id].prompt) if th.thread_id in first else None,
                )
                for th in shown[:limit]
            ]

    # remote delegates

    async def set_remote_task(self, run_id: str, *, url: str, task_id: str, context_id: str) -> None:
        async with self._lock:
            self._remote[run_id] = RemoteTask(url=url, task_id=task_id, context_id=context_id)

    async def remote_task(self, run_id: str) -> RemoteTask | None:
        async with self._lock:
            return self._remote.get(run_id)
