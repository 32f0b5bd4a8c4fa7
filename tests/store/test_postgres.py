"""The same runtime on PostgreSQL (docs/concepts/durability.md#stores): migrations, the cycle, first-wins, nesting and
the audit chain.

The test command starts a throwaway server and sets `TEST_POSTGRES_DSN`; without it these are skipped.
"""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from sayso import AlreadyDecided, Approve, Config, Reject, Sayso

from ..conftest import resume_at_once
from ..models import Said, tool_model, verbs
from ..tools import delete_file, deleted

DSN = os.environ.get("TEST_POSTGRES_DSN")
pytestmark = pytest.mark.skipif(DSN is None, reason="TEST_POSTGRES_DSN is not set (scripts/test sets it)")


def route(said: str) -> Said:
    """`delete NAME` deletes a file, `both` deletes `a` and `b` at once, `team` asks the `files` delegate."""
    if said == "both":
        return [("delete_file", {"name": "a"}), ("delete_file", {"name": "b"})]
    if said == "team":
        return "files", {"task": "delete x"}
    return verbs(delete=("delete_file", "name"))(said)


def read(tool: str, result: str) -> str:
    """The model says what each call returned, with the tool's name (the delegate's answer as the team's)."""
    return f"team: {result}" if tool == "files" else f"{tool}: {result}"


@pytest.fixture
async def database() -> AsyncIterator[str]:
    """A fresh database on the test server, dropped afterwards."""
    import asyncpg

    assert DSN is not None
    name = f"sayso_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(DSN)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield DSN.rsplit("/", 1)[0] + f"/{name}"
    finally:
        await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        await admin.close()


def app_on(url: str, tmp_path: Path) -> Sayso:
    config = Config.model_validate(
        {
            "store": url,
            "agents": {
                "files": {
                    "model": "m",
                    "tools": [delete_file],
                    "interrupt": {"tools": [{"name": "delete_file", "remember": "always"}]},
                },
                "lead": {"model": "m", "delegates": [{"agent": "files"}]},
            },
            "base_dir": tmp_path,
        }
    )
    return Sayso(config, models={"m": tool_model(route, read=read)})


@pytest.fixture(autouse=True)
def no_sqlite_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAYSO_STORE", raising=False)


async def test_pause_decide_resume_and_grants_on_postgres(database: str, tmp_path: Path) -> None:
    """On PostgreSQL a gated call pauses until approved, and an `always` grant lets the next such call run unasked."""
    async with app_on(database, tmp_path) as app:
        paused = await app.run("delete notes", agent="files")
        [request] = paused.requests
        done = await app.decide(request.request_id, Approve(scope="always"))
        covered = await app.run("delete todo", agent="files")
        assert await app.verify_audit() is None
        assert [g.tool for g in await app.grants()] == ["delete_file"]
    assert done.run.output == "delete_file: deleted notes"
    assert covered.status == "completed"
    assert deleted() == ["notes", "todo"]


async def test_a_fresh_process_resumes_what_another_paused(database: str, tmp_path: Path) -> None:
    """Another process can decide a pause, a second decision on a request is refused, and only approved calls run."""
    async with app_on(database, tmp_path) as first:
        paused = await first.run("both", agent="files")
    async with app_on(database, tmp_path) as second:
        a, b = paused.requests
        await second.decide(a.request_id, Reject(reason="keep a"))
        with pytest.raises(AlreadyDecided):
            await second.decide(a.request_id, Approve())
        done = await second.decide(b.request_id, Approve())
    assert done.run.output == "delete_file: Declined: keep a\ndelete_file: deleted b"
    assert deleted() == ["b"]


async def test_concurrent_resumes_run_the_pause_once(database: str, tmp_path: Path) -> None:
    """Two runtimes resuming the same approved pause at once run the gated call only once, the other being refused."""
    async with app_on(database, tmp_path) as a, app_on(database, tmp_path) as b:
        paused = await a.run("delete x", agent="files")
        await a.decide(paused.requests[0].request_id, Approve(), resume=False)
        outcomes = await resume_at_once([a, b], paused.run_id)
    assert len(outcomes) == 2
    assert sum(1 for o in outcomes if not isinstance(o, Exception)) == 1
    assert deleted() == ["x"]


async def test_nested_pause_on_postgres(database: str, tmp_path: Path) -> None:
    """A delegate's gated call pauses the lead's run under the nested agent path, and approving it completes the run."""
    async with app_on(database, tmp_path) as app:
        paused = await app.run("team", agent="lead")
        [request] = paused.requests
        assert request.agent_path == "lead/files"
        done = await app.decide(request.request_id, Approve())
    assert done.run.output == "team: delete_file: deleted x"


async def test_replicas_opening_a_new_database_together_migrate_it_once() -> None:
    """Several stores opening one empty database at the same moment all come up: one migrates, the others wait."""
    import anyio

    from sayso._store import SqlRunStore

    from .conftest import postgres_database

    async with postgres_database() as url:
        stores = [SqlRunStore(url) for _ in range(4)]
        try:
            async with anyio.create_task_group() as tg:
                for store in stores:
                    tg.start_soon(store.open)
            for store in stores:
                await store.ping()
        finally:
            for store in stores:
                await store.aclose()


async def decide(app: Sayso, *, request_id: str, decision: Approve | Reject) -> object:
    return await app.decide(request_id, decision)


async def force(app: Sayso, *, run_id: str) -> object:
    return await app.resume(run_id, force=True)


async def cancel(app: Sayso, *, run_id: str) -> object:
    return await app.cancel(run_id)


async def message(app: Sayso, *, thread_id: str) -> object:
    return await app.run("delete c", thread_id=thread_id, agent="files")


async def test_racing_deciders_get_a_conflict_or_success_never_a_database_error(database: str, tmp_path: Path) -> None:
    """Six runtimes race on each pause of two requests: approving either, forcing the resume, cancelling, or
    sending a new message. The first audit record of a fresh database too: every racer gets a result or a
    conflict (409 over REST), never `StoreError: deadlock detected`, and each call ran at most once."""
    from sayso import RunConflict, StoreError
    from sayso.exceptions import DecisionRefused

    apps = [app_on(database, tmp_path) for _ in range(6)]
    for app in apps:
        await app.__aenter__()
    raw: list[BaseException] = []
    try:
        for _ in range(8):
            before = len(deleted())
            paused = await apps[0].run("both", agent="files")
            first, second = (r.request_id for r in paused.requests)
            run_id, thread_id = paused.run_id, paused.thread_id
            racers: list[Callable[[Sayso], Awaitable[object]]] = [
                functools.partial(decide, request_id=first, decision=Approve()),
                functools.partial(decide, request_id=second, decision=Approve()),
                functools.partial(decide, request_id=second, decision=Reject(reason="no")),
                functools.partial(force, run_id=run_id),
                functools.partial(cancel, run_id=run_id),
                functools.partial(message, thread_id=thread_id),
            ]

            async def race(app: Sayso, act: Any) -> None:
                try:
                    await act(app)
                except (RunConflict, DecisionRefused):
                    pass  # a conflict: the 409 a REST client would get
                except StoreError as exc:
                    raw.append(exc)

            async with anyio.create_task_group() as tg:
                for app, act in zip(apps, racers, strict=True):
                    tg.start_soon(race, app, act)
            this_round = deleted()[before:]
            assert this_round.count("a") <= 1 and this_round.count("b") <= 1
    finally:
        for app in apps:
            await app.__aexit__(None, None, None)
    assert raw == [], [str(e)[:120] for e in raw]
