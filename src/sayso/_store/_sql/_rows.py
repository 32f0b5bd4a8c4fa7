"""Statements several SQL verbs share, as functions over an open connection, and rows ↔ records.

Each function runs inside the caller's transaction; none opens one of its own, so a verb that
uses several of them still commits once.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import sqlalchemy as sa
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from sqlalchemy import Connection

from ..._core.audit import AuditHead, AuditKey, AuditRecord, canonical_json, seal
from ..._core.decisions import DECISION_ADAPTER, DecisionRecord
from ..._core.requests import CLIENT_TOOLS_ADAPTER
from ...exceptions import RunConflict
from .. import _tables as t
from .._records import ExecutionResult, OutboxKind, RunRecord

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
    outbox(conn, "request.decided", [d.request_id for d in records], now=max(d.decided_at for d in records))


def outbox(conn: Connection, kind: OutboxKind, request_ids: Sequence[str], *, now: float) -> None:
    """Write one outbox event per request, in the caller's transaction (so it commits with the change)."""
    if request_ids:
        conn.execute(
            t.outbox.insert(),
            [
                {"event_id": new_event_id(), "kind": kind, "request_id": r, "created_at": now, "fanned_out": False}
                for r in request_ids
            ],
        )


def new_event_id() -> str:
    """An outbox event's id: random, so ids never repeat across databases."""
    return f"evt_{secrets.token_urlsafe(12)}"


def finish_executions(conn: Connection, executions: Sequence[ExecutionResult], now: float) -> None:
    """Write the results of approved calls to their ledger entries, with their audit records."""
    for done in executions:
        conn.execute(
            t.executions.update()
            .where(t.executions.c.request_id == done.request_id)
            .values(status=done.status, result=done.result, finished_at=now)
        )
    append_audit(conn, [done.audit for done in executions])


AUDIT_SLOT = "sayso_audit"
"""Where a transaction's connection holds its `AuditSlot` (`Connection.info`); each transaction sets a new one."""


@dataclass
class AuditSlot:
    """The audit key a transaction signs with, and the chain's new head it leaves, announced once it commits."""

    key: AuditKey | None
    head: AuditHead | None = None


def append_audit(conn: Connection, bodies: Sequence[dict[str, Any]]) -> None:
    """Extend the audit chain after its checkpointed head: each record hashes the one before, signed with the key.

    Records go after the head the store checkpointed, not after whatever the table's last row is,
    so a row inserted behind sayso's back collides instead of being chained on (fail closed).
    """
    if not bodies:
        return
    if conn.dialect.name == "postgresql":
        # One writer at a time extends the chain; SQLite's BEGIN IMMEDIATE already serialises writers.
        conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({_AUDIT_LOCK})"))
    after = audit_head(conn)
    slot = conn.info[AUDIT_SLOT]
    assert isinstance(slot, AuditSlot), "every transaction sets its audit slot"
    records, head = seal(bodies, after=after, key=slot.key)
    assert head is not None
    conn.execute(
        t.audit.insert(),
        [
            {"seq": r.seq, "body": canonical_json(r.body), "prev_hash": r.prev_hash, "hash": r.hash, "mac": r.mac}
            for r in records
        ],
    )
    values = {"seq": head.seq, "hash": head.hash, "mac": head.mac}
    if conn.execute(t.audit_head.update().where(t.audit_head.c.id == 1).values(**values)).rowcount != 1:
        conn.execute(t.audit_head.insert().values(id=1, **values))
    slot.head = head


def audit_head(conn: Connection) -> AuditHead | None:
    """The checkpointed head of the audit chain (`None` before the first record)."""
    row = conn.execute(sa.select(t.audit_head).where(t.audit_head.c.id == 1)).first()
    return AuditHead(seq=row.seq, hash=row.hash, mac=row.mac) if row else None


def audit_record(row: Any) -> AuditRecord:
    """An audit record from its row (the body parsed back from its canonical JSON)."""
    return AuditRecord(seq=row.seq, body=json.loads(row.body), prev_hash=row.prev_hash, hash=row.hash, mac=row.mac)


def is_(column: Any, value: str | None) -> Any:
    """SQL: `column` holds `value`, where `None` means NULL."""
    return column.is_(None) if value is None else column == value
