"""A2A (and REST) while the store does not answer: "unavailable, try again" in each one's terms, never a database error.

The store here is a PostgreSQL database dropped under a running server (what a stopped or
unreachable server looks like to sayso: a `StoreError`). REST answers that with a 503 naming the
store, in the same words; A2A has no such error, so JSON-RPC answers the SDK's nearest (-32603, the service named in
its ErrorInfo) and gRPC answers `UNAVAILABLE`, which gRPC clients know to retry.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import grpc
import grpc.aio
import pytest
from a2a.types import GetTaskRequest, SendMessageRequest, a2a_pb2_grpc

from sayso import Sayso
from sayso.protocols.a2a import a2a_router
from sayso.server import create_app

from ..conftest import InProcess, free_port
from ..store.conftest import postgres_database
from .a2a_helpers import HEADERS, rpc, send, task_of, user_message
from .conftest import example_config
from .test_a2a_grpc import HITL_METADATA, message

UNAVAILABLE = "unavailable: sayso's store did not answer; try again once it does"


@dataclass
class Down:
    """A server of the example whose PostgreSQL database is gone, and a task it paused before that."""

    server: InProcess
    grpc_port: int
    task_id: str
    database: str


@pytest.fixture
async def down(sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Down]:
    import asyncpg

    async with postgres_database() as url:
        monkeypatch.setenv("SAYSO_STORE", url)
        port = free_port()
        sayso = Sayso(example_config())
        app = create_app(sayso, routers=[a2a_router(sayso, grpc_port=port)], expire_every_seconds=None)
        server = await InProcess(app=app, sayso=sayso).start()
        try:
            async with server.client() as http:
                task = task_of(await send(http, user_message("delete notes")))
            name = url.rsplit("/", 1)[1]
            admin = await asyncpg.connect(os.environ["TEST_POSTGRES_DSN"])
            await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            await admin.close()
            yield Down(server=server, grpc_port=port, task_id=task["id"], database=name)
        finally:
            await server.stop()


def assert_unavailable(error: dict[str, Any], database: str) -> None:
    assert error["code"] == -32603, error  # a2a-sdk has no "unavailable" error: its internal error is the nearest
    assert UNAVAILABLE in error["message"], error
    assert database not in error["message"] and "database error" not in error["message"]
    [info] = error["data"]
    assert info["metadata"] == {"unavailable": "store"}


async def test_json_rpc_says_the_store_is_unavailable_and_to_try_again(
    down: Down, caplog: pytest.LogCaptureFixture
) -> None:
    """GetTask, SendMessage (a new task, and an answer to the paused one) and SendStreamingMessage: each names the
    store as unavailable and says to try again, not the database's own error (which named the database): that is
    in the server's log."""
    approve = {"type": "tool_approval_response", "approvals": [{"id": "req_any", "approved": True}]}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("GetTask", {"id": down.task_id}),
        ("SendMessage", {"message": user_message("list")}),
        ("SendMessage", {"message": user_message(task_id=down.task_id, payload=approve)}),
    ]
    async with down.server.client() as http:
        for method, params in calls:
            response = await rpc(http, "files", method, params)
            assert response.status_code == 200
            assert_unavailable(response.json()["error"], down.database)
        params = {"message": user_message("list")}
        body = {"jsonrpc": "2.0", "id": "s1", "method": "SendStreamingMessage", "params": params}
        streamed = await http.post("/a2a/files", json=body, headers=HEADERS)
    assert_unavailable(streamed.json()["error"], down.database)
    said = [r.getMessage() for r in caplog.records if r.name == "sayso.a2a"]
    assert len(said) == 4 and all(f'database "{down.database}" does not exist' in line for line in said), said


async def test_grpc_answers_unavailable(down: Down) -> None:
    """Over gRPC the status is UNAVAILABLE (clients retry it), with the same words as JSON-RPC."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{down.grpc_port}") as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
        refusals: list[grpc.aio.AioRpcError] = []
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.GetTask(GetTaskRequest(tenant="kagent/files", id=down.task_id), metadata=HITL_METADATA)
        refusals.append(caught.value)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.SendMessage(SendMessageRequest(tenant="kagent/files", message=message("list")))
        refusals.append(caught.value)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            request = SendMessageRequest(tenant="kagent/files", message=message("list"))
            _ = [event async for event in stub.SendStreamingMessage(request, metadata=HITL_METADATA)]
        refusals.append(caught.value)
    for refused in refusals:
        assert refused.code() == grpc.StatusCode.UNAVAILABLE, refused
        details = refused.details() or ""
        assert UNAVAILABLE in details and down.database not in details


async def test_rest_answers_503_with_the_same_words_and_logs_the_databases_error(
    down: Down, caplog: pytest.LogCaptureFixture
) -> None:
    """The inbox and a new run: a 503 `store-unavailable` problem saying to try again, in A2A's words; the database's
    own error (which named the database) goes to the server's log."""
    async with down.server.client() as http:
        answers = [await http.get("/v1/requests"), await http.post("/v1/runs", json={"message": "list"})]
    for answered in answers:
        assert answered.status_code == 503, answered.text
        problem = answered.json()
        assert problem["type"].endswith("store-unavailable") and problem["title"] == "Store unavailable"
        assert problem["detail"] == UNAVAILABLE.removeprefix("unavailable: ")
        assert down.database not in answered.text
    logged = [r for r in caplog.records if r.name == "sayso.server"]
    assert len(logged) == 2, logged
    assert all(r.exc_info is not None and down.database in str(r.exc_info[1]) for r in logged), logged


async def test_a_store_away_for_seconds_is_logged_once_as_it_starts_and_once_as_it_ends(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The push dispatcher polls the outbox every second: while the database refuses connections its log shows the
    failure once, with its traceback, not once a second, and then that pushes work again."""
    import asyncpg

    caplog.set_level(logging.INFO, logger="sayso")
    async with postgres_database() as url:
        monkeypatch.setenv("SAYSO_STORE", url)
        name = url.rsplit("/", 1)[1]
        sayso = Sayso(example_config())
        app = create_app(sayso, routers=[a2a_router(sayso)], expire_every_seconds=None)
        server = await InProcess(app=app, sayso=sayso).start()
        admin = await asyncpg.connect(os.environ["TEST_POSTGRES_DSN"])
        try:
            await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name)
            await anyio.sleep(4.5)  # four polls or more, all failing
            await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            with anyio.fail_after(10):
                while not [r for r in caplog.records if r.name == "sayso.a2a.push" and "works again" in r.getMessage()]:
                    await anyio.sleep(0.2)
        finally:
            await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            await admin.close()
            await server.stop()
    pushes = [r for r in caplog.records if r.name == "sayso.a2a.push"]
    *failures, works = pushes
    errors = [str(r.exc_info[1]) for r in failures if r.exc_info is not None]
    assert len(errors) == len(failures) and len(set(errors)) == len(errors), errors  # each error told once
    assert {r.getMessage() for r in failures} == {"reading the outbox for A2A pushes failed; retrying every 1.0s"}
    said = works.getMessage()
    attempts = int(said.split("after ")[1].split(" ")[0])
    assert said.startswith("reading the outbox for A2A pushes works again") and attempts >= 4 > len(failures), said
