"""SQL verbs of threads and runs: starting, leasing, pausing, finishing and cancelling a run, and its messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

import sqlalchemy as sa
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from sqlalchemy import Connection

from ..._core.decisions import DecisionRecord
from ..._core.requests import REQUEST_ADAPTER, ClientTool, Request
from ...exceptions import PauseConsumed, RunConflict, RunNotFound
from .. import _tables as t
from .._records import ExecutionResult, RemoteTask, RunRecord, RunStatus, ThreadRecord
from . import _rows
from ._base import _SqlBase


class _Runs(_SqlBase):
    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        def work(conn: Connection) -> ThreadRecord | None:
            row = conn.execute(sa.select(t.threads).where(t.threads.c.thread_id == thread_id)).first()
            return ThreadRecord(**row._mapping) if row else None

        return await self._read(work)

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
        audit: Sequence[dict[str, Any]] = (),
        supersede_pause: str | None = None,
        parent_run_id: str | None = None,
        parent_call_id: str | None = None,
        agent_path: str | None = None,
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

        def work(conn: Connection) -> RunRecord:
            exists = conn.execute(sa.select(t.threads.c.thread_id).where(t.threads.c.thread_id == thread_id)).first()
            if exists is None:
                conn.execute(
                    t.threads.insert().values(
                        thread_id=thread_id, owner=owner, agent=agent, active_run_id=run_id, created_at=now
                    )
                )
            else:
                claimed = conn.execute(
                    t.threads.update()
                    .where(t.threads.c.thread_id == thread_id, _rows.is_(t.threads.c.active_run_id, expect_active))
                    .values(active_run_id=run_id)
                )
                if claimed.rowcount != 1:
                    raise _thread_changed(run_id, thread_id)
            if supersede_pause is not None:
                if not _rows.consume(conn, supersede_pause):
                    raise PauseConsumed(run_id, "the pause was resumed by someone else meanwhile")
                assert expect_active is not None
                _rows.update_run(conn, expect_active, now, status="cancelled", pause_id=None)
                _rows.insert_decisions(conn, skips, audit)
            conn.execute(t.runs.insert().values(**_rows.run_row(record)))
            return record

        def lost(conn: Connection) -> NoReturn:
            raise _thread_changed(run_id, thread_id)  # another process created the same new thread first

        return await self._write(work, race=lost)

    async def get_run(self, run_id: str) -> RunRecord:
        def work(conn: Connection) -> RunRecord:
            row = conn.execute(sa.select(t.runs).where(t.runs.c.run_id == run_id)).first()
            if row is None:
                raise RunNotFound(run_id)
            return _rows.run_record(dict(row._mapping))

        return await self._read(work)

    async def renew_lease(self, run_id: str, owner: str, until: float) -> bool:
        def work(conn: Connection) -> bool:
            res = conn.execute(
                t.runs.update()
                .where(t.runs.c.run_id == run_id, t.runs.c.lease_owner == owner, t.runs.c.status == "running")
                .values(lease_expires_at=until)
            )
            return res.rowcount == 1

        return await self._write(work)

    async def take_over(self, run_id: str, *, owner: str, until: float, now: float, dead_owners: Sequence[str]) -> bool:
        def work(conn: Connection) -> bool:
            stale = sa.or_(t.runs.c.lease_expires_at < now, t.runs.c.lease_owner.in_(list(dead_owners)))
            taken = _rows.update_run(
                conn, run_id, now, t.runs.c.status == "running", stale, lease_owner=owner, lease_expires_at=until
            )
            return taken == 1

        return await self._write(work)

    async def lapsed_runs(self, *, now: float, host: str | None = None, limit: int = 100) -> list[RunRecord]:
        r = t.runs
        stale = r.c.lease_expires_at < now
        if host is not None:
            stale = sa.or_(stale, r.c.lease_owner.startswith(f"{host}:", autoescape=True))
        query = sa.select(r).where(r.c.status == "running", stale).order_by(r.c.lease_expires_at).limit(limit)

        def work(conn: Connection) -> list[RunRecord]:
            return [_rows.run_record(dict(row._mapping)) for row in conn.execute(query).all()]

        return await self._read(work)

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

        return await self._read(work)

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
    ) -> None:
        def work(conn: Connection) -> None:
            _rows.own(conn, run.run_id, owner)
            _rows.finish_executions(conn, executions, now)
            _rows.append_messages(conn, run, new_messages)
            conn.execute(t.pauses.insert().values(pause_id=pause_id, run_id=run.run_id, status="open", created_at=now))
            if requests:
                conn.execute(
                    t.requests.insert(),
                    [
                        {
                            "request_id": r.request_id,
                            "pause_id": pause_id,
                            "position": position,
                            "run_id": r.run_id,
                            "thread_id": r.thread_id,
                            "agent_path": r.agent_path,
                            "kind": r.kind,
                            "status": "open",
                            "created_at": r.created_at,
                            "expires_at": r.expires_at,
                            "body": REQUEST_ADAPTER.dump_json(r),
                        }
                        for position, r in enumerate(requests)
                    ],
                )
                _rows.outbox(conn, "request.opened", [r.request_id for r in requests], now=now)
            _rows.update_run(conn, run.run_id, now, status="paused", pause_id=pause_id, **_rows.NO_LEASE)

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
    ) -> None:
        def work(conn: Connection) -> None:
            _rows.own(conn, run.run_id, owner)
            _rows.finish_executions(conn, executions, now)
            _rows.append_messages(conn, run, new_messages)
            _rows.update_run(
                conn, run.run_id, now, status=status, output=output, error=error, pause_id=None, **_rows.NO_LEASE
            )
            _rows.free_thread(conn, run)

        await self._write(work)

    async def cancel_run(
        self, run: RunRecord, *, now: float, skips: Sequence[DecisionRecord], audit: Sequence[dict[str, Any]] = ()
    ) -> None:
        def work(conn: Connection) -> None:
            if run.pause_id is not None:
                _rows.consume(conn, run.pause_id)
            existing = _rows.decisions_of(conn, [d.request_id for d in skips])
            _rows.insert_decisions(conn, [d for d in skips if d.request_id not in existing], audit)
            _rows.update_run(conn, run.run_id, now, t.runs.c.status == "paused", status="cancelled", pause_id=None)
            _rows.free_thread(conn, run)

        await self._write(work, race=work)  # a person decided one of the skipped requests meanwhile: theirs is kept

    async def expired_runs(self, now: float) -> list[str]:
        not_expired = sa.case(
            (sa.and_(t.requests.c.expires_at.is_not(None), t.requests.c.expires_at <= now), 0), else_=1
        )
        query = (
            sa.select(t.pauses.c.run_id)
            .join(t.requests, t.requests.c.pause_id == t.pauses.c.pause_id)
            .where(t.pauses.c.status == "open", t.requests.c.status == "open")
            .group_by(t.pauses.c.run_id)
            .having(sa.func.sum(not_expired) == 0)
        )

        def work(conn: Connection) -> list[str]:
            return [row.run_id for row in conn.execute(query).all()]

        return await self._read(work)

    # the message log

    async def load_messages(self, thread_id: str) -> list[ModelMessage]:
        def work(conn: Connection) -> list[ModelMessage]:
            return _rows.history(conn, thread_id)

        return await self._read(work)

    async def run_messages(self, run_id: str) -> list[ModelMessage]:
        m = t.messages
        # By the run's thread first, so the lookup uses the log's primary key rather than scanning it.
        of_thread = sa.select(t.runs.c.thread_id).where(t.runs.c.run_id == run_id).scalar_subquery()
        query = sa.select(m.c.body).where(m.c.thread_id == of_thread, m.c.run_id == run_id).order_by(m.c.seq)

        def work(conn: Connection) -> list[ModelMessage]:
            messages: list[ModelMessage] = []
            for row in conn.execute(query).all():
                messages.extend(ModelMessagesTypeAdapter.validate_json(row.body))
            return messages

        return await self._read(work)

    # remote delegates

    async def set_remote_task(self, run_id: str, *, url: str, task_id: str, context_id: str) -> None:
        def work(conn: Connection) -> None:
            conn.execute(sa.delete(t.remote_tasks).where(t.remote_tasks.c.run_id == run_id))
            conn.execute(t.remote_tasks.insert().values(run_id=run_id, url=url, task_id=task_id, context_id=context_id))

        await self._write(work, race=work)

    async def remote_task(self, run_id: str) -> RemoteTask | None:
        def work(conn: Connection) -> RemoteTask | None:
            row = conn.execute(sa.select(t.remote_tasks).where(t.remote_tasks.c.run_id == run_id)).first()
            return RemoteTask(url=row.url, task_id=row.task_id, context_id=row.context_id) if row else None

        return await self._read(work)


def _thread_changed(run_id: str, thread_id: str) -> RunConflict:
    return RunConflict(run_id, f"thread {thread_id!r} changed underneath this run; try again")
