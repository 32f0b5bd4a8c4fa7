"""The small transaction interface the SQL verbs are written against, and its SQLite driver.

A verb's work is an `async def work(tx)` that runs constant statements (`Sql`, with named
parameters) through `tx`, so the same work runs on both databases:

- **SQLite**: each statement runs synchronously on a stdlib `sqlite3` connection, so the work never
  suspends and one call drives the whole transaction to its end. It runs inline on the event loop
  (WAL readers never wait for writers; the loop's writes take turns, and one that finds SQLite's
  lock held by another process waits for it on the database's writer thread, not in SQLite's busy
  handler on the loop). A durable write's commit, which fsyncs, goes to the database's committer
  thread in one hop: in one call into SQLite, which releases the interpreter's lock throughout. A
  write's statements on a thread instead would each hand the interpreter's lock back and forth
  with a busy loop, and wait for it up to the switch interval every time (bench/ANALYSIS.md).
- **PostgreSQL** (`_postgres`): the work awaits asyncpg (a pool per event loop: a connection
  belongs to the loop that opened it), whose statement cache prepares each constant statement once per pooled
  connection. Writes whose outcome nobody reads (`Tx.later`) wait and go together, as one
  statement, before the next statement that reads or counts, or before the commit: a round trip
  is the cost that matters there, not the statement.

SQLAlchemy is not on this path: it builds the schema (Alembic) and the listings whose
statements depend on their filters.
"""

from __future__ import annotations

import asyncio
import functools
import re
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar

import anyio

from ..._core.audit import AuditHead, AuditKey
from . import _fork
from ._checkpoint import Checkpointer
from ._writer import WriterThread

T = TypeVar("T")

Params = Mapping[str, Any]
"""Named parameters of a statement (`:name` in its text)."""

NO_PARAMS: Params = {}


class Row(Protocol):
    """A result row, read by column name (`sqlite3.Row` and asyncpg's `Record` both are)."""

    def __getitem__(self, key: str, /) -> Any: ...


class Sql:
    """A constant statement with named parameters (`:name`), rendered once for each driver.

    `pg` replaces the text on PostgreSQL where the dialects differ; both use the same names.
    """

    __slots__ = ("names", "pg_source", "pg_text", "text")

    def __init__(self, text: str, *, pg: str | None = None) -> None:
        self.text = text
        self.pg_source = pg if pg is not None else text
        """The PostgreSQL text with its named parameters, from which combined statements are built."""
        numbers: dict[str, int] = {}  # a combined write has thousands of names: one lookup each, not a scan

        def number(match: re.Match[str]) -> str:
            return f"${numbers.setdefault(match.group(1), len(numbers) + 1)}"

        self.pg_text = _NAMED.sub(number, pg if pg is not None else text)
        self.names = tuple(numbers)

    def __repr__(self) -> str:
        return f"Sql({self.text!r})"


_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class Tx(ABC):
    """One open transaction: run statements, read rows. Never held beyond the work it was given to."""

    dialect: Literal["sqlite", "postgresql"]
    audit_key: AuditKey | None = None
    """The key audit records appended in this transaction are signed with (the store sets it on each write)."""
    audit_head: AuditHead | None = None
    """The audit chain's head after this transaction's appends; the store announces it once the commit is done."""

    @abstractmethod
    async def one(self, sql: Sql, params: Params = NO_PARAMS) -> Row | None:
        """The first row the statement returns, or `None`."""

    @abstractmethod
    async def all(self, sql: Sql, params: Params = NO_PARAMS) -> list[Row]:
        """Every row the statement returns."""

    @abstractmethod
    async def run(self, sql: Sql, params: Params = NO_PARAMS) -> int:
        """Run a statement that returns no rows; how many rows it changed."""

    @abstractmethod
    async def many(self, sql: Sql, rows: Sequence[Params]) -> None:
        """Run a statement once per set of parameters."""

    @abstractmethod
    async def later(self, sql: Sql, rows: Sequence[Params]) -> None:
        """Run a write whose outcome nobody reads (no rows, no row count), once per set of parameters.

        It may be sent together with the writes queued after it, before the transaction's next
        statement that reads or counts (or before its commit): on PostgreSQL consecutive such writes
        are one statement and one round trip. Writes queued together must not read what another of
        them writes (PostgreSQL runs them on one snapshot): an audit row and its head, a decision
        and its request's status, yes; two appends to one thread's messages, no.
        """


