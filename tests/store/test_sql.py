"""What only the SQL backend does: choosing a store from a URL, migrating old databases, mapping database errors."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import signal
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from sayso._store import RunStart, SqlRunStore, async_url, store_from_url
from sayso._store._sql import _chain, _rows
from sayso._store._sql._conn import schema_head
from sayso._store._sql._listings import thread_listing
from sayso._store._sql._rows import EXPIRED_RUNS
from sayso._store._sql._runs import lapsed_runs_query, stalled_runs_query
from sayso._store._sql._top_runs import top_runs_count, top_runs_listing
from sayso._store._sql._tx import Sql, Tx
from sayso.exceptions import ConfigError, SchemaTooNew, StoreError
from tests.tools import missing

from .conftest import DSN, postgres_database

MIGRATIONS = Path(__file__).resolve().parents[2] / "src" / "sayso" / "_store" / "migrations"


def test_the_url_picks_the_backend(tmp_path: Path) -> None:
    """SQLite and PostgreSQL URLs are the SQL store; anything else (`memory://` too) is refused."""
    sqlite_store = store_from_url("sqlite:///data/sayso.db", base_dir=tmp_path)
    assert isinstance(sqlite_store, SqlRunStore)
    assert sqlite_store.url == f"sqlite+aiosqlite:///{tmp_path / 'data' / 'sayso.db'}"
    postgres_store = store_from_url("postgres://u@h:5432/db")
    assert isinstance(postgres_store, SqlRunStore) and postgres_store.url == "postgresql+asyncpg://u@h:5432/db"
    with pytest.raises(ConfigError, match="mysql"):
        store_from_url("mysql://u@h/db")
    with pytest.raises(ConfigError, match="'memory' is neither"):
        store_from_url("memory://")


async def test_a_store_that_cannot_open_says_where(tmp_path: Path) -> None:
    """A database that cannot be opened is a `StoreError` naming its URL, and the store can be opened again later."""
    store = SqlRunStore(f"sqlite:///{tmp_path / 'missing' / 'dir' / 'sayso.db'}")
    with pytest.raises(StoreError, match="could not open the store"):
        await store.open()
    (tmp_path / "missing" / "dir").mkdir(parents=True)
    async with store:
        await store.ping()


async def test_a_refused_connection_is_a_store_error() -> None:
    """An unreachable PostgreSQL server surfaces as `StoreError`, not as a socket error."""
    with pytest.raises(StoreError):
        await SqlRunStore("postgresql://postgres@127.0.0.1:1/postgres").open()


async def test_a_bad_url_is_a_config_error() -> None:
    """A URL SQLAlchemy cannot parse is the operator's to fix."""
    with pytest.raises(ConfigError):
        await SqlRunStore("postgresql://u@h:notaport/db").open()


async def test_ping_fails_once_the_database_is_gone() -> None:
    """`ping` raises `StoreError` when the database stops answering."""
    import asyncpg

    if DSN is None:
        missing("TEST_POSTGRES_DSN is not set (scripts/test sets it)")
    name = f"sayso_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(DSN)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        async with SqlRunStore(DSN.rsplit("/", 1)[0] + f"/{name}") as store:
            await store.ping()
            await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            with pytest.raises(StoreError, match="does not answer"):
                await store.ping()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


# migrations


async def _migrate(url: str, revision: str) -> None:
    """Bring a database to one schema revision, as an older sayso would have left it, with two activation rows."""
    from alembic import command
    from alembic.config import Config

    def upgrade(conn: sa.Connection) -> None:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
        conn.execute(
            sa.text("INSERT INTO a2a_pauses (run_id, pause_id, activated) VALUES (:r, :p, :a)"),
            [{"r": "run_1", "p": "pau_1", "a": False}, {"r": "run_2", "p": "pau_2", "a": True}],
        )

    engine = create_async_engine(async_url(url))
    try:
        async with engine.begin() as conn:
            await conn.run_sync(upgrade)
    finally:
        await engine.dispose()


def test_the_head_read_from_the_migration_files_is_alembics() -> None:
    """A SQLite store whose version is the migrations' head opens without Alembic: that head, read from the
    migration files, is the one Alembic computes."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert schema_head() == ScriptDirectory.from_config(config).get_current_head() is not None


@pytest.fixture(params=["sqlite", "postgres"])
async def old_database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database at revision 0005 holding two A2A activation rows."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'old.db'}"
        await _migrate(url, "0005")
        yield url
    else:
        async with postgres_database() as url:
            await _migrate(url, "0005")
            yield url


async def test_activation_marks_move_to_the_marks_table(old_database: str) -> None:
    """Opening a 0005 database moves `a2a_pauses` rows into marks under `a2a.activation` and drops the old table."""
    async with SqlRunStore(old_database) as store:
        assert json.loads(await store.get_mark("a2a.activation", "run_1") or "") == {
            "pause_id": "pau_1",
            "activated": False,
        }
        assert json.loads(await store.get_mark("a2a.activation", "run_2") or "") == {
            "pause_id": "pau_2",
            "activated": True,
        }
    if old_database.startswith("sqlite"):
        with sqlite3.connect(old_database.removeprefix("sqlite:///")) as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "a2a_pauses" not in tables and "marks" in tables


def _at_revision(url: str, revision: str, *statements: tuple[str, list[dict[str, object]]]) -> Any:
    """Bring a database to one schema revision and fill it with rows, as an older sayso would have left it."""
    from alembic import command
    from alembic.config import Config

    def upgrade(conn: sa.Connection) -> None:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
        for sql, rows in statements:
            conn.execute(sa.text(sql), rows)

    async def run() -> None:
        engine = create_async_engine(async_url(url))
        try:
            async with engine.begin() as conn:
                await conn.run_sync(upgrade)
        finally:
            await engine.dispose()

    return run()


@asynccontextmanager
async def _database_at(
    backend: str, tmp_path: Path, revision: str, *fill: tuple[str, list[dict[str, object]]]
) -> AsyncIterator[str]:
    """A database of `backend` (`sqlite`, `postgres`) at one schema revision, filled with `fill`'s rows."""
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'old.db'}"
        await _at_revision(url, revision, *fill)
        yield url
    else:
        async with postgres_database() as url:
            await _at_revision(url, revision, *fill)
            yield url


