"""The store port stays narrow: a backend implements a short, fixed list of transaction primitives."""

from __future__ import annotations

from sayso._store._memory._tx import MemoryTx
from sayso._store._primitives import StoreTx
from sayso._store._sql._prims import SqlTx

PRIMITIVES = {
    "get",
    "add",
    "change",
    "history",
    "deciding",
    "votes",
    "active_grants",
    "lock_audit",
    "append_audit",
    "due_escalations",
    "unfanned_events",
    "due_deliveries",
    "delivery_counts",
    "prune",
}


def test_a_store_transaction_has_fourteen_primitives() -> None:
    """A new primitive is a design change: it must be added here, not slip into the port (issue 21 had 40)."""
    assert set(StoreTx.__abstractmethods__) == PRIMITIVES


def test_every_backend_implements_every_primitive() -> None:
    """Memory, SQLite and PostgreSQL (one `SqlTx`) leave none abstract, so each verb runs on all three."""
    assert not MemoryTx.__abstractmethods__
    assert not SqlTx.__abstractmethods__
