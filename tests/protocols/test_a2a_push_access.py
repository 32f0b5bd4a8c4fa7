"""A2A push notifications go only to who may see the task when it changes (docs/guides/a2a.md#tasks).

An approver named by a routed rule sees the owner's task only while it waits on them. A push config
they made then must not keep sending them the task's later updates once they can no longer read it:
`GetTask` answers them "no task has id", and so must the pushes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi import FastAPI, Request, Response

from ..conftest import LiveServer
from .a2a_helpers import hitl, rpc, task_of, user_message
from .conftest import ServerFactory, example_config

PRINCIPALS = [{"name": "alice", "token": "alice-token"}, {"name": "carol", "token": "carol-token"}]

Received = list[tuple[str, str]]
"""(path, task state) of every delivery, in the order they came."""


@pytest.fixture
def receiver() -> Iterator[tuple[str, Received]]:
    """A receiver on 127.0.0.1 keeping each delivery's path and state; alice's first completion gets a 500.

    A retry goes only to the configs that failed the first attempt, and starts once every config of that
    attempt was posted to: when alice's retry arrives, carol's receiver has had all it would ever get.
    """
    received: Received = []
    app = FastAPI()

    @app.post("/{who}")
    async def hook(who: str, request: Request) -> Response:
        state = json.loads(await request.body())["statusUpdate"]["status"]["state"]
        first = (who, state) not in received
        received.append((who, state))
        fail = who == "alice" and state == "TASK_STATE_COMPLETED" and first
        return Response(status_code=500 if fail else 200)

    server = LiveServer.in_thread(app)
    yield server.base_url, received
    server.stop()


async def test_a_routed_approver_gets_no_push_once_the_task_is_no_longer_theirs_to_see(
    serve: ServerFactory, sandbox: Path, receiver: tuple[str, Received]
) -> None:
    base, received = receiver
    files = example_config().model_dump()["agents"]["files"]
    files["interrupt"]["tools"] = [{"name": "delete_file", "approvers": ["carol"]}]
    config = example_config(principals=PRINCIPALS, agents={"files": files}, a2a={"push_private_urls": True})
    server = await serve(config=config)
    async with server.client("alice-token") as alice, server.client("carol-token") as carol:
        push: dict[str, Any] = {"url": f"{base}/alice", "token": "alice-tok"}
        params = {"message": user_message("delete notes"), "configuration": {"taskPushNotificationConfig": push}}
        task = task_of((await rpc(alice, "files", "SendMessage", params)).json())
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        # While the task waits on carol she reads it, and may ask for its updates.
        assert "result" in (await rpc(carol, "files", "GetTask", {"id": task["id"]})).json()
        theirs = {"taskId": task["id"], "id": "carol", "url": f"{base}/carol", "token": "carol-tok"}
        made = (await rpc(carol, "files", "CreateTaskPushNotificationConfig", theirs)).json()
        assert "result" in made, made
        request_id = hitl(task["status"]["message"])["tools"][0]["id"]
        decided = await carol.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"})
        assert decided.status_code == 200, decided.text
        with anyio.fail_after(20):
            while received.count(("alice", "TASK_STATE_COMPLETED")) < 2:
                await anyio.sleep(0.05)
        gone = (await rpc(carol, "files", "GetTask", {"id": task["id"]})).json()
    assert "no task has id" in gone["error"]["message"]
    assert ("carol", "TASK_STATE_COMPLETED") not in received
    assert not (sandbox / "notes.txt").exists()
