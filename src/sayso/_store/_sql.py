"""`RunStore`: threads, runs, pauses, requests, decisions and the message log in SQLite or PostgreSQL.

Every state change is one short transaction, and every step that must happen once (consuming
a pause, taking over a run, starting an approved call) is a conditional write whose row count
says who won, so the same code is safe across processes and replicas.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, TypeVar

import anyio
import sqlalchemy as sa
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from .._core.audit import GENESIS, AuditRecord, canonical_json, chain_hash
from .._core.decisions import DECISION_ADAPTER, DecisionRecord
from .._core.grants import Grant
from .._core.requests import CLIENT_TOOLS_ADAPTER, REQUEST_ADAPTER, ClientTool, Request
from ..exceptions import PauseConsumed, RunConflict, RunNotFound, StoreError
from . import _tables as t
from ._records import ExecutionRecord, RunRecord, RunStatus, ThreadRecord

_MIGRATIONS = Path(__file__).parent / "migrations"
T = TypeVar("T")


def async_url(url: str, *, base_dir: Path | None = None) -> str:
    """Turn a user-facing URL (`sqlite:///x.db`, `postgresql://…`) into the async driver's URL.

    Relative SQLite paths are taken from `base_dir` (the config file's folder), so every
    process pointed at the same config opens the same file wherever it was started.
    """
    if url.startswith("sqlite"):
        _, _, path = url.partition(":///")
        if path and path != ":memory:" and base_dir is not None and not Path(path).is_absolute():
            path = str((base_dir / path).resolve())
        return f"sqlite+aiosqlite:///{path}"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+asyncpg://" + url.split("://", 1)[1]
    return url


class RunStore:
    """The durable store behind every run, pause and decision."""

    def __init__(self, url: str, *, base_dir: Path | None = None) -> None:
        self.url = async_url(url, base_dir=base_dir)
        self._engine: AsyncEngine | None = None
        self._sync: Engine | None = None
        self._limiter = anyio.CapacityLimiter(8)

    @property
    def engine(self) -> AsyncEngine:
        """The async engine, for callers that run their own queries (the server's listings)."""
        assert self._engine is not None, "RunStore.open() was not called"
        return self._engine

    async def open(self) -> None:
        """Connect and bring the schema up to date."""
        if self._engine is not None:
            return
        engine = create_async_engine(self.url)
        if engine.dialect.name == "sqlite":
            # The store's own transactions run whole on a worker thread through the stdlib driver:
            # one hop per transaction instead of one per statement through aiosqlite.
            self._sync = create_engine(
                self.url.replace("sqlite+aiosqlite://", "sqlite://", 1), connect_args={"check_same_thread": False}
            )
            _make_sqlite_durable(engine.sync_engine)
            _make_sqlite_durable(self._sync)
        self._engine = engine
        try:
            await self._write(_upgrade_schema)
        except StoreError as exc:
            raise StoreError(f"could not open the store at {self.url!r}: {exc}") from exc

    async def aclose(self) -> None:
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None
        if self._sync is not None:
            self._sync.dispose()
            self._sync = None

    async def _write(self, work: Callable[[Connection], T]) -> T:
        """Run `work` in one write transaction: committed when it returns, rolled back when it raises."""
        return await self._run(work, read=False)

    async def _read_only(self, work: Callable[[Connection], T]) -> T:
        """Run `work` in a read-only transaction: a consistent snapshot that takes no write lock."""
        return await self._run(work, read=True)

    async def _run(self, work: Callable[[Connection], T], *, read: bool) -> T:
        try:
            if self._sync is not None:
                return await anyio.to_thread.run_sync(self._in_thread, work, read, limiter=self._limiter)
            async with self.engine.connect() as conn:
                async with conn.begin():
                    return await conn.run_sync(work)
        except IntegrityError:
            raise
        except SQLAlchemyError as exc:
            raise StoreError(f"database error: {exc}") from exc

    def _in_thread(self, work: Callable[[Connection], T], read: bool) -> T:
        assert self._sync is not None
        with self._sync.connect() as conn:
            if read:
                conn.execution_options(sayso_read=True)
            with conn.begin():
                return work(conn)

    # threads

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        def work(conn: Connection) -> Any:
            row = (conn.execute(sa.select(t.threads).where(t.threads.c.thread_id == thread_id))).first()
            return ThreadRecord(**row._mapping) if row else None

        return await self._read_only(work)

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
        """Create the thread if new and start a run on it, in one transaction.

        `expect_active` is the paused run the caller saw on the thread (or `None`); if another
        process got there first the whole step is refused, so two runs never share a thread.
        When a paused run is superseded by a new message, its open requests are skipped and
        its pause is consumed here too.
        """
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

        def work(conn: Connection) -> Any:
            exists = (conn.execute(sa.select(t.threads.c.thread_id).where(t.threads.c.thread_id == thread_id))).first()
            if exists is None:
                conn.execute(
                    t.threads.insert().values(
                        thread_id=thread_id, owner=owner, agent=agent, active_run_id=run_id, created_at=now
                    )
                )
            else:
                claimed = conn.execute(
                    t.threads.update()
                    .where(t.threads.c.thread_id == thread_id, _is(t.threads.c.active_run_id, expect_active))
                    .values(active_run_id=run_id)
                )
                if claimed.rowcount != 1:
                    raise RunConflict(run_id, f"thread {thread_id!r} changed underneath this run; try again")
            if supersede_pause is not None:
                consumed = conn.execute(
                    t.pauses.update()
                    .where(t.pauses.c.pause_id == supersede_pause, t.pauses.c.status == "open")
                    .values(status="consumed")
                )
                if consumed.rowcount != 1:
                    raise PauseConsumed(run_id, "the pause was resumed by someone else meanwhile")
                assert expect_active is not None
                _update_run(conn, expect_active, now, status="cancelled", pause_id=None)
                self._insert_decisions(conn, skips, audit)
            conn.execute(t.runs.insert().values(**_run_row(record)))
            return record

        return await self._write(work)

    # runs

    async def get_run(self, run_id: str) -> RunRecord:
        def work(conn: Connection) -> Any:
            row = (conn.execute(sa.select(t.runs).where(t.runs.c.run_id == run_id))).first()
            if row is None:
                raise RunNotFound(run_id)
            return _run_record(dict(row._mapping))

        return await self._read_only(work)

    async def renew_lease(self, run_id: str, owner: str, until: float) -> bool:
        """Extend the lease of a running run; `False` when another process has taken it over."""

        def work(conn: Connection) -> Any:
            res = conn.execute(
                t.runs.update()
                .where(t.runs.c.run_id == run_id, t.runs.c.lease_owner == owner, t.runs.c.status == "running")
                .values(lease_expires_at=until)
            )
            return res.rowcount == 1

        return await self._write(work)

    async def take_over(self, run_id: str, *, owner: str, until: float, now: float, dead_owners: Sequence[str]) -> bool:
        """Take a running run whose lease lapsed (or whose owner is known dead); one process wins."""

        def work(conn: Connection) -> Any:
            stale = sa.or_(t.runs.c.lease_expires_at < now, t.runs.c.lease_owner.in_(list(dead_owners)))
            taken = _update_run(
                conn, run_id, now, t.runs.c.status == "running", stale, lease_owner=owner, lease_expires_at=until
            )
            return taken == 1

        return await self._write(work)

    async def save_pause(
        self,
        run: RunRecord,
        *,
        owner: str,
        pause_id: str,
        new_messages: Sequence[ModelMessage],
        requests: Sequence[Request],
        now: float,
        executions: Sequence[tuple[str, bytes, dict[str, Any]]] = (),
    ) -> None:
        """Persist a pause: the run's new messages, its requests, and the run's paused status, atomically."""

        def work(conn: Connection) -> Any:
            self._own(conn, run.run_id, owner)
            self._finish_executions(conn, executions, now)
            self._append_messages(conn, run, new_messages)
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
            _update_run(conn, run.run_id, now, status="paused", pause_id=pause_id, **_NO_LEASE)

        return await self._write(work)

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
        executions: Sequence[tuple[str, bytes, dict[str, Any]]] = (),
    ) -> None:
        """Persist the end of a run (with the results of the approved calls it ran) and free its thread."""

        def work(conn: Connection) -> Any:
            self._own(conn, run.run_id, owner)
            self._finish_executions(conn, executions, now)
            self._append_messages(conn, run, new_messages)
            _update_run(conn, run.run_id, now, status=status, output=output, error=error, pause_id=None, **_NO_LEASE)
            _free_thread(conn, run)

        return await self._write(work)

    def _own(self, conn: Connection, run_id: str, owner: str) -> None:
        row = (conn.execute(sa.select(t.runs.c.lease_owner).where(t.runs.c.run_id == run_id))).first()
        if row is None or row.lease_owner != owner:
            raise RunConflict(run_id, "this process lost its lease on the run; another process carries it on")

    def _append_messages(self, conn: Connection, run: RunRecord, new: Sequence[ModelMessage]) -> None:
        if not new:
            return
        seq = (
            conn.execute(
                sa.select(sa.func.coalesce(sa.func.max(t.messages.c.seq), 0)).where(
                    t.messages.c.thread_id == run.thread_id
                )
            )
        ).scalar_one()
        conn.execute(
            t.messages.insert().values(
                thread_id=run.thread_id,
                seq=seq + 1,
                run_id=run.run_id,
                count=len(new),
                body=ModelMessagesTypeAdapter.dump_json(list(new)),
            )
        )

    async def load_messages(self, thread_id: str) -> list[ModelMessage]:
        """The thread's whole history, oldest first."""

        def work(conn: Connection) -> Any:
            return self._history(conn, thread_id)

        return await self._read_only(work)

    def _history(self, conn: Connection, thread_id: str) -> list[ModelMessage]:
        rows = (
            conn.execute(
                sa.select(t.messages.c.body).where(t.messages.c.thread_id == thread_id).order_by(t.messages.c.seq)
            )
        ).all()
        history: list[ModelMessage] = []
        for row in rows:
            history.extend(ModelMessagesTypeAdapter.validate_json(row.body))
        return history

    # pauses, requests and decisions

    async def get_request(self, request_id: str) -> tuple[Request, str, DecisionRecord | None] | None:
        """A request, the status of its pause, and its decision if any."""

        def work(conn: Connection) -> Any:
            row = (
                conn.execute(
                    sa.select(t.requests.c.body, t.pauses.c.status)
                    .join(t.pauses, t.pauses.c.pause_id == t.requests.c.pause_id)
                    .where(t.requests.c.request_id == request_id)
                )
            ).first()
            if row is None:
                return None
            decision = self._decisions(conn, [request_id])
            return REQUEST_ADAPTER.validate_json(row.body), row.status, decision.get(request_id)

        return await self._read_only(work)

    async def request_with_run(self, request_id: str) -> tuple[Request, str, DecisionRecord | None, RunRecord] | None:
        """A request, its pause's status, its decision if any, and the run that raised it, in one read."""

        def work(conn: Connection) -> Any:
            row = (
                conn.execute(
                    sa.select(t.requests.c.body, t.pauses.c.status.label("pause_status"), t.runs)
                    .join(t.pauses, t.pauses.c.pause_id == t.requests.c.pause_id)
                    .join(t.runs, t.runs.c.run_id == t.requests.c.run_id)
                    .where(t.requests.c.request_id == request_id)
                )
            ).first()
            if row is None:
                return None
            decision = self._decisions(conn, [request_id])
            fields = {c.name: getattr(row, c.name) for c in t.runs.columns}
            return (
                REQUEST_ADAPTER.validate_json(row.body),
                row.pause_status,
                decision.get(request_id),
                _run_record(fields),
            )

        return await self._read_only(work)

    async def pause_state(self, pause_id: str) -> tuple[str, str, list[Request], dict[str, DecisionRecord]]:
        """A pause's run id and status, its requests (in the order they were raised) and their decisions."""

        def work(conn: Connection) -> Any:
            pause = (
                conn.execute(sa.select(t.pauses.c.run_id, t.pauses.c.status).where(t.pauses.c.pause_id == pause_id))
            ).one()
            rows = (
                conn.execute(
                    sa.select(t.requests.c.request_id, t.requests.c.body)
                    .where(t.requests.c.pause_id == pause_id)
                    .order_by(t.requests.c.position)
                )
            ).all()
            decided = self._decisions(conn, [r.request_id for r in rows])
            requests = [REQUEST_ADAPTER.validate_json(r.body) for r in rows]
            return pause.run_id, pause.status, requests, decided

        return await self._read_only(work)

    def _decisions(self, conn: Connection, request_ids: Sequence[str]) -> dict[str, DecisionRecord]:
        if not request_ids:
            return {}
        rows = (conn.execute(sa.select(t.decisions).where(t.decisions.c.request_id.in_(list(request_ids))))).all()
        return {
            r.request_id: DecisionRecord(
                request_id=r.request_id,
                decision=DECISION_ADAPTER.validate_json(r.body),
                by=r.by,
                principal=r.principal,
                decided_at=r.decided_at,
            )
            for r in rows
        }

    async def record_decision(
        self, record: DecisionRecord, *, audit: Sequence[dict[str, Any]] = (), grant: Grant | None = None
    ) -> DecisionRecord | None:
        """Record a decision (with its audit record and any grant it creates) unless one exists.

        Returns the existing decision when there is one: the first decision wins.
        """

        def work(conn: Connection) -> DecisionRecord | None:
            existing = self._decisions(conn, [record.request_id])
            if record.request_id in existing:
                return existing[record.request_id]
            self._insert_decisions(conn, [record], audit)
            if grant is not None:
                conn.execute(t.grants.insert().values(**asdict(grant)))
            return None

        try:
            return await self._write(work)
        except IntegrityError:
            return await self._read_only(lambda conn: self._decisions(conn, [record.request_id])[record.request_id])

    def _insert_decisions(
        self, conn: Connection, records: Sequence[DecisionRecord], audit: Sequence[dict[str, Any]] = ()
    ) -> None:
        self._append_audit(conn, audit)
        if not records:
            return
        conn.execute(
            t.decisions.insert(),
            [
                {
                    "request_id": d.request_id,
                    "kind": d.decision.kind,
                    "by": d.by,
                    "principal": d.principal,
                    "decided_at": d.decided_at,
                    "body": DECISION_ADAPTER.dump_json(d.decision),
                }
                for d in records
            ],
        )
        conn.execute(
            t.requests.update()
            .where(t.requests.c.request_id.in_([d.request_id for d in records]))
            .values(status="decided")
        )

    async def consume_pause(
        self,
        run: RunRecord,
        *,
        pause_id: str,
        owner: str,
        until: float,
        now: float,
        added: Sequence[DecisionRecord],
        audit: Sequence[dict[str, Any]] = (),
        executing: Sequence[str] = (),
        load_history: bool = True,
    ) -> tuple[RunRecord, list[ModelMessage] | None]:
        """Consume a pause and make this process the run's owner; exactly one caller succeeds.

        `executing` names the approved requests about to run: their ledger marks are written in the
        same commit, so they are durable before any of those calls starts. The thread's history is
        read in the same transaction when `load_history` is set.
        """
        claim: dict[str, Any] = {
            "status": "running",
            "resume_pause_id": pause_id,
            "pause_id": None,
            "lease_owner": owner,
            "lease_expires_at": until,
        }

        def work(conn: Connection) -> Any:
            consumed = conn.execute(
                t.pauses.update()
                .where(t.pauses.c.pause_id == pause_id, t.pauses.c.status == "open")
                .values(status="consumed")
            )
            if consumed.rowcount != 1:
                raise PauseConsumed(run.run_id, "this pause was already resumed; a pause is consumed once")
            self._insert_decisions(conn, added, audit)
            if executing:
                conn.execute(
                    t.executions.insert(),
                    [
                        {"request_id": r, "run_id": run.run_id, "status": "executing", "started_at": now}
                        for r in executing
                    ],
                )
            _update_run(conn, run.run_id, now, **claim)
            history = self._history(conn, run.thread_id) if load_history else None
            claimed = replace(run, **claim, updated_at=now, revision=run.revision + 1)
            return claimed, history

        return await self._write(work)

    async def expired_runs(self, now: float) -> list[str]:
        """Paused runs whose open requests have all passed their expiry time."""
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

        def work(conn: Connection) -> Any:
            return [row.run_id for row in (conn.execute(query)).all()]

        return await self._read_only(work)

    async def add_decisions(self, records: Sequence[DecisionRecord], *, audit: Sequence[dict[str, Any]] = ()) -> None:
        """Record decisions sayso takes itself (a delegate's result, an expiry); ones already decided are kept."""

        def work(conn: Connection) -> Any:
            existing = self._decisions(conn, [r.request_id for r in records])
            self._insert_decisions(conn, [r for r in records if r.request_id not in existing], audit)

        return await self._write(work)

    async def cancel_run(
        self, run: RunRecord, *, now: float, skips: Sequence[DecisionRecord], audit: Sequence[dict[str, Any]] = ()
    ) -> None:
        """Close a paused delegate run whose parent moved on: its pause is consumed and its requests skipped."""

        def work(conn: Connection) -> Any:
            if run.pause_id is not None:
                conn.execute(
                    t.pauses.update()
                    .where(t.pauses.c.pause_id == run.pause_id, t.pauses.c.status == "open")
                    .values(status="consumed")
                )
            existing = self._decisions(conn, [d.request_id for d in skips])
            self._insert_decisions(conn, [d for d in skips if d.request_id not in existing], audit)
            _update_run(conn, run.run_id, now, t.runs.c.status == "paused", status="cancelled", pause_id=None)
            _free_thread(conn, run)

        return await self._write(work)

    async def run_requests(self, run_id: str) -> tuple[list[Request], dict[str, DecisionRecord]]:
        """Every request a run ever raised, in order, with the decisions taken."""

        def work(conn: Connection) -> Any:
            rows = (
                conn.execute(
                    sa.select(t.requests.c.request_id, t.requests.c.body)
                    .where(t.requests.c.run_id == run_id)
                    .order_by(t.requests.c.created_at, t.requests.c.position)
                )
            ).all()
            decided = self._decisions(conn, [r.request_id for r in rows])
            return [REQUEST_ADAPTER.validate_json(r.body) for r in rows], decided

        return await self._read_only(work)

    async def open_requests(self, *, limit: int = 100) -> list[Request]:
        """Open requests across every thread, oldest first."""

        def work(conn: Connection) -> Any:
            rows = (
                conn.execute(
                    sa.select(t.requests.c.body)
                    .join(t.pauses, t.pauses.c.pause_id == t.requests.c.pause_id)
                    .where(t.requests.c.status == "open", t.pauses.c.status == "open", t.requests.c.kind != "delegate")
                    .order_by(t.requests.c.created_at)
                    .limit(limit)
                )
            ).all()
            return [REQUEST_ADAPTER.validate_json(r.body) for r in rows]

        return await self._read_only(work)

    # the at-most-once ledger of approved calls

    async def begin_execution(self, request_id: str, run_id: str, now: float) -> ExecutionRecord | None:
        """Mark an approved call as running before it runs; returns the earlier entry if there is one."""

        def work(conn: Connection) -> ExecutionRecord | None:
            row = conn.execute(sa.select(t.executions).where(t.executions.c.request_id == request_id)).first()
            if row is not None:
                return ExecutionRecord(request_id=request_id, status=row.status, result=row.result)
            conn.execute(
                t.executions.insert().values(request_id=request_id, run_id=run_id, status="executing", started_at=now)
            )
            return None

        try:
            return await self._write(work)
        except IntegrityError:
            return ExecutionRecord(request_id=request_id, status="executing", result=None)

    def _finish_executions(
        self, conn: Connection, executions: Sequence[tuple[str, bytes, dict[str, Any]]], now: float
    ) -> None:
        for request_id, result, _ in executions:
            conn.execute(
                t.executions.update()
                .where(t.executions.c.request_id == request_id)
                .values(status="done", result=result, finished_at=now)
            )
        self._append_audit(conn, [audit for _, _, audit in executions])

    async def finish_execution(
        self, request_id: str, result: bytes, now: float, *, audit: Sequence[dict[str, Any]] = ()
    ) -> None:
        """Record an approved call's result, with its audit record of the arguments it really ran with."""

        def work(conn: Connection) -> Any:
            self._append_audit(conn, audit)
            conn.execute(
                t.executions.update()
                .where(t.executions.c.request_id == request_id)
                .values(status="done", result=result, finished_at=now)
            )

        return await self._write(work)

    # remote delegates

    async def set_remote_task(self, run_id: str, *, url: str, task_id: str, context_id: str) -> None:
        """Remember which remote A2A task a proxy run stands for."""

        def work(conn: Connection) -> Any:
            conn.execute(sa.delete(t.remote_tasks).where(t.remote_tasks.c.run_id == run_id))
            conn.execute(t.remote_tasks.insert().values(run_id=run_id, url=url, task_id=task_id, context_id=context_id))

        return await self._write(work)

    async def remote_task(self, run_id: str) -> tuple[str, str, str] | None:
        """The remote task `(url, task_id, context_id)` behind a proxy run, or `None` for a local run."""

        def work(conn: Connection) -> Any:
            row = (conn.execute(sa.select(t.remote_tasks).where(t.remote_tasks.c.run_id == run_id))).first()
            return (row.url, row.task_id, row.context_id) if row else None

        return await self._read_only(work)

    # grants

    async def list_grants(self, *, principal: str | None = None, active_only: bool = True) -> list[Grant]:
        """Grants, newest first; by default only those not revoked."""
        query = sa.select(t.grants).order_by(t.grants.c.created_at.desc())
        if principal is not None:
            query = query.where(t.grants.c.principal == principal)
        if active_only:
            query = query.where(t.grants.c.revoked_at.is_(None))

        def work(conn: Connection) -> Any:
            rows = (conn.execute(query)).all()
            return [Grant(**row._mapping) for row in rows]

        return await self._read_only(work)

    async def grants_for(self, *, principal: str, tool: str, subject_key: str) -> list[Grant]:
        """The active grants that could cover a call (scope and thread are checked by the caller)."""

        def work(conn: Connection) -> Any:
            rows = (
                conn.execute(
                    sa.select(t.grants).where(
                        t.grants.c.principal == principal,
                        t.grants.c.tool == tool,
                        t.grants.c.subject_key == subject_key,
                        t.grants.c.revoked_at.is_(None),
                    )
                )
            ).all()
            return [Grant(**row._mapping) for row in rows]

        return await self._read_only(work)

    async def revoke_grant(self, grant_id: str, *, now: float, audit: Sequence[dict[str, Any]] = ()) -> Grant | None:
        """Revoke a grant; returns it, or `None` when no active grant has this id."""

        def work(conn: Connection) -> Any:
            res = conn.execute(
                t.grants.update()
                .where(t.grants.c.grant_id == grant_id, t.grants.c.revoked_at.is_(None))
                .values(revoked_at=now)
            )
            if res.rowcount != 1:
                return None
            self._append_audit(conn, audit)
            row = (conn.execute(sa.select(t.grants).where(t.grants.c.grant_id == grant_id))).one()
            return Grant(**row._mapping)

        return await self._write(work)

    # audit

    async def append_audit(self, bodies: Sequence[dict[str, Any]]) -> None:
        def work(conn: Connection) -> Any:
            self._append_audit(conn, bodies)

        return await self._write(work)

    def _append_audit(self, conn: Connection, bodies: Sequence[dict[str, Any]]) -> None:
        if not bodies:
            return
        if conn.dialect.name == "postgresql":
            # One writer at a time extends the chain; SQLite's BEGIN IMMEDIATE already serialises writers.
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(7310)"))
        last = (conn.execute(sa.select(t.audit.c.seq, t.audit.c.hash).order_by(t.audit.c.seq.desc()).limit(1))).first()
        seq, prev = (last.seq, last.hash) if last else (0, GENESIS)
        rows = []
        for body in bodies:
            seq += 1
            digest = chain_hash(prev, seq, body)
            rows.append({"seq": seq, "body": canonical_json(body), "prev_hash": prev, "hash": digest})
            prev = digest
        conn.execute(t.audit.insert(), rows)

    async def audit_records(self) -> list[AuditRecord]:
        """The whole audit log in order."""

        def work(conn: Connection) -> Any:
            rows = (conn.execute(sa.select(t.audit).order_by(t.audit.c.seq))).all()
            return [AuditRecord(seq=r.seq, body=json.loads(r.body), prev_hash=r.prev_hash, hash=r.hash) for r in rows]

        return await self._read_only(work)


def _run_record(fields: dict[str, Any]) -> RunRecord:
    """A run from its table row (client tools parsed)."""
    raw_tools = fields.pop("client_tools")
    return RunRecord(**fields, client_tools=CLIENT_TOOLS_ADAPTER.validate_json(raw_tools) if raw_tools else ())


def _run_row(run: RunRecord) -> dict[str, Any]:
    """A run as its table row (client tools as JSON)."""
    row = asdict(run)
    row["client_tools"] = CLIENT_TOOLS_ADAPTER.dump_json(run.client_tools) if run.client_tools else None
    return row


_NO_LEASE: dict[str, Any] = {"lease_owner": None, "lease_expires_at": None}
"""A run no process holds (paused or finished)."""


def _update_run(conn: Connection, run_id: str, now: float, *conditions: Any, **values: Any) -> int:
    """Change a run's row (every change bumps `revision` and `updated_at`); returns how many rows matched."""
    result = conn.execute(
        t.runs.update()
        .where(t.runs.c.run_id == run_id, *conditions)
        .values(**values, updated_at=now, revision=t.runs.c.revision + 1)
    )
    return result.rowcount


def _free_thread(conn: Connection, run: RunRecord) -> None:
    """The thread takes new runs again once this one has ended."""
    conn.execute(
        t.threads.update()
        .where(t.threads.c.thread_id == run.thread_id, t.threads.c.active_run_id == run.run_id)
        .values(active_run_id=None)
    )


def _is(column: Any, value: str | None) -> Any:
    return column.is_(None) if value is None else column == value


def _make_sqlite_durable(engine: Engine) -> None:
    """WAL with a full fsync per commit; writers `BEGIN IMMEDIATE` so they queue instead of deadlocking."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA busy_timeout=10000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get("sayso_read") else "BEGIN IMMEDIATE")


def _upgrade_schema(conn: Connection) -> None:
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    if MigrationContext.configure(conn).get_current_revision() == head:
        return
    config.attributes["connection"] = conn
    command.upgrade(config, "head")


def now() -> float:
    """Seconds since the epoch; the one clock the store and runtime share."""
    return time.time()
