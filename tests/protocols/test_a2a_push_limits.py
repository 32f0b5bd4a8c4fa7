"""A2A push notification configs have limits (docs/guides/a2a.md#tasks): a URL's length, no credentials in it, and a
few configs per task, since each one is delivered on every task update. Each refusal is invalid params saying why,
and nothing is stored."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from .a2a_helpers import rpc, send, task_of, user_message
from .conftest import ServerFactory


async def create(client: httpx.AsyncClient, task_id: str, url: str, config_id: str | None = None) -> Any:
    params = {"taskId": task_id, "url": url, "token": "tok"}
    if config_id is not None:
        params["id"] = config_id
    return (await rpc(client, "files", "CreateTaskPushNotificationConfig", params)).json()


async def listed(client: httpx.AsyncClient, task_id: str) -> list[str]:
    body = (await rpc(client, "files", "ListTaskPushNotificationConfigs", {"taskId": task_id})).json()
    return [c["url"] for c in body["result"].get("configs", [])]


def problem(body: dict[str, Any]) -> str:
    assert "error" in body, body
    assert body["error"]["code"] == -32602, body
    message: str = body["error"]["message"]
    return message


@pytest.mark.parametrize(
    ("url", "says"),
    [
        pytest.param("https://1.1.1.1/" + "a" * 200_000, "at most 2048 characters", id="200k-characters"),
        pytest.param("https://1.1.1.1/" + "a" * 2033, "at most 2048 characters", id="2049-characters"),
        pytest.param("https://user:pw@1.1.1.1/x", "must not carry credentials", id="user-and-password"),
        pytest.param("https://token@1.1.1.1/x", "must not carry credentials", id="user-only"),
    ],
)
async def test_a_push_url_too_long_or_with_credentials_is_refused_and_not_kept(
    serve: ServerFactory, sandbox: Path, url: str, says: str
) -> None:
    """A URL past 2048 characters, or with `user:password@` in it, is refused as invalid params; the task lists no
    config. Credentials belong in the config's `authentication`."""
    server = await serve()
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete notes")))
        assert says in problem(await create(client, task["id"], url))
        assert await listed(client, task["id"]) == []
        with_message = {"message": user_message("list"), "configuration": {"taskPushNotificationConfig": {"url": url}}}
        refused = (await rpc(client, "files", "SendMessage", with_message)).json()
        assert says in problem(refused)


async def test_a_url_of_2048_characters_is_taken(serve: ServerFactory, sandbox: Path) -> None:
    server = await serve()
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete notes")))
        url = "https://1.1.1.1/" + "a" * 2032
        assert len(url) == 2048
        assert "error" not in await create(client, task["id"], url)
        assert await listed(client, task["id"]) == [url]


async def test_a_task_keeps_at_most_ten_push_configs(serve: ServerFactory, sandbox: Path) -> None:
    """The eleventh config is refused and not kept (300 were once taken, each delivered on every update); replacing
    one by its id still works, and deleting one makes room."""
    server = await serve()
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete notes")))
        for n in range(10):
            assert "error" not in await create(client, task["id"], f"https://1.1.1.1/hook-{n}", f"c{n}")
        assert "the most it keeps (10)" in problem(await create(client, task["id"], "https://1.1.1.1/hook-10", "c10"))
        assert len(await listed(client, task["id"])) == 10
        assert "error" not in await create(client, task["id"], "https://1.1.1.1/hook-0-again", "c0")
        urls = await listed(client, task["id"])
        assert len(urls) == 10 and "https://1.1.1.1/hook-0-again" in urls
        deleted = await rpc(client, "files", "DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "c1"})
        assert "error" not in deleted.json()
        assert "error" not in await create(client, task["id"], "https://1.1.1.1/hook-10", "c10")
        assert len(await listed(client, task["id"])) == 10


async def test_configs_created_at_once_are_all_kept_up_to_the_limit(serve: ServerFactory, sandbox: Path) -> None:
    """Fourteen configs created at the same moment: ten are kept and four refused, none lost between them (each was
    once read, changed and written back, so two at once kept only one)."""
    server = await serve()
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete notes")))
        urls = [f"https://1.1.1.1/hook-{n}" for n in range(14)]
        bodies = await asyncio.gather(*(create(client, task["id"], url, f"c{n}") for n, url in enumerate(urls)))
        kept = await listed(client, task["id"])
    taken = [url for url, body in zip(urls, bodies, strict=True) if "error" not in body]
    assert len(taken) == 10 and sorted(kept) == sorted(taken)
    assert all("the most it keeps (10)" in problem(body) for body in bodies if "error" in body)