GRANT_ROW = (
    "INSERT INTO grants (grant_id, tool, subject_key, subject_label, scope, principal, thread_id, created_at) "
    "VALUES (:g, 'delete_file', 'folder:.', 'the top folder', :scope, 'alice', :thread, :at)"
)


@pytest.fixture(params=["sqlite", "postgres"])
async def grants_database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database at revision 0006 with three grants: one traceable in the audit, one thread grant, one neither."""
    from sayso._core.audit import GENESIS, canonical_json, chain_hash

    decision = {
        "event": "decision",
        "decision": "approve",
        "scope": "always",
        "tool_name": "delete_file",
        "subject": "folder:.",
        "decided_at": 100.5,
        "agent_path": "coordinator/files",
        "principal": "ops",
        "thread_id": "thr_1",
    }
    fill: tuple[tuple[str, list[dict[str, object]]], ...] = (
        (
            GRANT_ROW,
            [
                {"g": "grt_traced", "scope": "always", "thread": None, "at": 100.5},
                {"g": "grt_thread", "scope": "thread", "thread": "thr_2", "at": 200.0},
                {"g": "grt_lost", "scope": "always", "thread": None, "at": 300.0},
            ],
        ),
        (
            "INSERT INTO audit (seq, body, prev_hash, hash) VALUES (1, :body, :prev, :hash)",
            [{"body": canonical_json(decision), "prev": GENESIS, "hash": chain_hash(GENESIS, 1, decision)}],
        ),
        (
            "INSERT INTO threads (thread_id, owner, agent, active_run_id, created_at) VALUES ('thr_2', 'alice', "
            "'billing', NULL, 1)",
            [{}],
        ),
    )
    async with _database_at(request.param, tmp_path, "0006", *fill) as url:
        yield url


async def test_existing_grants_learn_their_agent_or_are_revoked(grants_database: str) -> None:
    """Migrating grants: one traced to its decision gets that root agent and giver, a thread grant its thread's agent,
    and one that cannot be placed is revoked, so the next call asks again."""
    async with SqlRunStore(grants_database) as store:
        by_id = {g.grant_id: g for g in await store.list_grants(active_only=False)}
        active = {g.grant_id for g in await store.list_grants()}
    assert (by_id["grt_traced"].agent, by_id["grt_traced"].granted_by) == ("coordinator", "ops")
    assert (by_id["grt_thread"].agent, by_id["grt_thread"].granted_by) == ("billing", None)
    assert by_id["grt_lost"].agent is None and by_id["grt_lost"].revoked_at is not None
    assert active == {"grt_traced", "grt_thread"}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_delegates_thread_learns_the_run_that_started_it(backend: str, tmp_path: Path) -> None:
    """Migrating threads: a delegate's thread is filled in with its run's parent, which `Reading.thread` reads it by
    (an approver of the chat's agent reads it); a chat's own thread names none."""
    thread = (
        "INSERT INTO threads (thread_id, owner, agent, active_run_id, created_at) VALUES (:t, 'alice', :a, NULL, 1)"
    )
    run = (
        "INSERT INTO runs (run_id, thread_id, agent, status, created_at, updated_at, revision, parent_run_id) "
        "VALUES (:r, :t, :a, 'completed', 1, 1, 0, :parent)"
    )
    fill: tuple[tuple[str, list[dict[str, object]]], ...] = (
        (thread, [{"t": "thr_chat", "a": "coordinator"}, {"t": "thr_ops", "a": "ops"}]),
        (
            run,
            [
                {"r": "run_chat", "t": "thr_chat", "a": "coordinator", "parent": None},
                {"r": "run_ops", "t": "thr_ops", "a": "ops", "parent": "run_chat"},
            ],
        ),
    )
    async with _database_at(backend, tmp_path, "0025", *fill) as url, SqlRunStore(url) as store:
        chat, ops = await store.get_thread("thr_chat"), await store.get_thread("thr_ops")
    assert chat is not None and ops is not None
    assert (chat.parent_run_id, ops.parent_run_id) == (None, "run_chat")


def _starting(n: int) -> RunStart:
    """A run started on a thread of its own: the n-th of a test's runs."""
    return RunStart(
        thread_id=f"thr_{n}",
        owner="alice",
        agent="files",
        run_id=f"run_{n}",
        prompt="p",
        lease_holder="me",
        lease_expires_at=100.0,
        now=1.0,
    )


async def test_a_commit_that_does_not_wait_for_the_disk_leaves_the_next_one_durable(tmp_path: Path) -> None:
    """After a `durable=False` write, SQLite connections are back to `synchronous=FULL` for every later commit."""
    async with SqlRunStore(f"sqlite:///{tmp_path / 'sayso.db'}") as store:
        for n in range(3):
            await store.start_run(_starting(n), expect_active=None, durable=False)
        sync = store._sync  # the worker-thread engine every SQLite transaction runs on
        assert sync is not None
        with sync.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar_one() == 2
        assert (await store.get_run("run_2")).status == "running"


class _CountingConnection(sqlite3.Connection):
    """A stdlib connection that counts the commits that wrote while `synchronous` is FULL (those SQLite fsyncs).

    A read's commit writes nothing, so SQLite syncs nothing for it, whatever `synchronous` says.
    """

    fsynced: ClassVar[list[int]] = [0]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.full = True  # SQLite's default in WAL mode is FULL until a pragma says otherwise
        self.changes_at_begin = 0

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        statement = sql.strip().upper()
        if statement.startswith("PRAGMA SYNCHRONOUS="):
            self.full = statement.endswith(("FULL", "EXTRA", "2", "3"))
        elif statement.startswith("BEGIN"):
            self.changes_at_begin = self.total_changes
        elif statement == "COMMIT" and self.full and self.total_changes > self.changes_at_begin:
            self.fsynced[0] += 1
        return super().execute(sql, *args)


async def test_the_outboxs_bookkeeping_does_not_wait_for_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fanning events out, claiming and settling deliveries commit without an fsync: the events were made durable
    with the change that wrote them, and a lost bookkeeping commit only repeats work under the same delivery id.
    A run's own writes still wait for the disk, and what the bookkeeping wrote is there for the next process."""
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real_connect(*args, **kwargs, factory=_CountingConnection)

    monkeypatch.setattr(sqlite3, "connect", connect)
    fsynced = _CountingConnection.fsynced
    url = f"sqlite:///{tmp_path / 'sayso.db'}"
    async with SqlRunStore(url) as store:
        before = fsynced[0]
        run = await store.start_run(_starting(1), expect_active=None)
        await store.finish_run(run, holder="me", new_messages=(), status="completed", output="ok", error=None, now=2.0)
        assert fsynced[0] - before == 2  # the run's start and its end (which writes its `run.updated` event)
        before = fsynced[0]
        assert await store.fan_out_events(hooks=["push"], now=3.0, kinds=("run.updated",)) == 1
        [claimed] = await store.claim_deliveries(holder="me", now=3.0, until=30.0, hooks=["push"])
        assert await store.settle_delivery(claimed.delivery_id, holder="me", status="skipped", now=4.0)
        assert fsynced[0] == before
    async with SqlRunStore(url) as store:
        assert await store.delivery_counts() == {"skipped": 1}


async def test_the_log_reaches_the_database_file_while_the_store_writes(tmp_path: Path) -> None:
    """No commit copies SQLite's write-ahead log into the database file (that would stall it and the writes queued
    behind it); the store's checkpointer does, so the file takes the data and the log does not grow without end."""
    path = tmp_path / "sayso.db"
    async with SqlRunStore(f"sqlite:///{path}") as store:
        await store.start_run(_starting(0), expect_active=None)
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)  # a new connection's own
        before = path.stat().st_size
        for n in range(1, 200):
            await store.start_run(_starting(n), expect_active=None)
        deadline = asyncio.get_running_loop().time() + 10
        while path.stat().st_size == before and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        assert path.stat().st_size > before  # the runs' pages were copied in while the store is open


