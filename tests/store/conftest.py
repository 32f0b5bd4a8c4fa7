"""Stores for the contract suite: memory, a SQLite file, and PostgreSQL when `TEST_POSTGRES_DSN` is set."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from sayso._store import MemoryRunStore, RunStore, SqlRunStore
from tests.tools import missing

DSN = os.environ.get("TEST_POSTGRES_DSN")


@asynccontextmanager
async def postgres_database() -> AsyncIterator[str]:
    """A fresh database on the test server, dropped afterwards."""
    import asyncpg

    if DSN is None:
        missing("TEST_POSTGRES_DSN is not set (scripts/test sets it)")
    name = f"sayso_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(DSN)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield DSN.rsplit("/", 1)[0] + f"/{name}"
    finally:  # a test may have dropped it already (the store out of reach)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunStore]:
    """An open store of each backend; every contract test runs once on each."""
    if request.param == "memory":
        async with MemoryRunStore() as memory:
            yield memory
    elif request.param == "sqlite":
        async with SqlRunStore(f"sqlite:///{tmp_path / 'sayso.db'}") as sqlite:
            yield sqlite
    else:
        async with postgres_database() as url, SqlRunStore(url) as postgres:
            yield postgres
