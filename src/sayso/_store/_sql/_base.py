"""The SQL backend's engine, its transactions, and the one place database errors become sayso's.

Every verb of `SqlRunStore` is one short transaction run through `_SqlBase._transaction`. On
SQLite the whole transaction runs on a worker thread through the stdlib driver (one thread hop
per transaction instead of one per statement through aiosqlite), in WAL mode with a full fsync
per commit, and writers `BEGIN IMMEDIATE` so they queue instead of deadlocking. On PostgreSQL
it runs through asyncpg on the async engine.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import ArgumentError, IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from ...exceptions import ConfigError, StoreError
from .._port import RunStore

T = TypeVar("T")

_MIGRATIONS = Path(__file__).parent.parent / "migrations"

_DATABASE_ERRORS: tuple[type[BaseException], ...] = (SQLAlchemyError, sqlite3.Error, OSError)
"""What a database can raise: SQLAlchemy wraps driver errors, but a refused connection or a failing
connect hook surfaces as the driver's (or the socket's) own error."""


def async_url(url: str, *, base_dir: Path | None = None) -> str:
    """Turn a user-facing URL (`sqlite:///x.db`, `postgresql://…`) into the async driver's URL.

    Relative SQLite paths are taken from `base_dir` (the config file's folder), so every
    process pointed at the same config opens the same file wherever it was started.
    """
    if url.startswith("sqlite"):
        _, _, path = url.partition(":///")
        if path and path != ":memory:" and base_dir is not None and not Path(path).is_absolute():
            path = str((base_dir / path).resolve())
        return f"sqlite+aiosqlite:///{path}"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+asyncpg://" + url.split("://", 1)[1]
    return url


class _SqlBase(RunStore):
    """Engine, transactions and error mapping; the verbs live in the mixins beside this module."""

    def __init__(self, url: str, *, base_dir: Path | None = None) -> None:
        self.url = async_url(url, base_dir=base_dir)
        """The async driver's URL of the database."""
        self._engine: AsyncEngine | None = None
        self._sync: Engine | None = None
        self._limiter = anyio.CapacityLimiter(8)

    @property
    def engine(self) -> AsyncEngine:
        """The async engine, for instrumentation (the benchmark counts statements on it); sayso never queries it."""
        assert self._engine is not None, "SqlRunStore.open() was not called"
        return self._engine

    async def open(self) -> None:
        """Connect and bring the schema up to date."""
        if self._engine is not None:
            return
        try:
            engine = create_async_engine(self.url)
        except ImportError as exc:  # asyncpg comes with the `postgres` extra
            raise ConfigError(f"the store {self.url!r} needs a driver: pip install 'sayso[postgres]' ({exc})") from exc
        except (ArgumentError, ValueError) as exc:  # a URL SQLAlchemy cannot parse
            raise ConfigError(f"the store URL {self.url!r} is not valid: {exc}") from exc
        if engine.dialect.name == "sqlite":
            self._sync = create_engine(
                self.url.replace("sqlite+aiosqlite://", "sqlite://", 1), connect_args={"check_same_thread": False}
            )
            _make_sqlite_durable(engine.sync_engine)
            _make_sqlite_durable(self._sync)
        self._engine = engine
        try:
            await self._write(_upgrade_schema)
        except StoreError as exc:
            await self.aclose()
            raise StoreError(f"could not open the store at {self.url!r}: {exc}") from exc

    async def aclose(self) -> None:
        """Release the engines' connections; the store can be opened again."""
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None
        if self._sync is not None:
            self._sync.dispose()
            self._sync = None

    async def ping(self) -> None:
        """Check that the store answers.

        Raises:
            StoreError: it does not.
        """

        def work(conn: Connection) -> None:
            conn.execute(sa.text("SELECT 1"))

        try:
            await self._read(work)
        except StoreError as exc:
            raise StoreError(f"the store does not answer: {exc}") from exc

    async def _write(
        self, work: Callable[[Connection], T], *, race: Callable[[Connection], T] | None = None, durable: bool = True
    ) -> T:
        """Run `work` in one write transaction: committed when it returns, rolled back when it raises.

        `race` answers instead when a concurrent writer inserted the same key first, which can
        happen only where writers do not queue (PostgreSQL): it runs in a fresh transaction and
        returns the winner's state, redoes the step, or raises the conflict.

        `durable=False` commits without waiting for the disk (SQLite `synchronous=NORMAL`,
        PostgreSQL `synchronous_commit=off`): the commit survives a crash of the process, and the
        next durable commit makes it durable too, since both databases write their log in order.
        """
        if not durable:
            work = _lazily(work)
            race = _lazily(race) if race is not None else None
        return await self._transaction(work, read=False, race=race)

    async def _read(self, work: Callable[[Connection], T]) -> T:
        """Run `work` in a read-only transaction: a consistent snapshot that takes no write lock."""
        return await self._transaction(work, read=True, race=None)

    async def _transaction(
        self, work: Callable[[Connection], T], *, read: bool, race: Callable[[Connection], T] | None
    ) -> T:
        """The one place database errors become sayso's: expected races go to `race`, the rest are `StoreError`."""
        try:
            return await self._attempt(work, read=read)
        except IntegrityError as exc:
            if race is None:
                raise StoreError(f"database error: {exc.orig}") from exc
        except _DATABASE_ERRORS as exc:
            raise StoreError(f"database error: {exc}") from exc
        try:
            return await self._attempt(race, read=False)
        except _DATABASE_ERRORS as exc:
            raise StoreError(f"database error: {exc}") from exc

    async def _attempt(self, work: Callable[[Connection], T], *, read: bool) -> T:
        if self._sync is not None:
            return await anyio.to_thread.run_sync(self._in_thread, work, read, limiter=self._limiter)
        async with self.engine.connect() as conn:
            async with conn.begin():
                return await conn.run_sync(work)

    def _in_thread(self, work: Callable[[Connection], T], read: bool) -> T:
        assert self._sync is not None
        with self._sync.connect() as conn:
            if read:
                conn.execution_options(sayso_read=True)
            lazy = getattr(work, _LAZY, False)
            if lazy:
                # Set outside the transaction, on the driver's connection (SQLAlchemy would begin one).
                conn.connection.driver_connection.execute("PRAGMA synchronous=NORMAL")  # type: ignore[union-attr]  # sqlite3
            try:
                with conn.begin():
                    return work(conn)
            finally:
                if lazy:
                    conn.connection.driver_connection.execute("PRAGMA synchronous=FULL")  # type: ignore[union-attr]  # sqlite3


_LAZY = "_sayso_lazy_commit"
"""Marks a transaction's work as committed without waiting for the disk (see `_SqlBase._write`)."""


def _lazily(work: Callable[[Connection], T]) -> Callable[[Connection], T]:
    """`work` in a transaction whose commit does not wait for the disk."""

    def lazy(conn: Connection) -> T:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
        return work(conn)

    setattr(lazy, _LAZY, True)
    return lazy


def _make_sqlite_durable(engine: Engine) -> None:
    """WAL with a full fsync per commit; writers `BEGIN IMMEDIATE` so they queue instead of deadlocking."""

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

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    if MigrationContext.configure(conn).get_current_revision() == head:
        return
    config.attributes["connection"] = conn
    try:
        command.upgrade(config, "head")
    except CommandError as exc:  # say, a database migrated by a newer sayso than this one
        raise StoreError(f"cannot migrate the schema: {exc}") from exc