async def test_a_commit_that_fails_leaves_nothing_and_the_store_writes_on(tmp_path: Path) -> None:
    """A durable write's statements run on the event loop and its commit on a thread of the store's: a commit
    the database refuses (here a deferred foreign key, checked only then) rolls the whole transaction back, is a
    `StoreError`, and the next write commits as usual."""
    mark = Sql("INSERT INTO marks (namespace, key, value, updated_at) VALUES ('test', :key, 'v', 1.0)")

    async def refused_at_commit(tx: Tx) -> None:
        await tx.run(Sql("CREATE TEMP TABLE parent (id INTEGER PRIMARY KEY)"))
        await tx.run(Sql("CREATE TEMP TABLE child (parent INTEGER REFERENCES parent DEFERRABLE INITIALLY DEFERRED)"))
        await tx.run(mark, {"key": "lost"})
        await tx.run(Sql("INSERT INTO child (parent) VALUES (42)"))  # no such parent: refused by the COMMIT

    async def written(tx: Tx) -> None:
        await tx.run(mark, {"key": "kept"})

    path = tmp_path / "sayso.db"
    async with SqlRunStore(f"sqlite:///{path}") as store:
        with pytest.raises(StoreError, match="FOREIGN KEY constraint failed"):
            await store._raw_write(refused_at_commit)
        await store._raw_write(written)
        await store.start_run(_starting(0), expect_active=None)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT key FROM marks").fetchall() == [("kept",)]
        assert conn.execute("SELECT run_id FROM runs").fetchall() == [("run_0",)]


class _HeldCommitConnection(sqlite3.Connection):
    """A stdlib connection whose next commit, once `held` is set, waits until `go` is (a disk that stalls)."""

    held = threading.Event()
    holding = threading.Event()
    go = threading.Event()

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "COMMIT" and self.held.is_set():
            self.held.clear()
            self.holding.set()
            self.go.wait(timeout=30)
        return super().execute(sql, *args)


def test_event_loops_on_two_threads_write_to_one_store_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store shared by two threads, each with its own event loop (a server and a program embedding it, say).
    A write holds the loop's connection from its statements to its commit on the store's thread; a write from
    the other loop meanwhile waits for SQLite's lock on the writer thread instead of using that connection."""
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real_connect(*args, **kwargs, factory=_HeldCommitConnection)

    monkeypatch.setattr(sqlite3, "connect", connect)
    store = SqlRunStore(f"sqlite:///{tmp_path / 'sayso.db'}")
    asyncio.run(store.open())
    failed: list[BaseException] = []

    def write_from_a_loop_of_its_own(n: int) -> None:
        try:
            asyncio.run(store.start_run(_starting(n), expect_active=None))
        except BaseException as exc:  # reported by the test's thread
            failed.append(exc)

    _HeldCommitConnection.holding.clear()
    _HeldCommitConnection.go.clear()
    _HeldCommitConnection.held.set()
    first = threading.Thread(target=write_from_a_loop_of_its_own, args=(1,))
    first.start()
    assert _HeldCommitConnection.holding.wait(timeout=30)  # the first write's commit is under way, and stalls
    second = threading.Thread(target=write_from_a_loop_of_its_own, args=(2,))
    second.start()
    second.join(timeout=0.3)  # it waits for the first one's commit
    _HeldCommitConnection.go.set()
    first.join()
    second.join()
    assert failed == []

    async def read_back() -> list[str]:
        runs: list[str] = [(await store.get_run(f"run_{n}")).status for n in (1, 2)]
        await store.aclose()
        return runs

    assert asyncio.run(read_back()) == ["running", "running"]


