"""A model that asks for thousands of gated calls in one answer: one pause of thousands of requests, on both databases.

PostgreSQL takes at most 32,767 parameters in one statement, and the store sends a pause's writes
together: a pause of 3,000 requests once failed there with a database error (and 1,200 took ~17 s
to save, numbering its parameters by a scan each).
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from sayso import Reject, Sayso
from sayso._config.file import Config

from ..models import calls_then_reply
from .conftest import postgres_database

CALLS = 3000
DELETE = "tests.tools:delete_file"


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_pause_of_three_thousand_requests_is_saved_listed_and_decided(
    monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    async with AsyncExitStack() as stack:
        if backend == "postgres":  # else the test's own SQLite file
            monkeypatch.setenv("SAYSO_STORE", await stack.enter_async_context(postgres_database()))
        config = Config.model_validate(
            {
                "agents": {"files": {"model": "m", "tools": [DELETE], "interrupt": {"tools": ["delete_file"]}}},
                "base_dir": Path(__file__).parents[2],
            }
        )
        model = calls_then_reply(*[("delete_file", {"name": f"f-{n}"}) for n in range(CALLS)], reply="done")
        app = await stack.enter_async_context(Sayso(config, models={"m": model}))
        paused = await app.run("delete them all")
        assert paused.status == "paused" and len(paused.requests) == CALLS
        assert {r.args["name"] for r in paused.requests} == {f"f-{n}" for n in range(CALLS)}
        listed = []
        page = await app.inbox(limit=500)
        listed.extend(page.requests)
        while page.next_cursor is not None:
            page = await app.inbox(limit=500, cursor=page.next_cursor)
            listed.extend(page.requests)
        assert sorted(r.request_id for r in listed) == sorted(r.request_id for r in paused.requests)
        first = paused.requests[0]
        decided = await app.decide(first.request_id, Reject(reason="not that one"))
        assert decided.run.status == "paused" and len(decided.run.requests) == CALLS - 1
