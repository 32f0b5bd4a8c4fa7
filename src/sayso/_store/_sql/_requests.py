"""SQL verbs of pauses, requests and decisions: reading them, the first decision winning, consuming a pause."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

import sqlalchemy as sa
from pydantic_ai.messages import ModelMessage
from sqlalchemy import Connection

from ..._core.decisions import DecisionRecord
from ..._core.grants import Grant
from ..._core.requests import REQUEST_ADAPTER, Request
from ...exceptions import PauseConsumed, StoreError
from .. import _tables as t
from .._records import Claim, PauseState, RequestState, RequestWithRun, RunRecord, RunRequests
from . import _rows
from ._base import _SqlBase


class _Requests(_SqlBase):
    async def get_request(self, request_id: str) -> RequestState | None:
        def work(conn: Connection) -> RequestState | None:
            row = conn.execute(
                sa.select(t.requests.c.body, t.pauses.c.status)
                .join(t.pauses, t.pauses.c.pause_id == t.requests.c.pause_id)
                .where(t.requests.c.request_id == request_id)
            ).first()
            if row is None:
                return None
            decision = _rows.decisions_of(conn, [request_id])
            return RequestState(
                request=REQUEST_ADAPTER.validate_json(row.body),
                pause_status=row.status,
                decision=decision.get(request_id),
            )

        return await self._read(work)

    async def request_with_run(self, request_id: str) -> RequestWithRun | None:
        def work(conn: Connection) -> RequestWithRun | None:
            row = conn.execute(
                sa.select(t.requests.c.body, t.pauses.c.status.label("pause_status"), t.runs)
                .join(t.pauses, t.pauses.c.pause_id == t.requests.c.pause_id)
                .join(t.runs, t.runs.c.run_id == t.requests.c.run_id)
                .where(t.requests.c.request_id == request_id)
            ).first()
            if row is None:
                return None
            decision = _rows.decisions_of(conn, [request_id])
            return RequestWithRun(
                request=REQUEST_ADAPTER.validate_json(row.body),
                pause_status=row.pause_status,
                decision=decision.get(request_id),
                run=_rows.run_record({c.name: getattr(row, c.name) for c in t.runs.columns}),
            )

        return await self._read(work)

    async def pause_state(self, pause_id: str) -> PauseState:
        def work(conn: Connection) -> PauseState:
            pause = conn.execute(
                sa.select(t.pauses.c.run_id, t.pauses.c.status).where(t.pauses.c.pause_id == pause_id)
            ).first()
            if pause is None:
                raise StoreError(f"no pause has id {pause_id!r}")
            rows = conn.execute(
                sa.select(t.requests.c.request_id, t.requests.c.body)
                .where(t.requests.c.pause_id == pause_id)
                .order_by(t.requests.c.position)
            ).all()
            return PauseState(
                run_id=pause.run_id,
                status=pause.status,
                requests=[REQUEST_ADAPTER.validate_json(r.body) for r in rows],
                decisions=_rows.decisions_of(conn, [r.request_id for r in rows]),
            )

        return await self._read(work)

    async def run_requests(self, run_id: str) -> RunRequests:
        def work(conn: Connection) -> RunRequests:
            rows = conn.execute(
                sa.select(t.requests.c.request_id, t.requests.c.body)
                .where(t.requests.c.run_id == run_id)
                .order_by(t.requests.c.created_at, t.requests.c.position)
            ).all()
            return RunRequests(
                requests=[REQUEST_ADAPTER.validate_json(r.body) for r in rows],
                decisions=_rows.decisions_of(conn, [r.request_id for r in rows]),
            )

        return await self._read(work)

    async def open_requests(self, *, limit: int = 100) -> list[Request]:
        def work(conn: Connection) -> list[Request]:
            rows = conn.execute(
                sa.select(t.requests.c.body)
                .join(t.pauses, t.pauses.c.pause_id == t.requests.c.pause_id)
                .where(t.requests.c.status == "open", t.pauses.c.status == "open", t.requests.c.kind != "delegate")
                .order_by(t.requests.c.created_at)
                .limit(limit)
            ).all()
            return [REQUEST_ADAPTER.validate_json(r.body) for r in rows]

        return await self._read(work)

    async def record_decision(
        self, record: DecisionRecord, *, audit: Sequence[dict[str, Any]] = (), grant: Grant | None = None
    ) -> DecisionRecord | None:
        def work(conn: Connection) -> DecisionRecord | None:
            existing = _rows.decisions_of(conn, [record.request_id])
            if record.request_id in existing:
                return existing[record.request_id]
            _rows.insert_decisions(conn, [record], audit)
            if grant is not None:
                conn.execute(t.grants.insert().values(**asdict(grant)))
            return None

        def earlier(conn: Connection) -> DecisionRecord | None:
            found = _rows.decisions_of(conn, [record.request_id]).get(record.request_id)
            if found is None:  # the clash was not over the decision (say, a grant id): nothing to return
                raise StoreError(f"request {record.request_id!r}: the decision could not be recorded")
            return found

        return await self._write(work, race=earlier)

    async def record_decisions(
        self,
        records: Sequence[DecisionRecord],
        *,
        audit: Sequence[dict[str, Any]] = (),
        grants: Sequence[Grant] = (),
    ) -> list[DecisionRecord]:
        ids = [r.request_id for r in records]

        def earlier(conn: Connection) -> list[DecisionRecord]:
            existing = _rows.decisions_of(conn, ids)
            return [existing[i] for i in ids if i in existing]

        def work(conn: Connection) -> list[DecisionRecord]:
            taken = earlier(conn)
            if taken:
                return taken
            _rows.insert_decisions(conn, records, audit)
            if grants:
                conn.execute(t.grants.insert(), [asdict(g) for g in grants])
            return []

        def lost(conn: Connection) -> list[DecisionRecord]:
            taken = earlier(conn)
            if not taken:  # the clash was not over a decision (say, a grant id): nothing was recorded
                raise StoreError(f"requests {ids!r}: the decisions could not be recorded")
            return taken

        return await self._write(work, race=lost)

    async def add_decisions(self, records: Sequence[DecisionRecord], *, audit: Sequence[dict[str, Any]] = ()) -> None:
        def work(conn: Connection) -> None:
            existing = _rows.decisions_of(conn, [r.request_id for r in records])
            _rows.insert_decisions(conn, [r for r in records if r.request_id not in existing], audit)

        await self._write(work, race=work)  # a person decided one of them meanwhile: theirs is kept

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
        durable: bool = True,
        load_workflow_state: bool = False,
    ) -> Claim:
        claim: dict[str, Any] = {
            "status": "running",
            "resume_pause_id": pause_id,
            "pause_id": None,
            "lease_owner": owner,
            "lease_expires_at": until,
        }

        def work(conn: Connection) -> Claim:
            if not _rows.consume(conn, pause_id):
                raise PauseConsumed(run.run_id, "this pause was already resumed; a pause is consumed once")
            _rows.insert_decisions(conn, added, audit)
            if executing:
                conn.execute(
                    t.executions.insert(),
                    [
                        {"request_id": r, "run_id": run.run_id, "status": "executing", "started_at": now}
                        for r in executing
                    ],
                )
            _rows.update_run(conn, run.run_id, now, **claim)
            history: list[ModelMessage] | None = _rows.history(conn, run.thread_id) if load_history else None
            state = _rows.workflow_state(conn, run.run_id) if load_workflow_state else None
            return Claim(
                run=replace(run, **claim, updated_at=now, revision=run.revision + 1),
                history=history,
                workflow_state=state,
            )

        return await self._write(work, durable=durable or bool(executing))  # ledger marks reach the disk first
