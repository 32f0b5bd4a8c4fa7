"""A2A push notifications from two servers on one store: each task update reaches its receiver once, in order."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi import Body, FastAPI, Request, Response

from sayso import Approve, Sayso
from sayso.protocols.a2a import _push_delivery

from ..conftest import LiveServer
from .a2a_helpers import hitl, rpc, task_of, user_message
from .conftest import ServerFactory, example_config


async def test_two_servers_push_each_update_to_a_slow_receiver_once_and_in_order(
    serve: ServerFactory, sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The receiver takes 0.2 s a push and a push's timeout is made 0.25 s, so a claim (twice that and a second)
    covers a few pushes, not the batch: the sender keeps its claim while it works through it, and a task's later
    update waits while the other server still sends its earlier one."""
    monkeypatch.setattr(_push_delivery, "TIMEOUT_SECONDS", 0.25)
    monkeypatch.setattr(_push_delivery, "LEASE_SECONDS", 1.5)
    received: list[tuple[str, str, str]] = []
    app = FastAPI()

    @app.post("/hook")
    def hook(request: Request, body: dict[str, Any] = Body()) -> Response:  # noqa: B008 - FastAPI's way
        update = body["statusUpdate"]
        received.append((request.headers["webhook-id"], update["taskId"], update["status"]["state"]))
        time.sleep(0.2)  # the receiver's own work, in a thread of its own: pushes at once are taken at once
        return Response(status_code=200)

    receiver = LiveServer.in_thread(app)
    try:
        first = await serve(a2a={"push_private_urls": True})
        second = await serve(a2a={"push_private_urls": True})
        push = {"url": f"{receiver.base_url}/hook", "token": "tok"}
        async with first.client() as http:
            tasks = []
            for _ in range(12):
                params = {
                    "message": user_message("delete notes"),
                    "configuration": {"taskPushNotificationConfig": push},
                }
                tasks.append(task_of((await rpc(http, "files", "SendMessage", params)).json()))
        with anyio.fail_after(30):
            while len(received) < len(tasks):  # each paused task's update, before any is decided
                await anyio.sleep(0.05)
        async with Sayso(example_config()) as elsewhere:  # as the CLI: the servers find the updates by polling
            for task in tasks:
                await elsewhere.decide(hitl(task["status"]["message"])["tools"][0]["id"], Approve())
        with anyio.fail_after(30):
            while len({t for _, t, state in received if state == "TASK_STATE_COMPLETED"}) < len(tasks):
                await anyio.sleep(0.05)
        await anyio.sleep(2)  # a claim lapsing under a sender still at work would be taken again by now
        await first.stop()
        await second.stop()
    finally:
        receiver.stop()
    ids = [delivery for delivery, _, _ in received]
    assert len(ids) == len(set(ids))
    by_task: dict[str, list[str]] = {}
    for _, task_id, state in received:
        by_task.setdefault(task_id, []).append(state)
    assert all(states[-1] == "TASK_STATE_COMPLETED" and states.count(states[-1]) == 1 for states in by_task.values())
