"""The SQL backend of the store port: transactions, primitives and reads, joined in `_store.SqlRunStore`.

| module | holds |
|---|---|
| `_tx` | the small transaction interface of the hot path: constant `Sql`, the stdlib `sqlite3` and asyncpg drivers |
| `_base` | connections, transactions, the mapping of database errors to sayso's, SQLite durability, migrations |
| `_prims` | `SqlTx`: the store's transaction primitives (`_primitives.StoreTx`), one or two statements each |
| `_rows` | the primitives' constant statements, and rows ↔ records |
| `_chain` | the audit chain's rows, appended after the checkpointed head |
| `_runs` | the sweeps' reads (lapsed, stalled, expired runs; stuck ledger entries) and a run's messages |
| `_requests` | reads of pauses, requests and decisions |
| `_grants_audit` | reads of grants and the hash-chained audit log |
| `_listings` | the inbox, threads and transcripts (SQLAlchemy: their statements depend on their filters) |
| `_outbox` | the outbox's primitives (`SqlOutboxTx`, a base of `SqlTx`): fan-out, claims, settling, pruning |

The business verbs themselves are not here: they are written once in `sayso._store._verbs`.
"""

from ._base import _make_sqlite_durable as _make_sqlite_durable  # the benchmark prepares its raw engine the same way
from ._base import async_url
from ._store import SqlRunStore

__all__ = ["SqlRunStore", "async_url"]