def _used_from_two_loops_at_once(url: str) -> None:
    """Open a store on one loop, then read, list and write from two threads' loops at once; close it on a third."""
    store = SqlRunStore(url)

    async def write() -> None:
        await store.open()
        for n in range(10):
            await store.start_run(_starting(n), expect_active=None)

    asyncio.run(write())
    failed: list[BaseException] = []
    read: list[int] = []

    def from_a_loop_of_its_own(k: int) -> None:
        async def use() -> int:
            running = 0
            for i in range(600):
                running += (await store.get_run(f"run_{i % 10}")).status == "running"
                if i % 100 == 0:  # a listing: SQLAlchemy's path, not the hot one
                    assert len((await store.threads(owner=None, limit=5)).threads) == 5
                if i % 20 == 0:
                    await store.start_run(_starting(1000 * (k + 1) + i), expect_active=None)
            return running

        try:
            read.append(asyncio.run(use()))
        except BaseException as exc:  # reported by the test's thread
            failed.append(exc)

    loops = [threading.Thread(target=from_a_loop_of_its_own, args=(k,)) for k in range(2)]
    for loop in loops:
        loop.start()
    for loop in loops:
        loop.join()

    async def count_and_close() -> int:
        started = len((await store.threads(owner=None, limit=1000)).threads)
        await store.aclose()
        return started

    assert failed == []
    assert read == [600, 600]
    assert asyncio.run(count_and_close()) == 10 + 2 * 30


def test_event_loops_on_two_threads_use_one_sqlite_store_at_once(tmp_path: Path) -> None:
    """Reads from two threads' event loops at the same moments: each in a transaction of its own, none refused.

    SQLite gives the interpreter's lock back inside every statement, so two loops' reads on one connection
    would begin a transaction inside the other's ("cannot start a transaction within a transaction")."""
    _used_from_two_loops_at_once(f"sqlite:///{tmp_path / 'sayso.db'}")


def test_event_loops_on_two_threads_use_one_postgres_store_at_once() -> None:
    """An asyncpg connection belongs to the loop that opened it: each loop the store is used on gets a pool."""

    done = threading.Event()
    ready: list[str] = []

    async def database_meanwhile() -> None:
        async with postgres_database() as url:
            ready.append(url)
            await anyio.to_thread.run_sync(done.wait)

    keeper = threading.Thread(target=asyncio.run, args=(database_meanwhile(),))
    keeper.start()
    try:
        for _ in range(300):
            if ready or not keeper.is_alive():
                break
            time.sleep(0.1)
        assert ready, "no database to test on"
        _used_from_two_loops_at_once(ready[0])
    finally:
        done.set()
        keeper.join()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_process_forked_after_a_write_still_writes(tmp_path: Path) -> None:
    """A child forked from a process that wrote (a pre-forking server) commits through a writer of its own.

    The parent's writer thread does not exist in the child; a write there must not wait for it forever.
    """
    store = SqlRunStore(f"sqlite:///{tmp_path / 'sayso.db'}")

    async def open_and_write() -> None:
        await store.open()
        await store.start_run(_starting(0), expect_active=None)

    async def write_in_child() -> None:
        await asyncio.wait_for(store.start_run(_starting(1), expect_active=None), timeout=30)

    asyncio.run(open_and_write())
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        try:
            asyncio.run(write_in_child())
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0

    async def read_back() -> str:
        run = await store.get_run("run_1")
        await store.aclose()
        return run.status

    assert asyncio.run(read_back()) == "running"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_during_a_write_waits_for_its_commit(tmp_path: Path) -> None:
    """A process that forks while its store writes (a pre-forking server, a tool that forks) forks once the
    write is done: a child forked in the middle of a SQLite call would inherit SQLite's locks held by a thread
    it does not have, and hang on its own first call.

    The write here waits on another connection's lock, so it is surely inside SQLite when the fork starts.
    """
    path = tmp_path / "sayso.db"
    store = SqlRunStore(f"sqlite:///{path}")

    def committed(run_id: str) -> bool:
        with sqlite3.connect(path) as conn:
            return conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None

    async def fork_while_writing() -> tuple[bool, int]:
        await store.open()
        await store.start_run(_starting(0), expect_active=None)
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # the store's next write queues behind this, inside SQLite
        writing = asyncio.create_task(store.start_run(_starting(1), expect_active=None))
        await asyncio.sleep(0.3)
        release = threading.Timer(0.5, other.execute, args=("COMMIT",))
        release.start()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through its exit status
            signal.alarm(20)  # a child that hangs is killed, and fails the test
            os._exit(0 if committed("run_1") else 3)
        seen = committed("run_1")
        _, status = os.waitpid(pid, 0)
        await writing
        release.join()
        other.close()
        await store.aclose()
        return seen, os.waitstatus_to_exitcode(status)

    seen_by_parent, child = asyncio.run(fork_while_writing())
    assert seen_by_parent  # the fork returned only after the write had committed
    assert child == 0  # and the child sees it, and reads without hanging


# the schema, and what the sweeps read