Work = Callable[[Tx], Coroutine[Any, Any, T]]
"""What a verb does inside one transaction."""


class Database(ABC):
    """Runs work in transactions on one database."""

    integrity_errors: tuple[type[BaseException], ...]
    """Errors that mean a concurrent writer inserted the same key first."""
    errors: tuple[type[BaseException], ...]
    """Every error the database or its connection can raise."""
    retry_errors: tuple[type[BaseException], ...] = ()
    """Errors after which the whole transaction, rolled back by the database, may simply run again."""

    @abstractmethod
    async def read(self, work: Work[T]) -> T:
        """Run `work` without writing; it sees committed data only."""

    @abstractmethod
    async def write(self, work: Work[T], *, durable: bool = True) -> T:
        """Run `work` in one write transaction, committed when it returns and rolled back when it raises.

        `durable=False` commits without waiting for the disk: the change is safe from a crash of
        the process, and reaches the disk with the next durable commit (the log is written in
        order); only a crash of the machine before then loses it.
        """

    @abstractmethod
    async def aclose(self) -> None:
        """Close every connection."""


# SQLite


class _SqliteTx(Tx):
    dialect: Literal["sqlite", "postgresql"] = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def one(self, sql: Sql, params: Params = NO_PARAMS) -> Row | None:
        row: Row | None = self.conn.execute(sql.text, params).fetchone()
        return row

    async def all(self, sql: Sql, params: Params = NO_PARAMS) -> list[Row]:
        return self.conn.execute(sql.text, params).fetchall()

    async def run(self, sql: Sql, params: Params = NO_PARAMS) -> int:
        return self.conn.execute(sql.text, params).rowcount

    async def many(self, sql: Sql, rows: Sequence[Params]) -> None:
        self.conn.executemany(sql.text, rows)

    async def later(self, sql: Sql, rows: Sequence[Params]) -> None:
        self.conn.executemany(sql.text, rows)  # no round trip to save: SQLite runs in this process


def complete(work: Coroutine[Any, Any, T]) -> T:
    """Drive work that never suspends (SQLite's) to its end in this thread, in one call."""
    try:
        work.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    work.close()
    raise AssertionError("SQLite work awaited something other than its transaction")


