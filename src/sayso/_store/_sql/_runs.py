"""SQL verbs of threads and runs: starting, leasing, pausing, finishing and cancelling a run, and its messages."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NoReturn

import sqlalchemy as sa
from pydantic_ai.messages import ModelMessage
from sqlalchemy import Connection

from ..._core.audit_events import AuditEvent
from ..._core.decisions import DecisionRecord
from ..._core.grants import Grant
from ..._core.requests import ClientTool, Request
from ...exceptions import PauseConsumed, RunConflict, RunNotFound
from .. import _tables as t
from .._records import BegunRun, ExecutionResult, RemoteTask, RunRecord, RunStatus, ThreadRecord
from . import _rows
from ._base import _SqlBase
from ._chain import lock_audit
from ._tx import Tx


class _Runs(_SqlBase):
    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        async def work(tx: Tx) -> ThreadRecord | None:
            row = await tx.one(_rows.GET_THREAD, {"thread_id": thread_id})
            return _rows.thread_record(row) if row is not None else None

        return await self._read(work)

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
        Found = tuple[ThreadRecord | None, RunRecord | None, list[bytes], list[Grant] | None]

        async def work(tx: Tx) -> Found:
            ids = {"thread_id": thread_id, "run_id": run_id}
            row = await tx.one(_rows.GET_THREAD, ids)
            thread = _rows.thread_record(row) if row is not None else None
            if check is not None:
                check(thread)
            if thread is not None:
                if thread.active_run_id is not None:
                    return thread, None, [], None
                if await tx.run(_rows.CLAIM_FREE_THREAD, ids) != 1:
                    raise _thread_changed(run_id, thread_id)
            else:
                await tx.later(_rows.INSERT_THREAD, [{**ids, "owner": owner, "agent": agent, "now": now}])
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
            await tx.later(_rows.INSERT_RUN, [_rows.run_params(run)])
            history = await _rows.history_bodies(tx, thread_id) if thread is not None else []
            return thread, run, history, await _rows.active_grants(tx, grants_of, now)

        async def lost(tx: Tx) -> NoReturn:
            raise _thread_changed(run_id, thread_id)  # another process created the same new thread first

        thread, run, bodies, grants = await self._write(work, race=lost, durable=False)
        return BegunRun(thread=thread, run=run, history=_rows.decode_history(bodies), grants=grants)

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

        async def work(tx: Tx) -> RunRecord:
            if supersede_pause is not None and audit:
                await lock_audit(tx)
            ids = {"thread_id": thread_id, "run_id": run_id}
            if await tx.one(_rows.THREAD_EXISTS, ids) is None:
                await tx.later(_rows.INSERT_THREAD, [{**ids, "owner": owner, "agent": agent, "now": now}])
            else:
                claimed = await tx.run(
                    _rows.CLAIM_FREE_THREAD if expect_active is None else _rows.CLAIM_THREAD_FROM,
                    {**ids, "expect": expect_active},
                )
                if claimed != 1:
                    raise _thread_changed(run_id, thread_id)
            if supersede_pause is not None:
                if not await _rows.consume(tx, supersede_pause):
                    raise PauseConsumed(run_id, "the pause was resumed by someone else meanwhile")
                assert expect_active is not None
                await tx.run(_rows.CANCEL_RUN, {"run_id": expect_active, "now": now})
                await _rows.insert_decisions(tx, skips, audit)
            await tx.run(_rows.INSERT_RUN, _rows.run_params(record))
            return record

        async def lost(tx: Tx) -> NoReturn:
            raise _thread_changed(run_id, thread_id)  # another process created the same new thread first

        return await self._write(work, race=lost, durable=durable)

    async def get_run(self, run_id: str) -> RunRecord:
        async def work(tx: Tx) -> RunRecord:
            row = await tx.one(_rows.GET_RUN, {"run_id": run_id})
            if row is None:
                raise RunNotFound(run_id)
            return _rows.run_record(row)

        return await self._read(work)

    async def renew_lease(self, run_id: str, owner: str, until: float) -> bool:
        async def work(tx: Tx) -> bool:
            return await tx.run(_rows.RENEW_LEASE, {"run_id": run_id, "owner": owner, "until": until}) == 1

        return await self._write(work)

    async def take_over(self, run_id: str, *, owner: str, until: float, now: float, dead_owners: Sequence[str]) -> bool:
        async def work(tx: Tx) -> bool:
            owners: list[str | None] = [*dead_owners] or [None]
            for dead in owners:
                params = {"run_id": run_id, "owner": owner, "until": until, "now": now, "dead": dead}
                if await tx.run(_rows.TAKE_OVER, params) == 1:
                    return True
            return False

        return await self._write(work)

    async def lapsed_runs(self, *, now: float, host: str | None = None, limit: int = 100) -> list[RunRecord]:
        r = t.runs
        stale = r.c.lease_expires_at < now
        if host is not None:
            stale = sa.or_(stale, r.c.lease_owner.startswith(f"{host}:", autoescape=True))
        query = sa.select(r).where(r.c.status == "running", stale).order_by(r.c.lease_expires_at).limit(limit)

        def work(conn: Connection) -> list[RunRecord]:
            return [_rows.run_record(dict(row._mapping)) for row in conn.execute(query).all()]

        return await self._sa_read(work)

    async def stalled_runs(self, *, before: float, limit: int = 100) -> list[str]:
        p, r, d = t.pauses, t.requests, t.decisions
        waits_on_someone = sa.select(r.c.request_id).where(
            r.c.pause_id == p.c.pause_id, r.c.status == "open", r.c.kind != "delegate"
        )
        decided_lately = (
            sa.select(d.c.request_id)
            .join(r, r.c.request_id == d.c.request_id)
            .where(r.c.pause_id == p.c.pause_id, d.c.decided_at >= before)
        )
        query = (
            sa.select(p.c.run_id)
            .join(t.runs, t.runs.c.pause_id == p.c.pause_id)
            .where(
                p.c.status == "open",
                t.runs.c.status == "paused",
                p.c.created_at < before,
                ~waits_on_someone.exists(),
                ~decided_lately.exists(),
            )
            .order_by(p.c.created_at)
            .limit(limit)
        )

        def work(conn: Connection) -> list[str]:
            return [row.run_id for row in conn.execute(query).all()]

        return await self._sa_read(work)

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
        async def work(tx: Tx) -> None:
            await _rows.update_own_run(tx, _rows.PAUSE_RUN, run.run_id, owner, pause_id=pause_id, now=now)
            await _rows.finish_executions(tx, executions, now)
            await _rows.append_messages(tx, run, new_messages)
            await tx.later(_rows.INSERT_PAUSE, [{"pause_id": pause_id, "run_id": run.run_id, "now": now}])
            await _rows.insert_requests(tx, pause_id, requests)
            await _rows.outbox(tx, "request.opened", [r.request_id for r in requests], now=now)
            if workflow_state is not None:
                await _rows.put_workflow_state(tx, run.run_id, workflow_state, now)

        await self._write(work)

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
        async def work(tx: Tx) -> None:
            await _rows.update_own_run(
                tx, _rows.FINISH_RUN, run.run_id, owner, status=status, output=output, error=error, now=now
            )
            await _rows.finish_executions(tx, executions, now)
            await _rows.append_messages(tx, run, new_messages)
            if workflow_state is not None:
                await _rows.put_workflow_state(tx, run.run_id, workflow_state, now)
            await _rows.free_thread(tx, run)

        await self._write(work)

    async def cancel_run(
        self, run: RunRecord, *, now: float, skips: Sequence[DecisionRecord], audit: Sequence[AuditEvent] = ()
    ) -> None:
        async def work(tx: Tx) -> None:
            if audit:
                await lock_audit(tx)
            if run.pause_id is not None:
                await _rows.consume(tx, run.pause_id)
            existing = await _rows.decisions_of(tx, [d.request_id for d in skips])
            await _rows.insert_decisions(tx, [d for d in skips if d.request_id not in existing], audit)
            await tx.run(_rows.CANCEL_PAUSED_RUN, {"run_id": run.run_id, "now": now})
            await _rows.free_thread(tx, run)

        await self._write(work, race=work)  # a person decided one of the skipped requests meanwhile: theirs is kept

    async def expired_runs(self, now: float) -> list[str]:
        async def work(tx: Tx) -> list[str]:
            return [row["run_id"] for row in await tx.all(_rows.EXPIRED_RUNS, {"now": now})]

        return await self._read(work)

    # the message log

    async def load_messages(self, thread_id: str) -> list[ModelMessage]:
        async def work(tx: Tx) -> list[bytes]:
            return await _rows.history_bodies(tx, thread_id)

        return _rows.decode_history(await self._read(work))

    async def run_messages(self, run_id: str) -> list[ModelMessage]:
        async def work(tx: Tx) -> list[bytes]:
            return [bytes(row["body"]) for row in await tx.all(_rows.RUN_MESSAGES, {"run_id": run_id})]

        return _rows.decode_history(await self._read(work))

    # remote delegates

    async def set_remote_task(self, run_id: str, *, url: str, task_id: str, context_id: str) -> None:
        async def work(tx: Tx) -> None:
            await tx.run(_rows.DELETE_REMOTE_TASK, {"run_id": run_id})
            params = {"run_id": run_id, "url": url, "task_id": task_id, "context_id": context_id}
            await tx.run(_rows.INSERT_REMOTE_TASK, params)

        await self._write(work, race=work)

    async def remote_task(self, run_id: str) -> RemoteTask | None:
        async def work(tx: Tx) -> RemoteTask | None:
            row = await tx.one(_rows.GET_REMOTE_TASK, {"run_id": run_id})
            return RemoteTask(url=row["url"], task_id=row["task_id"], context_id=row["context_id"]) if row else None

        return await self._read(work)


def _thread_changed(run_id: str, thread_id: str) -> RunConflict:
    return RunConflict(run_id, f"thread {thread_id!r} changed underneath this run; try again")
