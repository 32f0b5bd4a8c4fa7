"""`sayso check` reaches the store: a config whose store cannot be opened is not ready.

It said `is ready` for a PostgreSQL nothing listens on, a database that does not exist, a SQLite path that
is a folder or a file that is not a database; the first command then failed. The store is reached, not
opened: a SQLite file not there yet is not made, a new PostgreSQL database gets no tables.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from sayso.cli import app

from ..tools import missing
from .test_ids import closed_port

runner = CliRunner()

PUBLIC_TABLES = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"

SERVER_FIX = "Fix: start the database, or point the store (store:, or SAYSO_STORE) at one that answers"


def project(folder: Path, store: str) -> Path:
    """A one-agent config whose store (on line 1) is `store`."""
    config = folder / "sayso.yaml"
    config.write_text(f'store: "{store}"\nagents:\n  a: {{model: "test"}}\n')
    return config


@pytest.fixture(autouse=True)
def no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    """The config's own `store:` counts (the test fixture points `SAYSO_STORE` elsewhere)."""
    monkeypatch.delenv("SAYSO_STORE")


def test_a_postgresql_nothing_listens_on_is_an_error_naming_it(tmp_path: Path) -> None:
    """One line with the file, the store's line, the reason and the fix; exit 2; the same in JSON. A config that
    does not parse is said alone, nothing reached."""
    url = f"postgresql://nobody@127.0.0.1:{closed_port()}/x"
    config = project(tmp_path, url)
    checked = runner.invoke(app, ["check", str(config)])
    assert checked.exit_code == 2, checked.output
    reason = f"could not open the store at {url!r}: database error: Connection refused"
    assert checked.stderr == f"{config}:1: error: store: {reason}. {SERVER_FIX}\n{config}: 1 error(s)\n"
    assert "is ready" not in checked.stdout
    as_json = runner.invoke(app, ["check", str(config), "--json"])
    assert as_json.exit_code == 2
    assert json.loads(as_json.stdout) == {
        "ok": False,
        "problems": [
            {
                "severity": "error",
                "where": "store",
                "message": reason,
                "fix": SERVER_FIX.removeprefix("Fix: "),
                "file": str(config),
                "line": 1,
            }
        ],
    }
    config.write_text(config.read_text() + "  b: {model: [\n")
    unparsed = runner.invoke(app, ["check", str(config)])
    assert unparsed.exit_code == 2
    assert "not valid YAML" in unparsed.stderr and "could not open the store" not in unparsed.stderr


def test_a_sqlite_store_that_cannot_open_is_an_error_and_a_new_one_is_not_made(tmp_path: Path) -> None:
    """A folder where the file should be, or a file that is not a database, is an error saying what to change; a
    file not there yet in a folder sayso may write in is ready, and `check` does not make it."""
    (tmp_path / "folder.db").mkdir()
    checked = runner.invoke(app, ["check", str(project(tmp_path, "sqlite:///folder.db"))])
    assert checked.exit_code == 2, checked.output
    assert f"error: store: could not open the store at 'sqlite:///{tmp_path / 'folder.db'}': " in checked.stderr
    assert f"'{tmp_path / 'folder.db'}' is a folder; point the store at a file\n" in checked.stderr
    (tmp_path / "notes.db").write_text("not a database")
    checked = runner.invoke(app, ["check", str(project(tmp_path, "sqlite:///notes.db"))])
    assert checked.exit_code == 2, checked.output
    assert "database error: file is not a database; point the store at sayso's SQLite file" in checked.stderr
    assert (tmp_path / "notes.db").read_text() == "not a database"
    ready = runner.invoke(app, ["check", str(project(tmp_path, "sqlite:///new.db"))])
    assert ready.exit_code == 0, ready.output
    assert "is ready" in ready.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.db", "notes.db", "sayso.yaml"]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root may write in any folder")