class SqliteDatabase(Database):
    """Pooled stdlib connections to one SQLite file: WAL, a full fsync per durable commit.

    Reads run inline on the event loop (one connection serves all of a thread's: the loop is one
    thread and SQLite work never suspends; a store shared by loops on two threads reads on two). A
    write runs its statements inline too, when nothing else holds SQLite's write lock (it never
    waits for it on the loop), one at a time per loop; a durable one then
    hands its commit, which fsyncs, to the database's committer thread, so the fsync never blocks the
    loop and the thread's one call into SQLite is all that waits for the interpreter's lock. A write
    that finds the lock held (by another process) takes the writer thread, where writers queue in
    order instead of in SQLite's busy handler.
    """

    integrity_errors = (sqlite3.IntegrityError,)
    errors = (sqlite3.Error, OSError)

    def __init__(self, path: str) -> None:
        self.path = path
        self._readers: dict[int, sqlite3.Connection] = {}
        """The read connections, by thread: a transaction on one belongs to the thread that began it."""
        self._inline: dict[bool, sqlite3.Connection] = {}
        """The loop's write connections, by `durable`: a full fsync per commit, or none."""
        self._idle: list[sqlite3.Connection] = []
        self._turn: tuple[asyncio.AbstractEventLoop, anyio.Lock] | None = None
        """The loop's writes one at a time: one holds SQLite's lock from its statements to its commit."""
        self._owner = threading.Lock()
        """Held by the loop whose write is on the loop's connections, from its statements to its commit."""
        self._writer = WriterThread("sayso-sqlite-writer")  # writes queue here, not in SQLite's busy handler
        self._committer = WriterThread("sayso-sqlite-commit")  # never waits for the lock: it holds it
        self._checkpoints = Checkpointer(path)  # the log copied into the file off the writers' path
        self._generation = _fork.generation

    def _forked(self) -> None:
        """In a child process: leave the parent's connections alone (SQLite forbids using them here)."""
        _fork.abandon(*self._readers.values(), *self._inline.values(), *self._idle)
        self._readers = {}
        self._inline = {}
        self._idle = []
        self._turn = None
        self._generation = _fork.generation

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA wal_autocheckpoint=0")  # no commit pays a checkpoint: the checkpointer's thread does
        return conn

    async def read(self, work: Work[T]) -> T:
        if self._generation != _fork.generation:
            self._forked()
        with _fork.in_sqlite():
            thread = threading.get_ident()
            conn = self._readers.get(thread)
            if conn is None:
                conn = self._readers[thread] = self._connect()
            conn.execute("BEGIN")
            try:
                return complete(work(_SqliteTx(conn)))
            finally:
                conn.execute("COMMIT")

    async def write(self, work: Work[T], *, durable: bool = True) -> T:
        if self._generation != _fork.generation:
            self._forked()
        try:
            async with self._loop_turn():
                if self._owner.acquire(blocking=False):  # not another thread's loop, amid a write of its own
                    try:
                        conn = self._begin_inline(durable)
                        if conn is not None:
                            return await self._write_inline(conn, work, durable)
                    finally:
                        self._owner.release()
            job = functools.partial(self._write, work, durable)
            with anyio.CancelScope(shield=True):  # the transaction runs to its end either way: wait for its outcome
                result = await self._writer.run(job)
            return result
        finally:
            self._checkpoints.wrote()

    def _loop_turn(self) -> anyio.Lock:
        loop = asyncio.get_running_loop()
        if self._turn is None or self._turn[0] is not loop:
            self._turn = (loop, anyio.Lock(fast_acquire=True))  # a free lock is taken without a yield
        return self._turn[1]

    def _begin_inline(self, durable: bool) -> sqlite3.Connection | None:
        """The loop's connection in a write transaction just begun, or `None` if another writer holds the lock."""
        with _fork.in_sqlite():
            conn = self._inline.get(durable)
            if conn is None:
                conn = self._connect()
                if not durable:
                    conn.execute("PRAGMA synchronous=NORMAL")  # WAL: the commit writes the log, fsyncs nothing
                conn.execute("PRAGMA busy_timeout=0")  # never wait on the event loop
                self._inline[durable] = conn
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode == sqlite3.SQLITE_BUSY:
                    return None  # another writer holds the lock: wait for it on the writer thread
                raise
            return conn

    async def _write_inline(self, conn: sqlite3.Connection, work: Work[T], durable: bool) -> T:
        try:
            with _fork.in_sqlite():
                if not durable:
                    return _finish(conn, work)
                result = _run(conn, work)
            with anyio.CancelScope(shield=True):  # the commit runs to its end either way: wait for its outcome
                await self._committer.run(functools.partial(_commit_here, conn))
        except sqlite3.Error:
            with _fork.in_sqlite():
                conn.close()  # a connection in an unknown state is not used again
            self._inline.pop(durable, None)
            raise
        return result

    def _write(self, work: Work[T], durable: bool) -> T:
        with _fork.in_sqlite():
            return self._write_here(work, durable)

    def _write_here(self, work: Work[T], durable: bool) -> T:
        conn = self._idle.pop() if self._idle else self._connect()
        try:
            if not durable:
                conn.execute("PRAGMA synchronous=NORMAL")
            try:
                conn.execute("BEGIN IMMEDIATE")
                result = _finish(conn, work)
            finally:
                if not durable:
                    conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error:
            conn.close()  # a connection in an unknown state is not pooled again
            raise
        except BaseException:
            self._idle.append(conn)
            raise
        self._idle.append(conn)
        return result

    async def aclose(self) -> None:
        self._writer.stop()
        self._committer.stop()
        self._checkpoints.stop()
        if self._generation != _fork.generation:
            self._forked()
        with _fork.in_sqlite():
            for conn in [*self._idle, *self._inline.values(), *self._readers.values()]:
                conn.close()
        self._idle.clear()
        self._inline.clear()
        self._readers.clear()


def _finish(conn: sqlite3.Connection, work: Work[T]) -> T:
    """Run `work` in the transaction just begun on `conn`; commit, or roll back and raise."""
    result = _run(conn, work)
    _commit(conn)
    return result


def _run(conn: sqlite3.Connection, work: Work[T]) -> T:
    """Run `work` in the transaction just begun on `conn`, left open; roll back and raise if it fails."""
    try:
        return complete(work(_SqliteTx(conn)))
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _commit(conn: sqlite3.Connection) -> None:
    """Commit the transaction open on `conn`, or roll it back and raise."""
    try:
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _commit_here(conn: sqlite3.Connection) -> None:
    """`_commit`, in a thread's own stretch of SQLite calls (a fork waits for it)."""
    with _fork.in_sqlite():
        _commit(conn)
