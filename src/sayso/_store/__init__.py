"""Durable storage for runs, pauses and decisions (SQLite by default, PostgreSQL for replicas)."""

from ._records import ExecutionRecord, RunRecord, RunStatus, ThreadRecord
from ._sql import RunStore, async_url

__all__ = ["ExecutionRecord", "RunRecord", "RunStatus", "RunStore", "ThreadRecord", "async_url"]
