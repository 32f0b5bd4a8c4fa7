"""Shared pieces of the sayso side of the benchmarks.

The workload text (prior turns, the user request, the tool result and the final answer) and
the scripted model come from the pydantic-ai anchor itself, so all three implementations
carry byte-for-byte the same conversation.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
import tempfile
from collections.abc import Iterable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "anchors"))

from pydantic_ai.messages import ModelMessage
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

from sayso import Config
from sayso._store._messages import encode_messages

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
    """A fresh config (with its own model object) for one Sayso instance: nothing is shared between instances.

    `db` is a SQLite file, or a `postgresql://` URL.
    """
    return Config.model_validate(
        {
            "store": db if db.startswith("postgresql://") else f"sqlite:///{db}",
            "agents": {
                "bench": {
                    "model": FunctionModel(scripted_model),
                    "tools": [delete_file],
                    "interrupt": {"tools": ["delete_file"]},
                    # The anchors' agents hold the one tool: sayso's built-in `ask_user` would add a second
                    # tool definition to every model request and every tool listing of the cycle.
                    "ask_user": False,
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
    body = encode_messages(msgs)  # as sayso writes a segment
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


def seed_rows(thread_ids: Iterable[str], history: int, *, agent: str = "bench", now: float = 0.0) -> list[tuple]:
    """The `threads` and `messages` rows `seed_threads` writes, for any database: (thread, message) pairs."""
    msgs: list[ModelMessage] = history_messages(history)
    body = encode_messages(msgs)
    return [((tid, "local", agent, None, now), (tid, 1, "seed", len(msgs), body)) for tid in thread_ids]


class Counters:
    """SQL as the stdlib `sqlite3` driver runs it: statements, transactions, fsynced commits, payload bytes.

    `attach_all()` makes every `sqlite3` connection opened in this process report each statement it
    runs (`set_trace_callback`, which sees the statement with its parameters expanded), whatever
    layer issued it: sayso's own transactions, SQLAlchemy, Alembic. A commit counts as fsynced
    when its transaction wrote and the connection's `synchronous` level was FULL or EXTRA (in WAL
    mode a NORMAL commit does not fsync). Counting costs a Python call per statement, so the
    benchmark counts over a few dedicated cycles and times others with `detach_all()` in force.
    """

    _BLOB = re.compile(r"x'([0-9A-Fa-f]*)'")
    _TEXT = re.compile(r"'((?:[^']|'')*)'")

    def __init__(self) -> None:
        self.statements = 0
        self.transactions = 0
        self.write_commits = 0  # commits of transactions that wrote (any synchronous level)
        self.fsynced_commits = 0  # ... of those, the ones made with synchronous FULL/EXTRA
        self.payload = 0  # bytes of BLOB parameters handed to SQLite (the pydantic-ai anchor's definition)
        self.payload_all = 0  # BLOB + TEXT parameters of INSERT/UPDATE statements
        self.enabled = False
        self._conns: list[sqlite3.Connection] = []  # sqlite3 connections take no weak references

    def snapshot(self) -> tuple[int, int, int, int, int, int]:
        return (
            self.statements,
            self.transactions,
            self.write_commits,
            self.payload,
            self.payload_all,
            self.fsynced_commits,
        )

    def attach_all(self) -> None:
        """Count the statements of every `sqlite3` connection this process opens from now on."""
        original = sqlite3.connect

        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = original(*args, **kwargs)
            self._conns.append(conn)
            if self.enabled:
                conn.set_trace_callback(self._tracer())
            return conn

        # process globals of the benchmark only; SQLAlchemy and aiosqlite reach the driver through `dbapi2`
        sqlite3.connect = connect  # type: ignore[assignment]
        sqlite3.dbapi2.connect = connect  # type: ignore[assignment]

    def enable(self) -> None:
        """Count from now on (between cycles: no connection is in a transaction)."""
        self.enabled = True
        for conn in self._conns:
            try:
                level = conn.execute("PRAGMA synchronous").fetchone()[0]
                conn.set_trace_callback(self._tracer(level))
            except sqlite3.ProgrammingError:  # closed meanwhile
                pass

    def disable(self) -> None:
        self.enabled = False
        for conn in self._conns:
            try:
                conn.set_trace_callback(None)
            except sqlite3.ProgrammingError:  # closed meanwhile
                pass

    def _tracer(self, level: int = 2) -> Any:
        state = {"wrote": False, "sync": level}

        def trace(statement: str) -> None:
            head = statement.lstrip()[:8].upper()
            if head.startswith("BEGIN"):
                self.transactions += 1
                state["wrote"] = False
                return
            if head.startswith(("COMMIT", "END")):
                if state["wrote"]:
                    self.write_commits += 1
                    if state["sync"] >= 2:
                        self.fsynced_commits += 1
                state["wrote"] = False
                return
            if head.startswith("ROLLBACK"):
                state["wrote"] = False
                return
            self.statements += 1
            if head.startswith("PRAGMA"):
                low = statement.lower().replace(" ", "")
                if "synchronous=" in low:
                    value = low.split("synchronous=", 1)[1].strip(";")
                    state["sync"] = {"off": 0, "normal": 1, "full": 2, "extra": 3}.get(value, 0)
                    if value.isdigit():
                        state["sync"] = int(value)
                return
            if head.startswith(("INSERT", "UPDATE", "DELETE", "REPLACE")):
                state["wrote"] = True
                blobs = sum(len(m) // 2 for m in self._BLOB.findall(statement))
                rest = self._BLOB.sub("", statement)
                texts = sum(len(m.replace("''", "'").encode()) for m in self._TEXT.findall(rest))
                self.payload += blobs
                self.payload_all += blobs + texts

        return trace


def rss_bytes() -> int:
    """Resident set size of this process, from /proc/self/status."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0
