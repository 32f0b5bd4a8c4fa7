"""Durable storage for runs, pauses and decisions, behind one port with interchangeable backends.

`RunStore` is the port (`_port`, its outbox verbs in `_port_outbox`), its business verbs written
once (`_verbs/`) over one transaction's primitives (`_primitives`); `SqlRunStore` serves SQLite
(the default) and PostgreSQL (for replicas) (`_sql/`), and `MemoryRunStore` keeps everything in
process memory (`_memory`), each implementing the primitives. `store_from_url` picks the backend a
configured URL names. The records every verb takes and returns live in `_records`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..exceptions import ConfigError, InvalidCursor
from ._holders import holder_is_dead, new_holder
from ._port import RunStore
from ._port_outbox import PRUNED_AT_ONCE
from ._records import (
    GRANTS_READ_AT_ONCE,
    REQUEST_KINDS,
    AuditPage,
    BegunRun,
    Claim,
    Decided,
    DeliveryStatus,
    DueEscalation,
    EntryRole,
    ExecutionRecord,
    ExecutionResult,
    InboxFilter,
    InboxPage,
    LedgerStatus,
    OutboxKind,
    PauseState,
    PauseStatus,
    PendingDelivery,
    RemoteTask,
    RequestState,
    RequestWithRun,
    ResumeClaim,
    RunRecord,
    RunRequests,
    RunStart,
    RunStatus,
    StuckExecution,
    ThreadRecord,
    ThreadSummary,
    TranscriptEntry,
    Verdict,
)
from ._sql import SqlRunStore, async_url

__all__ = [
    "GRANTS_READ_AT_ONCE",
    "PRUNED_AT_ONCE",
    "AuditPage",
    "BegunRun",
    "Claim",
    "Decided",
    "DeliveryStatus",
    "DueEscalation",
    "EntryRole",
    "ExecutionRecord",
    "ExecutionResult",
    "InboxFilter",
    "InboxPage",
    "InvalidCursor",
    "LedgerStatus",
    "MemoryRunStore",
    "REQUEST_KINDS",
    "OutboxKind",
    "PauseState",
    "PauseStatus",
    "PendingDelivery",
    "RemoteTask",
    "RequestState",
    "RequestWithRun",
    "ResumeClaim",
    "RunRecord",
    "RunStart",
    "RunRequests",
    "RunStatus",
    "RunStore",
    "SqlRunStore",
    "StuckExecution",
    "ThreadRecord",
    "ThreadSummary",
    "TranscriptEntry",
    "Verdict",
    "async_url",
    "holder_is_dead",
    "new_holder",
    "store_from_url",
]

MEMORY_URL = "memory://"

if TYPE_CHECKING:
    from ._memory import MemoryRunStore


def __getattr__(name: str) -> Any:
    """`MemoryRunStore` on first use: a command on a SQL store does not load the in-memory one."""
    if name == "MemoryRunStore":
        from ._memory import MemoryRunStore

        return MemoryRunStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def store_from_url(url: str, *, base_dir: Path | None = None) -> RunStore:
    """The store a configured URL names: `sqlite:///…` or `postgresql://…` in SQL, `memory://` in memory.

    Relative SQLite paths are taken from `base_dir` (the config file's folder).

    Raises:
        ConfigError: the URL names no store sayso has.
    """
    if url.startswith(MEMORY_URL):
        from ._memory import MemoryRunStore

        return MemoryRunStore()
    if url.startswith(("sqlite", "postgresql", "postgres://")):
        return SqlRunStore(url, base_dir=base_dir)
    raise ConfigError(f"store {url!r} is not one sayso has; use sqlite:///…, postgresql://… or {MEMORY_URL}")
