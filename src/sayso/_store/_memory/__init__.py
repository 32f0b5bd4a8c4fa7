"""The in-memory backend of the store port, for tests and for embedding; nothing survives the process.

| module | holds |
|---|---|
| `_base` | the tables (serialised rows) and the lookups several reads share |
| `_tx` | `MemoryTx`: the store's transaction primitives over the tables, with an undo log; the lock |
| `_runs` | the sweeps' reads (lapsed, stalled, expired runs), the message log, thread listings |
| `_requests` | reads of pauses, requests and decisions, the inbox, stuck ledger entries |
| `_watch` | a watch's look: the outbox's events after a position, requests whose time just ran out |
| `_grants_audit` | reads of grants and the audit log |
| `_outbox` | the outbox's primitives (`MemoryOutboxTx`, a base of `MemoryTx`): fan-out, claims, settling, pruning |

The business verbs themselves are not here: they are written once in `sayso._store._verbs`.
"""

from ._store import MemoryRunStore

__all__ = ["MemoryRunStore"]
