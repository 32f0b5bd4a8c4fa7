"""The audit chain's rows: records appended after the checkpointed head, in the caller's transaction.

Every verb that changes something a person would audit appends its records here, in the same
transaction as the change (`_core/audit.py` seals them: hashes, the key's MACs, the new head);
the head row is the checkpoint that makes truncation and rewrite-and-rehash detectable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..._core.audit import AuditHead, AuditRecord, seal
from ..._core.audit_events import AuditEvent
from ._tx import Sql, Tx

UNREADABLE_EVENT = "unreadable"
"""The event of an audit row whose body is not the JSON object sayso wrote (see `audit_record`)."""

_AUDIT_LOCK = 7310
"""The PostgreSQL advisory lock that lets one writer at a time extend the audit chain."""

AUDIT_LOCK = Sql(f"SELECT pg_advisory_xact_lock({_AUDIT_LOCK})")
AUDIT_HEAD = Sql("SELECT seq, hash, mac FROM audit_head WHERE id = 1")
LOCK_AUDIT_HEAD = Sql("SELECT seq, hash, mac FROM audit_head WHERE id = 1 FOR UPDATE")
MOVE_AUDIT_HEAD = Sql("UPDATE audit_head SET seq = :seq, hash = :hash, mac = :mac WHERE id = 1")
INSERT_AUDIT_HEAD = Sql("INSERT INTO audit_head (id, seq, hash, mac) VALUES (1, :seq, :hash, :mac)")
INSERT_AUDIT = Sql("INSERT INTO audit (seq, body, prev_hash, hash, mac) VALUES (:seq, :body, :prev_hash, :hash, :mac)")


async def append_audit(tx: Tx, bodies: Sequence[AuditEvent]) -> None:
    """Extend the audit chain after its checkpointed head: each record hashes the one before, signed with the key.

    Records go after the head the store checkpointed, not after whatever the table's last row is,
    so a row inserted behind sayso's back collides instead of being chained on (fail closed). The
    key is the transaction's (`Tx.audit_key`); the new head is left on it (`Tx.audit_head`) for
    the store to announce once the transaction commits.
    """
    if not bodies:
        return
    after = await _locked_head(tx) if tx.dialect == "postgresql" else await audit_head(tx)
    records, head = seal(bodies, after=after, key=tx.audit_key)
    assert head is not None
    await tx.later(
        INSERT_AUDIT,
        [{"seq": r.seq, "body": text, "prev_hash": r.prev_hash, "hash": r.hash, "mac": r.mac} for r, text in records],
    )
    # The head read above is the row as this transaction holds it (locked, or under SQLite's write lock).
    values = {"seq": head.seq, "hash": head.hash, "mac": head.mac}
    await tx.later(INSERT_AUDIT_HEAD if after is None else MOVE_AUDIT_HEAD, [values])
    tx.audit_head = head


async def lock_audit(tx: Tx) -> None:
    """Take the chain's lock first, in a transaction that will lock a pause, run or thread row before its audit.

    The one lock order on PostgreSQL: the audit chain's lock, then the rows. A decider takes the
    chain's lock with its decision and then consumes the pause; a writer that consumed the pause
    first and then appended its audit waited for the decider, which waited for it (`deadlock
    detected`). SQLite's writers already queue as a whole.
    """
    if tx.dialect == "postgresql":
        await _locked_head(tx)


async def _locked_head(tx: Tx) -> AuditHead | None:
    """The head, locked so that one writer at a time extends the chain (SQLite's BEGIN IMMEDIATE already does).

    One round trip: the head row's lock, whose wait ends with the row as the writer before left it
    (read committed re-reads a row it waited for). Before the first record there is no row to lock:
    an advisory lock orders the first writers, and the row is locked too if one of them made it.
    """
    row = await tx.one(LOCK_AUDIT_HEAD)
    if row is None:
        await tx.one(AUDIT_LOCK)
        row = await tx.one(LOCK_AUDIT_HEAD)
    return AuditHead(seq=row["seq"], hash=row["hash"], mac=row["mac"]) if row is not None else None


async def audit_head(tx: Tx) -> AuditHead | None:
    """The checkpointed head of the audit chain (`None` before the first record)."""
    row = await tx.one(AUDIT_HEAD)
    return AuditHead(seq=row["seq"], hash=row["hash"], mac=row["mac"]) if row is not None else None


def audit_record(row: Any) -> AuditRecord:
    """An audit record from its row (the body parsed back from its canonical JSON).

    sayso writes every body as a JSON object, so a body that is not one was written behind its
    back: it is kept as an `unreadable` event holding the text, which lists like any record and
    fails its hash check, so verifying names it as altered instead of stopping on the parse.
    """
    try:
        body = json.loads(row.body)
    except (ValueError, TypeError):  # not JSON text: a hand-written number or blob as well
        body = None
    if not isinstance(body, dict):
        text = row.body if isinstance(row.body, str) else repr(row.body)
        body = {"event": UNREADABLE_EVENT, "text": text}
    return AuditRecord(seq=row.seq, body=body, prev_hash=row.prev_hash, hash=row.hash, mac=row.mac)