@pytest.fixture(params=["sqlite", "postgres"])
async def migrated(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A new database brought to the newest revision by opening a store on it."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'sayso.db'}"
        async with SqlRunStore(url):
            yield url
    else:
        async with postgres_database() as url, SqlRunStore(url):
            yield url


async def test_the_tables_match_the_migrations(migrated: str) -> None:
    """The schema the migrations build is the one the store's table metadata describes: no table, column or
    index only on one side."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from sayso._store._tables import metadata

    def differences(conn: sa.Connection) -> list[Any]:
        return list(compare_metadata(MigrationContext.configure(conn), metadata))

    engine = create_async_engine(async_url(migrated))
    try:
        async with engine.connect() as conn:
            assert await conn.run_sync(differences) == []
    finally:
        await engine.dispose()


_PARTIAL = ("ix_requests_expiring", "ix_requests_escalating", "ix_runs_parent_run_id")


async def _partial_indexes(url: str) -> dict[str, str]:
    """The definitions of the indexes that leave rows out, as the database keeps them."""
    names = ", ".join(f"'{name}'" for name in _PARTIAL)
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            rows = conn.execute(f"SELECT name, sql FROM sqlite_master WHERE name IN ({names})").fetchall()
    else:
        import asyncpg

        conn = await asyncpg.connect(url)
        try:
            rows = await conn.fetch(f"SELECT indexname, indexdef FROM pg_indexes WHERE indexname IN ({names})")
        finally:
            await conn.close()
    return {name: " ".join(text.split()) for name, text in rows}


@pytest.fixture(params=["sqlite", "postgres"])
async def lean_indexes_database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    """Two databases of one backend: one at revision 0018 (the indexes held rows nothing read), one new."""
    if request.param == "sqlite":
        old, new = f"sqlite:///{tmp_path / 'old.db'}", f"sqlite:///{tmp_path / 'new.db'}"
        await _at_revision(old, "0018_grant_agent_path")
        yield old, new
    else:
        async with postgres_database() as old, postgres_database() as new:
            await _at_revision(old, "0018_grant_agent_path")
            yield old, new


async def test_indexes_leave_out_the_rows_nothing_reads_through_them(lean_indexes_database: tuple[str, str]) -> None:
    """A request with no deadline and no escalation step is in neither sweep's index, and a root run is not in
    the index of delegates' parents, in a new database and in one migrated from before: an approval cycle
    without timers costs those indexes no writes."""
    old, new = lean_indexes_database
    before = await _partial_indexes(old)
    assert len(before) == 3 and all("IS NOT NULL" not in text for text in before.values())
    for url in (old, new):
        async with SqlRunStore(url):
            pass
    migrated, made = await _partial_indexes(old), await _partial_indexes(new)
    assert migrated == made
    for name, column in zip(_PARTIAL, ("expires_at", "escalate_at", "parent_run_id"), strict=True):
        assert f"{column} IS NOT NULL" in made[name]


async def test_the_expiry_sweep_reads_only_open_requests_that_expired_on_sqlite(tmp_path: Path) -> None:
    """SQLite answers the sweep's query by ranging over the partial index of open requests by expiry time and
    looking up each candidate pause's requests, never by reading every open request."""
    path = tmp_path / "sayso.db"
    async with SqlRunStore(f"sqlite:///{path}"):
        pass
    with sqlite3.connect(path) as conn:
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {EXPIRED_RUNS.text}", {"now": 1_000.0})]
    assert "SEARCH r USING INDEX ix_requests_expiring (expires_at<?)" in plan
    assert "SEARCH w USING INDEX ix_requests_pause_id (pause_id=?)" in plan
    assert [step for step in plan if step.startswith("SCAN") or "ix_requests_open" in step] == []


async def test_the_recovery_sweep_looks_up_each_paused_runs_requests_by_its_pause_on_sqlite(tmp_path: Path) -> None:
    """Whether a paused run still waits on someone is asked of its own pause's requests, never of every open
    request: the sweep, every few seconds, would otherwise grow with the square of the open requests."""
    from sqlalchemy.dialects import sqlite as sqlite_dialect

    path = tmp_path / "sayso.db"
    async with SqlRunStore(f"sqlite:///{path}"):
        pass
    query = stalled_runs_query("sqlite", 1_000.0, 100).compile(
        dialect=sqlite_dialect.dialect(), compile_kwargs={"literal_binds": True}
    )
    with sqlite3.connect(path) as conn:
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {query}")]
    assert plan.count("SEARCH requests USING INDEX ix_requests_pause_id (pause_id=?)") == 2, plan
    assert [step for step in plan if "ix_requests_open" in step or step == "SCAN requests"] == [], plan
    assert "SEARCH pauses USING INDEX ix_pauses_open (created_at<?)" in plan, plan  # the open pauses, not every one
    assert [step for step in plan if step.startswith("SCAN")] == [], plan


async def test_the_recovery_sweep_reads_only_held_runs_for_lapsed_leases_on_sqlite(tmp_path: Path) -> None:
    """Which runs' process died is asked of the runs a process holds, never of every run the store ever had."""
    from sqlalchemy.dialects import sqlite as sqlite_dialect

    path = tmp_path / "sayso.db"
    async with SqlRunStore(f"sqlite:///{path}"):
        pass
    plans = []
    with sqlite3.connect(path) as conn:
        for host in (None, "host-1"):
            query = lapsed_runs_query(1_000.0, host, 100).compile(
                dialect=sqlite_dialect.dialect(), compile_kwargs={"literal_binds": True}
            )
            plans.append([row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {query}")])
    for plan in plans:
        assert plan[0].startswith(("SEARCH runs USING INDEX ix_runs_held", "SCAN runs USING INDEX ix_runs_held")), plan
        assert "SCAN runs" not in plan and not any("TEMP B-TREE" in step for step in plan), plan


@asynccontextmanager
async def migrated_postgres() -> AsyncIterator[Any]:
    """A connection (asyncpg) to a new PostgreSQL database at the newest revision, for the plan tests to fill."""
    import asyncpg

    async with postgres_database() as url:
        async with SqlRunStore(url):
            pass
        conn = await asyncpg.connect(url)
        try:
            yield conn
        finally:
            await conn.close()


async def test_the_recovery_sweep_reads_held_runs_and_open_pauses_on_postgres() -> None:
    """With 40,000 finished runs and a few held or paused, PostgreSQL answers both of the recovery sweep's questions
    from the partial indexes, and finds exactly the lapsed and the stalled runs."""
    from sqlalchemy.dialects import postgresql

    def compiled(query: Any) -> str:
        return str(query.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))  # type: ignore[no-untyped-call]

    async with migrated_postgres() as conn:
        await conn.execute(
            "INSERT INTO runs (run_id, thread_id, agent, status, created_at, updated_at, revision, pause_id, "
            "lease_holder, lease_expires_at) SELECT 'run_' || i, 'thr', 'files', CASE WHEN i <= 40000 THEN "
            "'completed' WHEN i <= 40050 THEN 'running' ELSE 'paused' END, i, i, 0, CASE WHEN i > 40050 THEN "
            "'pau_' || i END, CASE WHEN i > 40000 AND i <= 40050 THEN 'h:1' END, CASE WHEN i > 40000 AND "
            "i <= 40050 THEN i - 40000 END FROM generate_series(1, 40100) i"
        )
        await conn.execute(
            "INSERT INTO pauses SELECT 'pau_' || i, 'run_' || i, CASE WHEN i > 40050 THEN 'open' ELSE "
            "'answered' END, 0 FROM generate_series(1, 40100) i"
        )
        await conn.execute("ANALYZE")
        lapsed, stalled = compiled(lapsed_runs_query(10.5, None, 100)), compiled(stalled_runs_query("pg", 5, 100))
        plans = ["\n".join(row[0] for row in await conn.fetch(f"EXPLAIN {sql}")) for sql in (lapsed, stalled)]
        found = [{row[0] for row in await conn.fetch(sql)} for sql in (lapsed, stalled)]
    assert "ix_runs_held" in plans[0] and "ix_pauses_open" in plans[1], plans
    assert not any("Seq Scan on runs" in plan or "Seq Scan on pauses" in plan for plan in plans), plans
    assert found[0] == {f"run_{i}" for i in range(40001, 40011)}
    assert found[1] == {f"run_{i}" for i in range(40051, 40101)}


def _hot_path_statements() -> dict[str, Sql]:
    """Every constant statement of the store's hot path that SQLite runs (the PostgreSQL-only ones left out)."""
    found = {f"{m.__name__}.{name}": v for m in (_rows, _chain) for name, v in vars(m).items() if isinstance(v, Sql)}
    return {name: sql for name, sql in found.items() if "pg_advisory" not in sql.text and "FOR UPDATE" not in sql.text}


async def test_no_statement_of_the_hot_path_reads_a_whole_table_on_sqlite(tmp_path: Path) -> None:
    """Each constant statement finds its rows through an index, so no verb slows down as the store fills up (a
    run's requests, say, are read whenever a delegate answers)."""
    path = tmp_path / "sayso.db"
    async with SqlRunStore(f"sqlite:///{path}"):
        pass
    scans: dict[str, list[str]] = {}
    with sqlite3.connect(path) as conn:
        for name, sql in _hot_path_statements().items():
            params = dict.fromkeys(re.findall(r"(?<![:\w]):(\w+)", sql.text))
            plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql.text}", params)]
            if bad := [step for step in plan if step.startswith("SCAN")]:
                scans[name] = bad
    assert len(_hot_path_statements()) > 40
    assert scans == {}


async def test_the_thread_list_reads_a_page_through_an_index_on_sqlite(tmp_path: Path) -> None:
    """Each page of the thread list (a principal's or every thread, first or after a cursor) is read from an index
    in the list's order, never by sorting the whole table, so the sidebar stays quick however many threads there are."""
    path = tmp_path / "sayso.db"
    async with SqlRunStore(f"sqlite:///{path}"):
        pass
    with sqlite3.connect(path) as conn:
        for owner, after in [(False, False), (False, True), (True, False), (True, True)]:
            sql = thread_listing(owner=owner, after=after)
            params = dict.fromkeys(re.findall(r"(?<![:\w]):(\w+)", sql.text))
            top = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql.text}", params) if row[1] == 0]
            index = "ix_threads_owner_created" if owner else "ix_threads_created"
            assert [step for step in top if step.startswith(("SCAN th", "SEARCH th"))] == [
                f"{'SEARCH' if owner or after else 'SCAN'} th USING INDEX {index}"
                + (f" ({'owner=? AND ' if owner else ''}created_at<?)" if after else " (owner=?)" if owner else "")
            ], top
            assert "USE TEMP B-TREE FOR ORDER BY" not in top, top


