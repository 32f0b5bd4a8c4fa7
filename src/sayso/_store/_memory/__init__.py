"""The in-memory backend of the store port, for tests and for embedding; nothing survives the process.

| module | holds |
|---|---|
| `_base` | the tables (serialised rows), the lock, and the steps several verbs share |
| `_runs` | threads and runs: start, lease, pause, finish, cancel, expiry; the message log; remote tasks |
| `_requests` | pauses, requests and decisions, the inbox, the at-most-once ledger |
| `_grants_audit` | grants, the audit log, adapters' marks |
"""

from ._store import MemoryRunStore

__all__ = ["MemoryRunStore"]
