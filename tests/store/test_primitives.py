"""The store port stays narrow: a backend implements a short, fixed list of transaction primitives."""

from __future__ import annotations

from sayso._store._dispatch import OpsTx
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


def test_the_ops_are_dispatched_once_for_every_backend() -> None:
    """`get`, `add` and `change` read the ops in one place; a backend only says what each op does on its tables."""
    for backend in (MemoryTx, SqlTx):
        assert issubclass(backend, OpsTx)
        assert (backend.get, backend.add, backend.change) == (OpsTx.get, OpsTx.add, OpsTx.change)