async def test_a_transcript_page_reads_its_batches_and_runs_through_indexes_on_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of a long thread's transcript (the newest, or one before a cursor) reads the batches it shows and the
    runs among them through indexes: neither a thread's whole message log nor all its runs, one per message."""
    from .test_contract import said

    path = tmp_path / "sayso.db"
    async with SqlRunStore(f"sqlite:///{path}") as store:
        for n in range(12):
            starting = RunStart(
                thread_id="thr_long",
                owner="alice",
                agent="files",
                run_id=f"run_{n}",
                prompt=f"hi {n}",
                lease_holder="me",
                lease_expires_at=10_000.0,
                now=1_000.0 + n,
            )
            run = await store.start_run(starting, expect_active=None)
            failed = n == 5
            await store.finish_run(
                run,
                holder="me",
                new_messages=() if failed else said(f"hi {n}", f"hello {n}"),
                status="failed" if failed else "completed",
                output=None,
                error="boom" if failed else None,
                now=1_000.0 + n,
            )
        statements: list[tuple[str, Any]] = []
        read = store._sa_read

        async def traced(work: Any) -> Any:
            def listening(conn: sa.Connection) -> Any:
                sa.event.listen(conn, "before_cursor_execute", lambda *a: statements.append((a[2], a[3])))
                return work(conn)

            return await read(listening)

        monkeypatch.setattr(store, "_sa_read", traced)
        newest = await store.transcript_page("thr_long", limit=3)
        older = await store.transcript_page("thr_long", limit=3, cursor=newest.next_cursor)
    shown = ["hi 9", "hello 9", "hi 10", "hello 10", "hi 11", "hello 11"]
    assert ([e.text for e in older.entries + newest.entries], newest.title) == (shown, "hi 0")
    with sqlite3.connect(path) as conn:
        plans = [[row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)] for sql, params in statements]
    steps = [step for plan in plans for step in plan]
    assert [step for step in steps if step.startswith("SCAN") or "TEMP B-TREE" in step] == [], plans
    assert "SEARCH runs USING INDEX ix_runs_thread_created (thread_id=? AND created_at>? AND created_at<?)" in steps


