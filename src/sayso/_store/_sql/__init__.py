"""The SQL backend of the store port: one module per concept, joined in `_store.SqlRunStore`.

| module | holds |
|---|---|
| `_tx` | the small transaction interface of the hot path: constant `Sql`, the stdlib `sqlite3` and asyncpg drivers |
| `_base` | connections, transactions, the mapping of database errors to sayso's, SQLite durability, migrations |
| `_rows` | the hot path's constant statements, steps several verbs share, and rows ↔ records |
| `_runs` | threads and runs: start, lease, pause, finish, cancel, expiry; the message log; remote tasks |
| `_requests` | pauses, requests and decisions: first decision wins, consuming a pause |
| `_ledger` | the at-most-once ledger of approved calls |
| `_grants_audit` | grants and the hash-chained audit log |
| `_listings` | the inbox, threads and transcripts (SQLAlchemy: their statements depend on their filters) |
| `_marks` | adapters' own small values |
"""

from ._base import _make_sqlite_durable as _make_sqlite_durable  # the benchmark prepares its raw engine the same way
from ._base import async_url
from ._store import SqlRunStore

__all__ = ["SqlRunStore", "async_url"]
