"""`GET /v1/events` while the store does not answer: a 503 problem before the stream starts, a clean end once it runs.

The store is a PostgreSQL database dropped under a running server (what a stopped or unreachable
server looks like to sayso). Every other endpoint answers that with a 503 `store-unavailable`
problem; the live stream does too when its first look fails, and a stream already open says
`error` (the same problem) and `end`, then closes: never a 200 that breaks, never a traceback.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from sayso import Sayso, load_config
from sayso.server import create_app

from ..conftest import LiveServer
from ..store.conftest import postgres_database
from .test_live import FAST, files_example

UNAVAILABLE = "sayso's store did not answer; try again once it does"


async def _drop(url: str) -> None:
    import asyncpg

    admin = await asyncpg.connect(os.environ["TEST_POSTGRES_DSN"])
    await admin.execute(f'DROP DATABASE "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    await admin.close()


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """The events of an open stream, as they come, until it closes."""
    name, data = "message", ""
    async for line in lines:
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data += line[6:]
        elif line == "" and data:
            yield name, json.loads(data)
            name, data = "message", ""


@contextmanager
def _asgi_errors() -> Iterator[list[logging.LogRecord]]:
    """What the ASGI server logs as an error (uvicorn's `Exception in ASGI application`): its logger keeps to itself."""

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            kept.append(record)

    kept: list[logging.LogRecord] = []
    handler = Keep(level=logging.ERROR)
    logging.getLogger("uvicorn.error").addHandler(handler)
    try:
        yield kept
    finally:
        logging.getLogger("uvicorn.error").removeHandler(handler)


async def test_the_live_stream_ends_cleanly_when_the_store_goes_and_is_503_while_it_is_gone(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An open stream whose store goes says `error` (a `store-unavailable` problem) and `end`, then closes; a
    stream asked for while the store is gone is a 503 `store-unavailable` problem, as every other endpoint."""
    async with postgres_database() as url:
        monkeypatch.setenv("SAYSO_STORE", url)
        server = LiveServer.in_thread(
            create_app(Sayso(load_config(files_example(workdir))), expire_every_seconds=None, live=FAST)
        )
        try:
            with _asgi_errors() as errors:
                async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as client:
                    async with client.stream("GET", "/v1/events") as response:
                        events = _events(response.aiter_lines())
                        assert (await anext(events))[0] == "ready"
                        await _drop(url)
                        seen = [event async for event in events]
                    refused = await client.get("/v1/events")
        finally:
            server.stop()
    assert [name for name, _ in seen] == ["error", "end"], seen
    problem, end = seen[0][1], seen[1][1]
    assert (problem["type"].rsplit("/", 1)[1], problem["status"], problem["detail"]) == (
        "store-unavailable",
        503,
        UNAVAILABLE,
    )
    assert end == {"reconnect": True}
    assert (refused.status_code, refused.headers["content-type"]) == (503, "application/problem+json")
    assert refused.json()["type"].endswith("store-unavailable") and refused.json()["detail"] == UNAVAILABLE
    assert errors == []