def test_a_sqlite_store_in_a_folder_sayso_may_not_write_is_an_error(tmp_path: Path) -> None:
    """A read-only folder: SQLite could not make the file (or its -wal and -shm files) there."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        checked = runner.invoke(app, ["check", str(project(tmp_path, f"sqlite:///{folder / 'x.db'}"))])
    finally:
        folder.chmod(0o755)
    assert checked.exit_code == 2, checked.output
    assert f"sayso may not write in the folder '{folder}'" in checked.stderr


def test_a_database_server_that_never_answers_is_given_up_on(tmp_path: Path) -> None:
    """A port that takes the connection and never answers: `check` stops waiting after a few seconds and says so."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"postgresql://nobody@127.0.0.1:{silent.getsockname()[1]}/x"
        checked = runner.invoke(app, ["check", str(project(tmp_path, url))])
    assert checked.exit_code == 2, checked.output
    assert f"could not open the store at {url!r}: it did not answer within 5 seconds" in checked.stderr


def test_a_postgresql_database_is_reached_not_migrated(tmp_path: Path) -> None:
    """On a real server: a database that does not exist is an error; one that does is ready, and gets no tables."""
    from ..store.conftest import DSN, postgres_database

    if DSN is None:
        missing("TEST_POSTGRES_DSN is not set (scripts/test sets it)")
    nowhere = DSN.rsplit("/", 1)[0] + "/sayso_no_such_database"
    checked = runner.invoke(app, ["check", str(project(tmp_path, nowhere))])
    assert checked.exit_code == 2, checked.output
    assert 'database error: database "sayso_no_such_database" does not exist' in checked.stderr

    async def reached() -> tuple[int, list[str]]:
        import asyncpg

        async with postgres_database() as url:
            done = await anyio.to_thread.run_sync(lambda: runner.invoke(app, ["check", str(project(tmp_path, url))]))
            conn = await asyncpg.connect(url)
            try:
                tables = await conn.fetch(PUBLIC_TABLES)
            finally:
                await conn.close()
        assert "is ready" in done.stdout, done.output
        return done.exit_code, [t["table_name"] for t in tables]

    assert anyio.run(reached) == (0, [])


NEWER = (
    "the store's schema is at revision '0099_from_the_future', which this sayso does not know (its newest is "
    "'{head}'): a newer sayso migrated this store, and sayso does not migrate a store back; run that version of "
    "sayso or a later one"
)


def test_a_store_a_newer_sayso_migrated_is_an_error_saying_so(tmp_path: Path) -> None:
    """After a downgrade, `check` said `is ready` while every command refused the store: SQLite and PostgreSQL
    now say which revision the store is at, that a newer sayso migrated it, and what to run; nothing changes."""
    from sayso._store._sql._conn import schema_head

    from ..store.conftest import DSN, postgres_database

    if DSN is None:
        missing("TEST_POSTGRES_DSN is not set (scripts/test sets it)")
    said = NEWER.format(head=schema_head())
    file = tmp_path / "sayso.db"
    config = project(tmp_path, f"sqlite:///{file}")
    assert runner.invoke(app, ["inbox", str(config)]).exit_code == 0
    with sqlite3.connect(file) as db:
        db.execute("UPDATE alembic_version SET version_num = '0099_from_the_future'")
    checked = runner.invoke(app, ["check", str(config)])
    assert checked.exit_code == 2 and said + "\n" in checked.stderr, checked.output

    async def on_postgres() -> tuple[str, str]:
        import asyncpg

        async with postgres_database() as url:
            config = project(tmp_path, url)
            await anyio.to_thread.run_sync(lambda: runner.invoke(app, ["inbox", str(config)]))
            conn = await asyncpg.connect(url)
            try:
                await conn.execute("UPDATE alembic_version SET version_num = '0099_from_the_future'")
                done = await anyio.to_thread.run_sync(lambda: runner.invoke(app, ["check", str(config)]))
                version = await conn.fetchval("SELECT version_num FROM alembic_version")
            finally:
                await conn.close()
        assert done.exit_code == 2, done.output
        return done.stderr, version

    stderr, version = anyio.run(on_postgres)
    assert f"{said}\n" in stderr and "start the database" not in stderr
    assert version == "0099_from_the_future"
