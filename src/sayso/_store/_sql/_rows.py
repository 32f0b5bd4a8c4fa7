"""Statements several SQL verbs share, as functions over an open connection, and rows ↔ records.

Each function runs inside the caller's transaction; none opens one of its own, so a verb that
uses several of them still commits once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import sqlalchemy as sa
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from sqlalchemy import Connection
from sqlalchemy.dialects import postgresql, sqlite

from ..._core.audit import GENESIS, AuditRecord, canonical_json, chain_hash
from ..._core.decisions import DECISION_ADAPTER, DecisionRecord
from ..._core.requests import CLIENT_TOOLS_ADAPTER
from ...exceptions import RunConflict
from .. import _tables as t
from .._records import ExecutionResult, RunRecord

NO_LEASE: dict[str, Any] = {"lease_owner": None, "lease_expires_at": None}
"""A run no process holds (paused or finished)."""

_AUDIT_LOCK = 7310
"""The PostgreSQL advisory lock that lets one writer at a time extend the audit chain."""


def run_record(fields: dict[str, Any]) -> RunRecord:
    """A run from its table row (client tools parsed)."""
    raw_tools = fields.pop("client_tools")
    return RunRecord(**fields, client_tools=CLIENT_TOOLS_ADAPTER.validate_json(raw_tools) if raw_tools else ())


def run_row(run: RunRecord) -> dict[str, Any]:
    """A run as its table row (client tools as JSON)."""
    row = asdict(run)
    row["client_tools"] = CLIENT_TOOLS_ADAPTER.dump_json(run.client_tools) if run.client_tools else None
    return row


def update_run(conn: Connection, run_id: str, now: float, *conditions: Any, **values: Any) -> int:
    """Change a run's row (every change bumps `revision` and `updated_at`); returns how many rows matched."""
    result = conn.execute(
        t.runs.update()
        .where(t.runs.c.run_id == run_id, *conditions)
        .values(**values, updated_at=now, revision=t.runs.c.revision + 1)
    )
    return result.rowcount


def free_thread(conn: Connection, run: RunRecord) -> None:
    """The thread takes new runs again once this one has ended."""
    conn.execute(
        t.threads.update()
        .where(t.threads.c.thread_id == run.thread_id, t.threads.c.active_run_id == run.run_id)
        .values(active_run_id=None)
    )


def consume(conn: Connection, pause_id: str) -> bool:
    """Consume an open pause; `False` when it was consumed before (someone else won)."""
    done = conn.execute(
        t.pauses.update().where(t.pauses.c.pause_id == pause_id, t.pauses.c.status == "open").values(status="consumed")
    )
    return done.rowcount == 1


def own(conn: Connection, run_id: str, owner: str) -> None:
    """Refuse the step unless `owner` still holds the run's lease."""
    row = conn.execute(sa.select(t.runs.c.lease_owner).where(t.runs.c.run_id == run_id)).first()
    if row is None or row.lease_owner != owner:
        raise RunConflict(run_id, "this process lost its lease on the run; another process carries it on")


def append_messages(conn: Connection, run: RunRecord, new: Sequence[ModelMessage]) -> None:
    """Append a run's new messages to its thread's log as one batch."""
    if not new:
        return
    seq = conn.execute(
        sa.select(sa.func.coalesce(sa.func.max(t.messages.c.seq), 0)).where(t.messages.c.thread_id == run.thread_id)
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


def history(conn: Connection, thread_id: str) -> list[ModelMessage]:
    """A thread's whole message log, oldest first."""
    rows = conn.execute(
        sa.select(t.messages.c.body).where(t.messages.c.thread_id == thread_id).order_by(t.messages.c.seq)
    ).all()
    messages: list[ModelMessage] = []
    for row in rows:
        messages.extend(ModelMessagesTypeAdapter.validate_json(row.body))
    return messages


def decisions_of(conn: Connection, request_ids: Sequence[str]) -> dict[str, DecisionRecord]:
    """The decisions taken for these requests, by request id."""
    if not request_ids:
        return {}
    rows = conn.execute(sa.select(t.decisions).where(t.decisions.c.request_id.in_(list(request_ids)))).all()
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


def insert_decisions(conn: Connection, records: Sequence[DecisionRecord], audit: Sequence[dict[str, Any]] = ()) -> None:
    """Record decisions (their requests become `decided`) and append their audit records."""
    append_audit(conn, audit)
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
        t.requests.update().where(t.requests.c.request_id.in_([d.request_id for d in records])).values(status="decided")
    )


def finish_executions(conn: Connection, executions: Sequence[ExecutionResult], now: float) -> None:
    """Write the results of approved calls to their ledger entries, with their audit records."""
    for done in executions:
        conn.execute(
            t.executions.update()
            .where(t.executions.c.request_id == done.request_id)
            .values(status="done", result=done.result, finished_at=now)
        )
    append_audit(conn, [done.audit for done in executions])


def append_audit(conn: Connection, bodies: Sequence[dict[str, Any]]) -> None:
    """Extend the audit chain: each record carries the hash of the one before."""
    if not bodies:
        return
    if conn.dialect.name == "postgresql":
        # One writer at a time extends the chain; SQLite's BEGIN IMMEDIATE already serialises writers.
        conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({_AUDIT_LOCK})"))
    last = conn.execute(sa.select(t.audit.c.seq, t.audit.c.hash).order_by(t.audit.c.seq.desc()).limit(1)).first()
    seq, prev = (last.seq, last.hash) if last else (0, GENESIS)
    rows = []
    for body in bodies:
        seq += 1
        digest = chain_hash(prev, seq, body)
        rows.append({"seq": seq, "body": canonical_json(body), "prev_hash": prev, "hash": digest})
        prev = digest
    conn.execute(t.audit.insert(), rows)


def audit_record(row: Any) -> AuditRecord:
    """An audit record from its row (the body parsed back from its canonical JSON)."""
    return AuditRecord(seq=row.seq, body=json.loads(row.body), prev_hash=row.prev_hash, hash=row.hash)


def workflow_state(conn: Connection, run_id: str) -> bytes | None:
    """A workflow run's saved state, or `None`."""
    body = conn.execute(
        sa.select(t.workflow_states.c.body).where(t.workflow_states.c.run_id == run_id)
    ).scalar_one_or_none()
    return None if body is None else bytes(body)


def put_workflow_state(conn: Connection, run_id: str, state: bytes, now: float) -> None:
    """Replace a workflow run's saved state, in one statement (an upsert on the run's id)."""
    insert = (postgresql if conn.dialect.name == "postgresql" else sqlite).insert(t.workflow_states)
    conn.execute(
        insert.values(run_id=run_id, body=state, updated_at=now).on_conflict_do_update(
            index_elements=[t.workflow_states.c.run_id],
            set_={"body": insert.excluded.body, "updated_at": insert.excluded.updated_at},
        )
    )


def is_(column: Any, value: str | None) -> Any:
    """SQL: `column` holds `value`, where `None` means NULL."""
    return column.is_(None) if value is None else column == value