async def test_the_thread_list_reads_a_page_through_an_index_on_postgres() -> None:
    """With 20,000 threads of many owners, PostgreSQL reads a principal's next page backwards from the index of
    threads by owner and time, and lists the page the cursor points after."""

    async with migrated_postgres() as conn:
        await conn.execute(
            "INSERT INTO threads (thread_id, owner, agent, created_at) "
            "SELECT 'thr_' || i, 'p' || (i % 100), 'files', i FROM generate_series(1, 20000) i"
        )
        await conn.execute("ANALYZE")
        sql = thread_listing(owner=True, after=True)
        args = {"owner": "p7", "after_at": 10_007.0, "after_id": "thr_10007", "limit": 3}
        values = [args[name] for name in sql.names]
        plan = "\n".join(row[0] for row in await conn.fetch(f"EXPLAIN {sql.pg_text}", *values))
        listed = [row["thread_id"] for row in await conn.fetch(sql.pg_text, *values)]
    assert "Index Scan Backward using ix_threads_owner_created on threads th" in plan, plan
    assert "Seq Scan on threads" not in plan, plan
    assert listed == ["thr_9907", "thr_9807", "thr_9707"]


_TOP_RUNS_FLAGS = [
    {"owner": owner, "thread": thread, "status": status, "updated": updated}
    for owner in (False, True)
    for thread in (False, True)
    for status in (False, True)
    for updated in (False, True)
]


async def test_a2a_task_pages_and_counts_read_through_indexes_on_sqlite(tmp_path: Path) -> None:
    """Every shape of A2A's task list (a principal's or every owner's, one context, a status, a time, after a cursor)
    and its count reads runs and threads through indexes, never the whole tables: every owner's tasks straight off
    `ix_runs_top` in the list's order, a principal's or a context's through their threads' runs."""
    path = tmp_path / "sayso.db"
    async with SqlRunStore(f"sqlite:///{path}"):
        pass
    with sqlite3.connect(path) as conn:
        for flags in _TOP_RUNS_FLAGS:
            for sql in (top_runs_listing(**flags, after=False), top_runs_listing(**flags, after=True)):
                params = dict.fromkeys(re.findall(r"(?<![:\w]):(\w+)", sql.text))
                plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql.text}", params)]
                assert not [step for step in plan if step.startswith("SCAN")], (flags, plan)
                runs = next(step for step in plan if step.startswith("SEARCH r "))
                by_thread = flags["owner"] or flags["thread"]
                assert ("ix_runs_thread_created" if by_thread else "ix_runs_top") in runs, (flags, plan)
                assert by_thread or "USE TEMP B-TREE FOR ORDER BY" not in plan, (flags, plan)
            count = top_runs_count(**flags)
            params = dict.fromkeys(re.findall(r"(?<![:\w]):(\w+)", count.text))
            plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {count.text}", params)]
            assert not [step for step in plan if step.startswith("SCAN")], (flags, plan)


async def test_a2a_task_pages_read_through_indexes_and_page_in_order_on_postgres() -> None:
    """With 20,000 threads of 100 principals and a task each, PostgreSQL reads every owner's next page backwards
    through `ix_runs_top` and a principal's through an index too (the planner picks which), never a whole table,
    and both list the runs the cursor points after, newest update first."""
    async with migrated_postgres() as conn:
        await conn.execute(
            "INSERT INTO threads (thread_id, owner, agent, created_at) "
            "SELECT 'thr_' || i, 'p' || (i % 100), 'files', i FROM generate_series(1, 20000) i"
        )
        await conn.execute(
            "INSERT INTO runs (run_id, thread_id, agent, status, created_at, updated_at, revision) "
            "SELECT 'run_' || i, 'thr_' || i, 'files', 'completed', i, i, 0 FROM generate_series(1, 20000) i"
        )
        await conn.execute("ANALYZE")
        plans, listed = [], []
        for owner, before in (("p7", 10_007.0), (None, 10_007.0)):
            flags = {"owner": owner is not None, "thread": False, "status": False, "updated": False}
            sql = top_runs_listing(**flags, after=True)
            args = {"agent": "files", "owner": owner, "before_at": before, "before_id": "run_10007", "limit": 3}
            values = [args[name] for name in sql.names]
            plans.append("\n".join(row[0] for row in await conn.fetch(f"EXPLAIN {sql.pg_text}", *values)))
            listed.append([row["run_id"] for row in await conn.fetch(sql.pg_text, *values)])
    principal, everyone = plans
    assert "ix_runs_top" in principal or "ix_threads_owner_created" in principal, principal
    assert "Index Scan Backward using ix_runs_top on runs r" in everyone, everyone
    assert not any("Seq Scan on runs" in plan or "Seq Scan on threads" in plan for plan in plans), plans
    assert listed == [["run_9907", "run_9807", "run_9707"], ["run_10006", "run_10005", "run_10004"]]


async def test_the_expiry_sweep_reads_only_open_requests_that_expired_on_postgres() -> None:
    """With 40,000 requests (half decided, half open without expiry, 100 expired), PostgreSQL answers the sweep's
    query from the partial index of open requests by expiry time, and finds exactly the expired runs."""

    async with migrated_postgres() as conn:
        await conn.execute(
            "INSERT INTO pauses SELECT 'pau_' || i, 'run_' || i, 'open', 0 FROM generate_series(1, 40100) i"
        )
        await conn.execute(
            "INSERT INTO requests (request_id, pause_id, position, run_id, thread_id, agent_path, kind, status, "
            "created_at, expires_at, body) SELECT 'req_' || i, 'pau_' || i, 0, 'run_' || i, 'thr', 'files', "
            "'approval', CASE WHEN i <= 20000 THEN 'decided' ELSE 'open' END, i, "
            "CASE WHEN i > 40000 THEN 5 ELSE NULL END, ''::bytea FROM generate_series(1, 40100) i"
        )
        await conn.execute("ANALYZE")
        plan = "\n".join(row[0] for row in await conn.fetch(f"EXPLAIN {EXPIRED_RUNS.pg_text}", 10.0))
        expired = {row[0] for row in await conn.fetch(EXPIRED_RUNS.pg_text, 10.0)}
    assert "Index Scan using ix_requests_expiring on requests r" in plan, plan
    assert "Seq Scan on requests" not in plan, plan
    assert expired == {f"run_{i}" for i in range(40001, 40101)}


