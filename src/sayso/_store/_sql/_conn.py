"""The SQL backend's connections, its read transactions, and the one place database errors become sayso's.

The hot path — every verb the approve cycle uses, and most others — runs constant SQL through
the small transaction interface of `_tx` (stdlib `sqlite3` on SQLite, asyncpg on PostgreSQL).
SQLAlchemy stays for what it does well and what is rare: Alembic's migrations at `open()` and
the listings whose statements depend on their filters (`_listings`). On SQLite those run on a
worker thread through SQLAlchemy's sync engine, in WAL mode with a full fsync per commit;
writers `BEGIN IMMEDIATE` so they queue instead of deadlocking. It is imported only when needed:
opening a SQLite store whose schema is current (the migrations' head, read from their files) and
the hot path never load SQLAlchemy or Alembic, so a short-lived command starts quickly.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import sqlite3
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread

from ..._core.store_urls import StoreUrl, no_folder, store_url
from ...exceptions import ConfigError, SaysoError, SchemaTooNew, StoreError
from . import _fork
from ._postgres import PostgresDatabase, close_on_their_loops, closed_with_the_loop, forget_ended_loops
from ._tx import Database, Sql, SqliteDatabase, Tx, Work

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine
    from sqlalchemy.ext.asyncio import AsyncEngine

T = TypeVar("T")

_MIGRATIONS = Path(__file__).parent.parent / "migrations"

_MIGRATION_LOCK = 7311
"""The PostgreSQL advisory lock that lets one process at a time bring the schema up to date."""


def _database_errors() -> tuple[type[BaseException], ...]:
    """What a database can raise through SQLAlchemy.

    It wraps driver errors, but a refused connection or a failing connect hook surfaces as the
    driver's (or the socket's) own error.
    """
    from sqlalchemy.exc import SQLAlchemyError

    return (SQLAlchemyError, sqlite3.Error, OSError)


def _said(exc: BaseException) -> str:
    """A database error in words: the driver's own message, without SQLAlchemy's statement and web link.

    A socket's error is its reason alone (`Connection refused`), not `[Errno 111] Connect call failed (…)`:
    the store's address is said beside it.
    """
    orig = getattr(exc, "orig", None)
    said = orig if isinstance(orig, BaseException) else exc
    if isinstance(said, OSError) and said.errno is not None:
        return os.strerror(said.errno) if said.errno > 0 else str(said.strerror or said)
    return str(said)


def sqlite_unwritable(store: StoreUrl) -> str | None:
    """Why SQLite could not open its file, where its own `unable to open database file` says nothing of it.

    SQLite writes the file and, beside it, its `-wal` and `-shm` files: a folder where the file should be, or
    a folder it may not write to, stops it (even when the file is there and readable).
    """
    assert store.path is not None
    if store.path.is_dir():
        return f"{str(store.path)!r} is a folder; point the store at a file"
    if not os.access(store.path.parent, os.W_OK):
        return (
            f"sayso may not write in the folder {str(store.path.parent)!r} (read-only, or another user's), where "
            "SQLite keeps the store and its -wal and -shm files; make it writable or point the store elsewhere"
        )
    if store.path.exists() and not os.access(store.path, os.W_OK):
        return f"sayso may not write the file {str(store.path)!r}; make it writable or point the store elsewhere"
    return None


_VERSION = Sql("SELECT version_num FROM alembic_version")
_REVISION = re.compile(r"^(down_revision|revision)\b[^=\n]*=\s*(.+)$", re.M)


@cache
def _revisions() -> tuple[frozenset[str], frozenset[str]]:
    """Every revision the migrations have, and those some revision follows, read from their files.

    Reading the `revision` / `down_revision` lines costs far less than importing Alembic, which
    opening a store whose schema is already current then never needs.
    """
    revisions: set[str] = set()
    below: set[str] = set()
    for path in (_MIGRATIONS / "versions").glob("*.py"):
        for key, value in _REVISION.findall(path.read_text(encoding="utf-8")):
            (revisions if key == "revision" else below).update(re.findall(r"[\"']([^\"']+)[\"']", value))
    return frozenset(revisions), frozenset(below)


def schema_head() -> str | None:
    """The newest revision of the migrations, read from their files (`None` unless there is exactly one head)."""
    revisions, below = _revisions()
    heads = revisions - below
    return next(iter(heads)) if len(heads) == 1 else None


def newer_schema(version: object) -> SchemaTooNew | None:
    """The refusal of a store whose schema is at a revision these migrations do not have: a newer sayso's.

    Migrating it, or working on a schema this sayso does not know, could only corrupt it (a downgrade).
    """
    if version is None or version in _revisions()[0]:
        return None
    return SchemaTooNew(
        f"the store's schema is at revision {version!r}, which this sayso does not know (its newest is "
        f"{schema_head()!r}): a newer sayso migrated this store, and sayso does not migrate a store back; run "
        "that version of sayso or a later one"
    )


_PING = Sql("SELECT 1")

_RETRIES = 8
"""How often one write is tried when PostgreSQL broke a deadlock with it, or another writer kept getting in first."""


def async_url(url: str, *, base_dir: Path | None = None) -> str:
    """Turn a user-facing URL (`sqlite:///x.db`, `postgresql://…`) into the async driver's URL.

    Relative SQLite paths are taken from `base_dir` (the config file's folder), so every
    process pointed at the same config opens the same file wherever it was started.

    Raises:
        ConfigError: sayso takes no store at `url` (`_core.store_urls`).
    """
    return store_url(url, base_dir=base_dir).driver_url


class _SqlConn:
    """Connections, read transactions and error mapping: what reading the store needs, nothing of its writes.

    `_base._SqlBase` adds the write transactions the business verbs run in; a reader that only lists
    (`_inbox.SqlInbox`) stands on this alone, so it never loads the store's primitives or verbs.
    """

    def __init__(self, url: str, *, base_dir: Path | None = None) -> None:
        self.location = store_url(url, base_dir=base_dir)
        """The store the URL names (a SQLite file or a PostgreSQL database)."""
        self.url = self.location.driver_url
        """The async driver's URL of the database."""
        self._engine: AsyncEngine | None = None
        self._loop_engines: dict[asyncio.AbstractEventLoop, tuple[AsyncEngine, AsyncGenerator[None]]] = {}
        """PostgreSQL: the async engine of each loop that queried through SQLAlchemy (the first is `_engine`),
        disposed of with the store or as its loop ends: asyncpg's connections belong to the loop that opened
        them, as in `PostgresDatabase`."""
        self._engine_adopted = False
        """Whether a loop queried through `_engine` (every later loop makes an engine of its own)."""
        self._adopting = threading.Lock()
        self._sync: Engine | None = None
        self._sync_generation = _fork.generation
        self._db: Database | None = None
        self._limiter = anyio.CapacityLimiter(8)

    @property
    def engine(self) -> AsyncEngine:
        """The async engine, for instrumentation; sayso's own verbs never query it."""
        assert self._db is not None, "SqlRunStore.open() was not called"
        return self._sa_engines()

    @property
    def dialect(self) -> str:
        """`sqlite` or `postgresql`."""
        return self.location.backend

    def _sa_engines(self) -> AsyncEngine:
        """SQLAlchemy's engines, made on first use (migrations, listings): the async one, and SQLite's sync one."""
        if self._engine is not None:
            return self._engine
        from sqlalchemy import create_engine
        from sqlalchemy.exc import ArgumentError
        from sqlalchemy.ext.asyncio import create_async_engine

        try:
            engine = create_async_engine(self.url)
        except ImportError as exc:  # asyncpg comes with the `postgres` extra
            raise ConfigError(
                f"the store {self.location.shown!r} needs a driver: pip install 'sayso[postgres]' ({exc})"
            ) from exc
        except (ArgumentError, ValueError) as exc:  # a URL SQLAlchemy cannot parse
            raise ConfigError(f"the store URL {self.location.shown!r} is not valid: {exc}") from exc
        if engine.dialect.name == "sqlite":
            self._sync = create_engine(
                self.url.replace("sqlite+aiosqlite://", "sqlite://", 1), connect_args={"check_same_thread": False}
            )
            _make_sqlite_durable(engine.sync_engine)
            _make_sqlite_durable(self._sync)
        self._engine = engine
        return engine

    async def _open_current(self) -> bool:
        """Open a SQLite file whose schema is already the migrations' head without SQLAlchemy; whether it was."""
        path = self.location.path
        head = schema_head()
        if path is None or head is None or not path.is_file():
            return False
        db = SqliteDatabase(str(path))

        async def version(tx: Tx) -> object:
            row = await tx.one(_VERSION)
            return row["version_num"] if row is not None else None

        try:
            current = await db.read(version) == head
        except db.errors:  # no schema yet, or not a database: the full path says which
            current = False
        if current:
            self._db = db
        else:
            await db.aclose()
        return current

    async def open(self) -> None:
        """Connect and bring the schema up to date."""
        if self._db is not None or await self._open_current():
            return
        path = self.location.path
        if path is not None and not path.parent.is_dir():
            raise StoreError(f"could not open the store: {no_folder(self.location).error()}")
        engine = self._sa_engines()
        db: Database
        if engine.dialect.name == "sqlite":
            db = SqliteDatabase(engine.url.database or "")
        else:
            db = PostgresDatabase("postgresql://" + self.url.split("://", 1)[1])
        try:
            await self._sa_write(_upgrade_schema)
            if isinstance(db, PostgresDatabase):
                try:
                    await db.open()
                except db.errors as exc:
                    raise StoreError(f"database error: {_said(exc)}") from exc
        except StoreError as exc:
            await self.aclose()
            why = sqlite_unwritable(self.location) if path is not None else None
            raise type(exc)(f"could not open the store at {self.location.shown!r}: {why or exc}") from exc
        self._db = db

    async def reach(self) -> None:
        """Connect once and ask for nothing but an answer: no file is created, no schema migrated, nothing written.

        A SQLite file that is not there yet is not made (the first command that opens the store makes it): its
        folder must be one sayso may write in. One that is there is opened as it is (`mode=rw`, never created)
        and read. PostgreSQL is connected to and asked `SELECT 1`.

        Raises:
            StoreError: it cannot be reached or opened, saying why in a line.
        """
        path = self.location.path
        try:
            if path is not None:
                _reach_sqlite(self.location)
                return
            db = PostgresDatabase("postgresql://" + self.url.split("://", 1)[1])
            try:
                await db.open()
                version = await db.read(_version_if_any)
            except db.errors as exc:
                raise StoreError(f"database error: {_said(exc)}") from exc
            finally:
                await db.aclose()
            too_new = newer_schema(version)
            if too_new is not None:
                raise too_new
        except StoreError as exc:
            raise type(exc)(f"could not open the store at {self.location.shown!r}: {exc}") from exc

    async def aclose(self) -> None:
        """Release every connection; the store can be opened again."""
        if self._db is not None:
            await self._db.aclose()
            self._db = None
        if self._engine is not None:
            engine, engines, adopted = self._engine, self._loop_engines, self._engine_adopted
            self._engine, self._loop_engines, self._engine_adopted = None, {}, False
            if not adopted:  # no loop queried through it: its keeper (`_loop_engine`) never began
                await engine.dispose()
            await close_on_their_loops(engines)
        if self._sync is not None:
            self._sync.dispose()
            self._sync = None

    async def ping(self) -> None:
        """Check that the store answers.

        Raises:
            StoreError: it does not.
        """
        try:
            await self._raw_read(_answer)
        except StoreError as exc:
            raise StoreError(f"the store does not answer: {exc}") from exc

    async def _raw_read(self, work: Work[T]) -> T:
        """Run `work` on the driver's transaction without writing."""
        db = self._database()
        return await self._mapped(db, lambda: db.read(work), None)

    def _database(self) -> Database:
        assert self._db is not None, "SqlRunStore.open() was not called"
        return self._db

    @staticmethod
    async def _mapped(db: Database, attempt: Callable[[], Awaitable[T]], race: Callable[[], Awaitable[T]] | None) -> T:
        """The one place driver errors become sayso's: expected races go to `race`, the rest are `StoreError`.

        sayso's own errors, raised by the work to refuse a step (some share a builtin base with the
        driver's, such as `PermissionError`), pass through unchanged. A transaction PostgreSQL
        rolled back to break a deadlock (or a serialization failure) is run again from the
        start, and `race` runs again when yet another writer got in first meanwhile: racers
        get their result or sayso's conflict, never the database's own error.
        """
        step = attempt
        problem: BaseException | None = None
        for tries in range(_RETRIES):
            try:
                return await step()
            except SaysoError:
                raise
            except db.retry_errors as exc:
                problem = exc
                await anyio.sleep(random.uniform(0, 0.01 * (tries + 1)))  # the other side goes first
            except db.integrity_errors as exc:
                if race is None:
                    raise StoreError(f"database error: {exc}") from exc
                problem, step = exc, race
            except db.errors as exc:
                raise StoreError(f"database error: {_said(exc)}") from exc
        raise StoreError(f"database error: {problem} (after {_RETRIES} attempts)") from problem

    # SQLAlchemy (migrations and listings)

    async def _sa_write(self, work: Callable[[Connection], T], *, race: Callable[[Connection], T] | None = None) -> T:
        """Run `work` in one SQLAlchemy write transaction (see `_write` for `race`)."""
        return await self._sa_transaction(work, read=False, race=race)

    async def _sa_read(self, work: Callable[[Connection], T]) -> T:
        """Run `work` in a SQLAlchemy read-only transaction: a consistent snapshot that takes no write lock."""
        return await self._sa_transaction(work, read=True, race=None)

    async def _sa_transaction(
        self, work: Callable[[Connection], T], *, read: bool, race: Callable[[Connection], T] | None
    ) -> T:
        from sqlalchemy.exc import IntegrityError

        errors = _database_errors()
        try:
            return await self._sa_attempt(work, read=read)
        except IntegrityError as exc:
            if race is None:
                raise StoreError(f"database error: {exc.orig}") from exc
        except errors as exc:
            raise StoreError(f"database error: {_said(exc)}") from exc
        try:
            return await self._sa_attempt(race, read=False)
        except errors as exc:
            raise StoreError(f"database error: {_said(exc)}") from exc

    async def _sa_attempt(self, work: Callable[[Connection], T], *, read: bool) -> T:
        engine = self._sa_engines()
        if self._sync is not None:
            if self._sync_generation != _fork.generation:  # a forked child: the pool's connections are the parent's
                self._sync.dispose(close=False)
                self._sync_generation = _fork.generation
            return await anyio.to_thread.run_sync(self._in_thread, work, read, limiter=self._limiter)
        async with (await self._loop_engine(engine)).connect() as conn:
            async with conn.begin():
                return await conn.run_sync(work)

    async def _loop_engine(self, engine: AsyncEngine) -> AsyncEngine:
        """The running loop's async engine: `engine` for the first loop to query, a new one for each other."""
        loop = asyncio.get_running_loop()
        if (held := self._loop_engines.get(loop)) is not None:
            return held[0]
        from sqlalchemy.ext.asyncio import create_async_engine

        with self._adopting:  # of two loops on two threads using it first at once, one takes `engine`
            first, self._engine_adopted = not self._engine_adopted, True
        mine = engine if first else create_async_engine(self.url)
        forget_ended_loops(self._loop_engines)
        self._loop_engines[loop] = (mine, await closed_with_the_loop(mine.dispose))
        return mine

    def _in_thread(self, work: Callable[[Connection], T], read: bool) -> T:
        assert self._sync is not None
        with _fork.in_sqlite(), self._sync.connect() as conn:
            if read:
                conn.execution_options(sayso_read=True)
            with conn.begin():
                return work(conn)


async def _answer(tx: Tx) -> None:
    await tx.one(_PING)


_HAS_VERSION = Sql("SELECT to_regclass('alembic_version') IS NOT NULL AS there")


async def _version_if_any(tx: Tx) -> object:
    """The schema's revision on PostgreSQL; `None` on a database sayso has not opened yet."""
    there = await tx.one(_HAS_VERSION)
    if there is not None and there["there"]:
        row = await tx.one(_VERSION)
        return row["version_num"] if row is not None else None
    return None


def _reach_sqlite(store: StoreUrl) -> None:
    """`_SqlConn.reach` on SQLite: the file's folder writable, and the file, if it is there, a database."""
    assert store.path is not None
    why = sqlite_unwritable(store)
    if why is not None:
        raise StoreError(why)
    if not store.path.exists():
        return
    try:
        conn = sqlite3.connect(f"{store.path.resolve().as_uri()}?mode=rw", uri=True)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            there = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'alembic_version'").fetchone()
            version = conn.execute("SELECT version_num FROM alembic_version").fetchone() if there else None
        finally:
            conn.close()
    except sqlite3.Error as exc:  # `file is not a database`, say
        raise StoreError(
            f"database error: {exc}; point the store at sayso's SQLite file, or at one not there yet"
        ) from exc
    too_new = newer_schema(version[0] if version else None)
    if too_new is not None:
        raise too_new


def _make_sqlite_durable(engine: Engine) -> None:
    """WAL with a full fsync per commit; writers `BEGIN IMMEDIATE` so they queue instead of deadlocking."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA busy_timeout=10000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get("sayso_read") else "BEGIN IMMEDIATE")


def _upgrade_schema(conn: Connection) -> None:
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from alembic.util.exc import CommandError
    from sqlalchemy import text

    if conn.dialect.name == "postgresql":
        # Replicas started together migrate one at a time: the others wait, then find the schema current.
        conn.execute(text(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})"))
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    current = MigrationContext.configure(conn).get_current_revision()
    if current == head:
        return
    too_new = newer_schema(current)
    if too_new is not None:
        raise too_new
    config.attributes["connection"] = conn
    try:
        command.upgrade(config, "head")
    except CommandError as exc:  # say, a database migrated by a newer sayso than this one
        raise StoreError(f"cannot migrate the schema: {exc}") from exc
