"""Shared pieces of the sayso side of the benchmarks.

The workload text (prior turns, the user request, the tool result and the final answer) and
the scripted model come from the pydantic-ai anchor itself, so all three implementations
carry byte-for-byte the same conversation.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
from collections.abc import Iterable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "anchors"))

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.models.function import FunctionModel
from pydanticai_cycle import (
    cycle_path,
    db_size,
    disk_write_bytes,
    final_answer,
    fresh_db,
    history_messages,
    scripted_model,
    tool_result,
    user_request,
)
from sqlalchemy import event

from sayso import Config

__all__ = [
    "Counters",
    "bench_config",
    "cycle_path",
    "db_size",
    "default_db",
    "delete_file",
    "disk_write_bytes",
    "final_answer",
    "fresh_db",
    "history_messages",
    "rss_bytes",
    "seed_threads",
    "tool_result",
    "user_request",
]


async def delete_file(path: str) -> str:
    """Delete a file (a no-op that reports success, as in both anchors)."""
    return tool_result(path)


def bench_config(db: str) -> Config:
    """A fresh config (with its own model object) for one Sayso instance: nothing is shared between instances."""
    return Config.model_validate(
        {
            "store": f"sqlite:///{db}",
            "agents": {
                "bench": {
                    "model": FunctionModel(scripted_model),
                    "tools": [delete_file],
                    "interrupt": {"tools": ["delete_file"]},
                }
            },
        }
    )


def default_db(name: str) -> str:
    return os.path.join(tempfile.gettempdir(), "bench_anchors", f"{name}-{os.getpid()}.sqlite")


def seed_threads(db: str, thread_ids: Iterable[str], history: int, *, agent: str = "bench", now: float = 0.0) -> None:
    """Write threads that already hold `history` prior user/assistant pairs, straight into the store's tables.

    sayso keeps a thread's history as an append-only log in `messages` (one row per run segment);
    a seeded thread is one `threads` row plus one `messages` row (seq=1) holding the 2H messages,
    exactly what a long chat would have left behind (in fewer rows).
    """
    msgs: list[ModelMessage] = history_messages(history)
    body = ModelMessagesTypeAdapter.dump_json(msgs)
    conn = sqlite3.connect(db)
    try:
        with conn:
            for tid in thread_ids:
                conn.execute(
                    "INSERT INTO threads (thread_id, owner, agent, active_run_id, created_at) "
                    "VALUES (?, ?, ?, NULL, ?)",
                    (tid, "local", agent, now),
                )
                conn.execute(
                    "INSERT INTO messages (thread_id, seq, run_id, count, body) VALUES (?, 1, ?, ?, ?)",
                    (tid, "seed", len(msgs), body),
                )
    finally:
        conn.close()


class Counters:
    """SQL seen by SQLAlchemy engines: statements, transactions, fsynced (writing) commits, payload bytes."""

    def __init__(self) -> None:
        self.statements = 0
        self.transactions = 0
        self.write_commits = 0
        self.payload = 0  # bytes of BLOB parameters handed to SQLite (the pydantic-ai anchor's definition)
        self.payload_all = 0  # BLOB + TEXT parameters of INSERT/UPDATE statements

    def snapshot(self) -> tuple[int, int, int, int, int]:
        return (self.statements, self.transactions, self.write_commits, self.payload, self.payload_all)

    def attach(self, sync_engine: Any) -> None:
        @event.listens_for(sync_engine, "before_cursor_execute")
        def _before(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
            head = statement.lstrip()[:6].upper()
            if head.startswith("BEGIN"):
                self.transactions += 1
                conn.info["wrote"] = False
                return
            self.statements += 1
            writing = head in ("INSERT", "UPDATE", "DELETE")
            if writing:
                conn.info["wrote"] = True
            rows = parameters if executemany else [parameters]
            for row in rows:
                values = row.values() if isinstance(row, dict) else row or ()
                for v in values:
                    if not writing:
                        continue
                    if isinstance(v, (bytes, bytearray, memoryview)):
                        self.payload += len(v)
                        self.payload_all += len(v)
                    elif isinstance(v, str):
                        self.payload_all += len(v.encode())

        @event.listens_for(sync_engine, "commit")
        def _commit(conn: Any) -> None:
            if conn.info.get("wrote"):
                self.write_commits += 1
            conn.info["wrote"] = False


def rss_bytes() -> int:
    """Resident set size of this process, from /proc/self/status."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0
