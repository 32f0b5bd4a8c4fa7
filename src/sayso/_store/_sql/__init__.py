"""The SQL backend of the store port: transactions, primitives and reads, joined in `_store.SqlRunStore`.

| module | holds |
|---|---|
| `_tx` | the small transaction interface of the hot path: constant `Sql`, the stdlib `sqlite3` driver |
| `_postgres` | the asyncpg driver of that interface: a pool per event loop, writes sent together |
| `_writer`, `_checkpoint` | SQLite's threads for commits and for waiting writes, its checkpointer (off their path) |
| `_conn` | connections, read transactions, the mapping of database errors to sayso's, SQLite durability, migrations |
| `_base` | the write transactions the business verbs run in (over `_prims.SqlTx`), signed with the audit key |
| `_prims` | `SqlTx`: the store's transaction primitives (`_primitives.StoreTx`), one or two statements each |
| `_rows` | the primitives' constant statements, and rows ↔ records |
| `_chain` | the audit chain's rows, appended after the checkpointed head |
| `_runs` | the sweeps' reads (lapsed, stalled, expired runs; stuck ledger entries) and a run's messages |
| `_requests` | reads of pauses, requests and decisions |
| `_watch` | a watch's look: the outbox's events after a position, requests whose time just ran out |
| `_grants_audit` | reads of grants and the hash-chained audit log |
| `_listings` | the inbox, threads and transcripts (SQLAlchemy: their statements depend on their filters) |
| `_inbox` | `SqlInbox`: the listings and the audit head alone, what `sayso inbox` opens (no write side) |
| `_outbox` | the outbox's primitives (`SqlOutboxTx`, a base of `SqlTx`): fan-out, claims, settling, pruning |

Its names resolve on first use (PEP 562). The business verbs themselves are not here: they are written
once in `sayso._store._verbs`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._core.lazy import load_lazily

if TYPE_CHECKING:
    # the benchmark prepares its raw engine the same way
    from ._conn import _make_sqlite_durable as _make_sqlite_durable
    from ._conn import async_url
    from ._inbox import SqlInbox
    from ._store import SqlRunStore

__all__ = ["SqlInbox", "SqlRunStore", "async_url"]

_WHERE = {"SqlRunStore": "._store", "SqlInbox": "._inbox", "async_url": "._conn", "_make_sqlite_durable": "._conn"}
"""Where each name lives: importing the package loads none of them, so a store that only lists (`SqlInbox`)
never loads the write side `SqlRunStore` stands on."""


def __getattr__(name: str) -> Any:
    return load_lazily(globals(), _WHERE, name)
