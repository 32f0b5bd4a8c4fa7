"""Durable storage for runs, pauses and decisions, behind one port with interchangeable backends.

`RunStore` is the port (`_port`, its outbox verbs in `_port_outbox`, what a watch reads in
`_port_watch`), its business verbs written once (`_verbs/`) over one transaction's primitives
(`_primitives`); `SqlRunStore` serves SQLite (the default) and PostgreSQL (for replicas) (`_sql/`),
and `MemoryRunStore` keeps everything in process memory (`_memory`), each implementing the primitives.
`store_from_url` opens the SQL store a configured URL names (`_urls`; `inbox_from_url` only the
part that lists open requests, `_port_inbox`). The records every verb takes and returns live in
`_records`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._core.lazy import load_lazily

if TYPE_CHECKING:
    from .._core.deciding import ResumeClaim, Verdict
    from ..exceptions import InvalidCursor
    from ._codecs import build_codecs
    from ._holders import holder_is_dead, new_holder
    from ._memory import MemoryRunStore
    from ._port import RunStore
    from ._port_inbox import InboxPort
    from ._port_outbox import PRUNED_AT_ONCE
    from ._port_top_runs import RunPage, RunQuery
    from ._port_watch import FEED_PAGE
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
        EventsPage,
        ExecutionRecord,
        ExecutionResult,
        FeedEvent,
        GrantPage,
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
        RunRecord,
        RunRequests,
        RunStart,
        RunStatus,
        StuckExecution,
        ThreadPage,
        ThreadRecord,
        ThreadSummary,
        TranscriptEntry,
        TranscriptPage,
    )
    from ._sql._conn import async_url
    from ._sql._inbox import SqlInbox
    from ._sql._store import SqlRunStore
    from ._urls import inbox_from_url, refuse_missing_folder, store_from_url

__all__ = [
    "AuditPage",
    "BegunRun",
    "GrantPage",
    "Claim",
    "Decided",
    "DeliveryStatus",
    "DueEscalation",
    "EntryRole",
    "ExecutionRecord",
    "EventsPage",
    "ExecutionResult",
    "FEED_PAGE",
    "FeedEvent",
    "GRANTS_READ_AT_ONCE",
    "InboxFilter",
    "InboxPage",
    "InboxPort",
    "InvalidCursor",
    "LedgerStatus",
    "MemoryRunStore",
    "OutboxKind",
    "PRUNED_AT_ONCE",
    "PauseState",
    "PauseStatus",
    "PendingDelivery",
    "REQUEST_KINDS",
    "RemoteTask",
    "RequestState",
    "RequestWithRun",
    "ResumeClaim",
    "RunPage",
    "RunQuery",
    "RunRecord",
    "RunRequests",
    "RunStart",
    "RunStatus",
    "RunStore",
    "SqlInbox",
    "SqlRunStore",
    "StuckExecution",
    "ThreadRecord",
    "ThreadPage",
    "ThreadSummary",
    "TranscriptEntry",
    "TranscriptPage",
    "Verdict",
    "async_url",
    "build_codecs",
    "holder_is_dead",
    "inbox_from_url",
    "new_holder",
    "refuse_missing_folder",
    "store_from_url",
]

_WHERE: dict[str, str] = {
    "AuditPage": "._records",
    "GrantPage": "._records",
    "BegunRun": "._records",
    "Claim": "._records",
    "Decided": "._records",
    "DeliveryStatus": "._records",
    "DueEscalation": "._records",
    "EntryRole": "._records",
    "ExecutionRecord": "._records",
    "EventsPage": "._records",
    "ExecutionResult": "._records",
    "FEED_PAGE": "._port_watch",
    "RunPage": "._port_top_runs",
    "RunQuery": "._port_top_runs",
    "FeedEvent": "._records",
    "GRANTS_READ_AT_ONCE": "._records",
    "InboxFilter": "._records",
    "InboxPage": "._records",
    "InboxPort": "._port_inbox",
    "InvalidCursor": "..exceptions",
    "LedgerStatus": "._records",
    "MemoryRunStore": "._memory",
    "OutboxKind": "._records",
    "PRUNED_AT_ONCE": "._port_outbox",
    "PauseState": "._records",
    "PauseStatus": "._records",
    "PendingDelivery": "._records",
    "REQUEST_KINDS": "._records",
    "RemoteTask": "._records",
    "RequestState": "._records",
    "RequestWithRun": "._records",
    "ResumeClaim": ".._core.deciding",
    "RunRecord": "._records",
    "RunRequests": "._records",
    "RunStart": "._records",
    "RunStatus": "._records",
    "RunStore": "._port",
    "SqlInbox": "._sql._inbox",
    "SqlRunStore": "._sql._store",
    "StuckExecution": "._records",
    "ThreadRecord": "._records",
    "ThreadPage": "._records",
    "ThreadSummary": "._records",
    "TranscriptEntry": "._records",
    "TranscriptPage": "._records",
    "Verdict": ".._core.deciding",
    "async_url": "._sql._conn",
    "build_codecs": "._codecs",
    "holder_is_dead": "._holders",
    "inbox_from_url": "._urls",
    "new_holder": "._holders",
    "refuse_missing_folder": "._urls",
    "store_from_url": "._urls",
}
"""Where each name lives. Names resolve on first use (PEP 562, as the runtime's): reading a record loads no
backend, and a command that only lists open requests (`inbox_from_url`) never loads the SQL store's write side."""


def __getattr__(name: str) -> Any:
    return load_lazily(globals(), _WHERE, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