_CLOSING = [
    ("req_forced", "person", b'{"kind":"skip","reason":"the run was resumed before this request was answered"}'),
    ("req_messaged", "person", b'{"kind":"skip","reason":"the person sent a message instead of answering"}'),
    ("req_cancelled", "system", b'{"kind":"skip","reason":"the run was cancelled before this request was answered"}'),
    ("req_skipped", "person", b'{"kind":"skip","reason":"not now"}'),
    ("req_approved", "person", b'{"kind":"approve"}'),
]
"""Decisions an older sayso stored: three closes (its own fixed reasons), a person's own skip and an approval."""


@pytest.fixture(params=["sqlite", "postgres"])
async def closes_database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database at revision 0019 (a close was stored as a plain skip) holding the five `_CLOSING` decisions."""
    fill: tuple[tuple[str, list[dict[str, object]]], ...] = (
        (
            "INSERT INTO requests (request_id, pause_id, position, run_id, thread_id, agent_path, kind, status, "
            "created_at, body) VALUES (:r, 'pau_1', 0, 'run_1', 'thr_1', 'shop', 'approval', 'decided', 100, :body)",
            [{"r": r, "body": b'{"tool_name": "refund"}'} for r, _, _ in _CLOSING],
        ),
        (
            'INSERT INTO decisions (request_id, kind, "by", principal, decided_at, body) '
            "VALUES (:r, :kind, :by, 'alice', 160, :body)",
            [{"r": r, "kind": json.loads(body)["kind"], "by": by, "body": body} for r, by, body in _CLOSING],
        ),
    )
    async with _database_at(request.param, tmp_path, "0019_lean_partial_indexes", *fill) as url:
        yield url


async def test_closes_stored_before_are_told_from_decisions(closes_database: str) -> None:
    """Migrating marks the skips sayso recorded when a run went on without an answer as closes, and nothing else:
    statistics read a person's own skip and approval as decisions, the closes as not."""
    async with SqlRunStore(closes_database) as store:
        facts = {f.request_id: f for f in await store.request_facts(since=0, until=1_000)}
    closed = {request_id for request_id, fact in facts.items() if fact.closed}
    assert closed == {"req_forced", "req_messaged", "req_cancelled"}
    assert (facts["req_skipped"].decision, facts["req_approved"].decision) == ("skip", "approve")


@pytest.fixture(params=["sqlite", "postgres"])
async def poisoned_database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database at revision 0020 with a run whose client tool's parameters are a string, as AG-UI once stored."""
    tools = [
        {"name": "x", "description": "d", "parameters": "notschema", "context": None},
        {"name": "y", "description": "", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}},
    ]
    fill: tuple[tuple[str, list[dict[str, object]]], ...] = (
        (
            "INSERT INTO runs (run_id, thread_id, agent, status, prompt, client_tools, principal, created_at, "
            "updated_at, revision) VALUES (:r, 'thr_1', 'files', 'paused', 'delete notes', :tools, 'local', 1, 1, 0)",
            [
                {"r": "run_poisoned", "tools": json.dumps(tools).encode()},
                {"r": "run_fine", "tools": json.dumps(tools[1:]).encode()},
            ],
        ),
    )
    async with _database_at(request.param, tmp_path, "0020_decision_closed", *fill) as url:
        yield url


async def test_runs_stored_with_client_tools_that_cannot_be_read_are_mended(poisoned_database: str) -> None:
    """A run whose client tool's parameters were stored as a string read back as nothing (every read of its thread
    failed); migrated, it reads, that tool taking an object, its other tool and other runs as they were."""
    async with SqlRunStore(poisoned_database) as store:
        mended, fine = await store.get_run("run_poisoned"), await store.get_run("run_fine")
    assert [(t.name, t.parameters) for t in mended.client_tools] == [
        ("x", {"type": "object"}),
        ("y", {"type": "object", "properties": {"a": {"type": "string"}}}),
    ]
    assert fine.client_tools == mended.client_tools[1:]


@pytest.fixture(params=["sqlite", "postgres"])
async def newer_database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database a newer sayso migrated: its schema at a revision this sayso's migrations do not have."""

    async def stamp(url: str) -> None:
        async with SqlRunStore(url):
            pass
        engine = create_async_engine(async_url(url))
        try:
            async with engine.begin() as conn:
                await conn.execute(sa.text("UPDATE alembic_version SET version_num = '0099_from_the_future'"))
        finally:
            await engine.dispose()

    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'newer.db'}"
        await stamp(url)
        yield url
    else:
        async with postgres_database() as url:
            await stamp(url)
            yield url


async def test_a_store_a_newer_sayso_migrated_is_refused_saying_so(newer_database: str) -> None:
    """Going back to an older sayso after an upgrade: the store is refused, naming its revision and this sayso's
    newest, saying a newer sayso migrated it and that sayso does not migrate a store back; nothing is changed."""
    with pytest.raises(SchemaTooNew) as refused:
        async with SqlRunStore(newer_database):
            pass
    said = str(refused.value)
    assert "'0099_from_the_future'" in said and repr(schema_head()) in said
    assert "a newer sayso migrated this store" in said and "does not migrate a store back" in said
    engine = create_async_engine(async_url(newer_database))
    try:
        async with engine.connect() as conn:
            version = (await conn.execute(sa.text("SELECT version_num FROM alembic_version"))).scalar_one()
    finally:
        await engine.dispose()
    assert version == "0099_from_the_future"
