"""A2A as the work goes on: text streamed as it is written, tasks returned at once and cancelled while working,
push notifications signed like webhooks, and approvals that carry edited arguments."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from a2a.types import (
    DeleteTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from fastapi import FastAPI, Request, Response
from standardwebhooks import Webhook, WebhookVerificationError

from sayso import Approve, Config, Sayso

from ..conftest import InProcess, LiveServer
from ..models import tool_model, verbs
from .a2a_helpers import collect, get_task, hitl, rpc, sdk_client, sdk_message, send, stream, task_of, user_message
from .conftest import ServerFactory, example_config, protocol_app

SAYSO_KEY = "https://sayso.dev/extensions/requests/v1"


# --- streaming (must hold 7)


async def test_a_stream_sends_the_text_once_in_one_artifact_the_task_keeps(serve: ServerFactory, sandbox: Path) -> None:
    """SendStreamingMessage sends a working task, then the answer as one artifact appended to in chunks as it is
    written, its last chunk marked, then the final status; `GetTask` shows that same artifact, with that text."""
    server = await serve()
    async with server.client() as client:
        _, events = await stream(client, user_message("list"))
        results = [e["result"] for e in events]
        assert results[0]["task"]["status"]["state"] == "TASK_STATE_WORKING"
        chunks = [r["artifactUpdate"] for r in results if "artifactUpdate" in r]
        assert len(chunks) > 2
        assert len({c["artifact"]["artifactId"] for c in chunks}) == 1
        assert not chunks[0].get("append") and all(c["append"] for c in chunks[1:])
        assert [bool(c.get("lastChunk")) for c in chunks] == [False] * (len(chunks) - 1) + [True]
        text = "".join(c["artifact"]["parts"][0]["text"] for c in chunks)
        final = results[-1]["statusUpdate"]["status"]
        assert final["state"] == "TASK_STATE_COMPLETED"
        assert text == final["message"]["parts"][0]["text"] and text.startswith("Files in the sandbox:")
        task = await get_task(client, results[-1]["statusUpdate"]["taskId"])
    (artifact,) = task["artifacts"]
    assert artifact["artifactId"] == chunks[0]["artifact"]["artifactId"]
    assert artifact["name"] == chunks[0]["artifact"]["name"]
    assert artifact["parts"] == [{"text": text}]


async def test_the_sdk_streaming_client_sees_the_text_chunks_and_the_pause(serve: ServerFactory, sandbox: Path) -> None:
    """The a2a-sdk's streaming client receives artifact updates while the run works and ends on its status."""
    server = await serve()
    async with server.client() as http:
        client = await sdk_client(http, streaming=True)
        events = await collect(client, sdk_message("list"))
        await client.close()
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and kinds[-1] == "status_update"
    assert kinds.count("artifact_update") > 2
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


# --- returned at once, cancelled while working (must hold 7)

started = anyio.Event()
release = anyio.Event()
stopped = anyio.Event()
exported: list[str] = []


async def export_report(name: str) -> str:
    """Export a report; takes as long as the test says."""
    started.set()
    try:
        await release.wait()
    except anyio.get_cancelled_exc_class():
        stopped.set()
        raise
    exported.append(name)
    return f"exported {name}"


@pytest.fixture
async def slow_server(tmp_path: Path) -> AsyncIterator[InProcess]:
    """An agent whose only tool works until the test releases it."""
    global started, release, stopped
    started, release, stopped = anyio.Event(), anyio.Event(), anyio.Event()
    exported.clear()
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'slow.db'}",
            "agents": {"reports": {"model": "m", "tools": [export_report]}},
            "a2a": {"push_private_urls": True},
            "base_dir": tmp_path,
        }
    )
    model = tool_model(verbs(export=("export_report", "name")), read="Done: {result}")
    served = await InProcess(app=protocol_app(sayso := Sayso(config, models={"m": model})), sayso=sayso).start()
    yield served
    release.set()
    await served.stop()


async def send_at_once(client: httpx.AsyncClient, text: str, **configuration: Any) -> dict[str, Any]:
    params = {"message": user_message(text), "configuration": {"returnImmediately": True, **configuration}}
    body = (await rpc(client, "reports", "SendMessage", params)).json()
    return task_of(body)


async def test_return_immediately_gives_the_working_task_which_finishes_later(slow_server: InProcess) -> None:
    """With `returnImmediately` the task comes back working; a later GetTask sees it completed."""
    async with slow_server.client() as client:
        task = await send_at_once(client, "export q3")
        assert task["status"]["state"] == "TASK_STATE_WORKING"
        assert task["history"][0]["parts"] == [{"text": "export q3"}]
        await started.wait()
        assert (await get_task_of(client, task["id"]))["status"]["state"] == "TASK_STATE_WORKING"
        release.set()
        done = await wait_for_state(client, task["id"], "TASK_STATE_COMPLETED")
    assert done["status"]["message"]["parts"] == [{"text": "Done: exported q3"}]


async def test_cancel_task_stops_a_working_task_and_nothing_more_runs(slow_server: InProcess) -> None:
    """CancelTask on a working task stops it: the task is canceled and its tool never finishes."""
    async with slow_server.client() as client:
        task = await send_at_once(client, "export q4")
        await started.wait()
        cancelled = (await rpc(client, "reports", "CancelTask", {"id": task["id"]})).json()["result"]
        assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
        with anyio.fail_after(10):
            await stopped.wait()  # the tool was cancelled while it worked
        release.set()
        assert (await get_task_of(client, task["id"]))["status"]["state"] == "TASK_STATE_CANCELED"
    assert exported == []


async def get_task_of(client: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    result: dict[str, Any] = (await rpc(client, "reports", "GetTask", {"id": task_id})).json()["result"]
    return result


async def wait_for_state(client: httpx.AsyncClient, task_id: str, state: str) -> dict[str, Any]:
    with anyio.fail_after(10):
        while (task := await get_task_of(client, task_id))["status"]["state"] != state:
            await anyio.sleep(0.05)
    return task


# --- push notifications (must hold 7)


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    """A webhook receiver on 127.0.0.1 that keeps every delivery (headers and body)."""
    received: list[tuple[dict[str, str], bytes]] = []
    app = FastAPI()

    @app.post("/hook")
    async def hook(request: Request) -> dict[str, str]:
        received.append((dict(request.headers), await request.body()))
        return {"ok": "yes"}

    server = LiveServer.in_thread(app)
    yield f"{server.base_url}/hook", received
    server.stop()


async def test_push_notifications_deliver_each_task_update_signed(
    slow_server: InProcess, receiver: tuple[str, list[tuple[dict[str, str], bytes]]]
) -> None:
    """A push config given with the message gets the task's updates, each signed with its token like a webhook."""
    url, received = receiver
    async with slow_server.client() as client:
        push = {"url": url, "token": "tok-7"}
        task = await send_at_once(client, "export q1", taskPushNotificationConfig=push)
        release.set()
        await wait_for_state(client, task["id"], "TASK_STATE_COMPLETED")
        with anyio.fail_after(10):
            while not received:
                await anyio.sleep(0.05)
    headers, body = received[-1]
    assert headers["x-a2a-notification-token"] == "tok-7"
    # A stock Standard Webhooks verifier accepts it, keyed by the token's bytes; another key is refused.
    update = Webhook(b"tok-7").verify(body, headers)["statusUpdate"]
    with pytest.raises(WebhookVerificationError):
        Webhook(b"another").verify(body, headers)
    assert update["taskId"] == task["id"] and update["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_push_configs_are_managed_with_the_sdk_client_and_refused_when_unsafe(
    serve: ServerFactory, sandbox: Path, receiver: tuple[str, list[tuple[dict[str, str], bytes]]]
) -> None:
    """The a2a-sdk's client creates, lists and deletes a task's push configs; one without a token, or aimed at a
    private address the server was not told to reach, is refused."""
    url, _ = receiver
    server = await serve(a2a={"push_private_urls": True})
    async with server.client() as http:
        task = task_of(await send(http, user_message("delete notes")))
        client = await sdk_client(http, streaming=False)
        made = await client.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id=task["id"], id="hook-1", url=url, token="tok")
        )
        assert made.task_id == task["id"] and made.id == "hook-1"
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task["id"])
        )
        assert [c.url for c in listed.configs] == [url]
        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task["id"], id="hook-1")
        )
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task["id"])
        )
        assert list(listed.configs) == []
        await client.close()
        unsigned = await rpc(http, "files", "CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": url})
        assert "token" in unsigned.json()["error"]["message"]
    strict = await serve()
    async with strict.client() as http:
        task = task_of(await send(http, user_message("delete notes")))
        inward = await rpc(
            http, "files", "CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": url, "token": "t"}
        )
    assert "public address" in inward.json()["error"]["message"]


@pytest.fixture
def flaky_receiver() -> Iterator[tuple[str, list[tuple[int, dict[str, str], bytes]]]]:
    """A receiver on 127.0.0.1 that answers 500 to the first attempt of every delivery, then takes it."""
    received: list[tuple[int, dict[str, str], bytes]] = []
    app = FastAPI()

    @app.post("/hook")
    async def hook(request: Request) -> Response:
        headers = dict(request.headers)
        seen = [r for r in received if r[1]["webhook-id"] == headers["webhook-id"]]
        status = 500 if not seen else 200
        received.append((status, headers, await request.body()))
        return Response(status_code=status)

    server = LiveServer.in_thread(app)
    yield f"{server.base_url}/hook", received
    server.stop()


@pytest.mark.parametrize("where", ["rest", "replica"])
async def test_a_task_decided_elsewhere_pushes_its_update_through_the_outbox_retried_under_one_delivery_id(
    serve: ServerFactory,
    sandbox: Path,
    flaky_receiver: tuple[str, list[tuple[int, dict[str, str], bytes]]],
    where: str,
) -> None:
    """A task paused over A2A and decided over REST (or by another runtime on the same store, a replica) pushes
    its COMPLETED update: from the outbox, retried after the receiver's 500, under the same delivery id."""
    url, received = flaky_receiver
    server = await serve(a2a={"push_private_urls": True})
    async with server.client() as http:
        push = {"url": url, "token": "tok-11"}
        params = {"message": user_message("delete notes"), "configuration": {"taskPushNotificationConfig": push}}
        task = task_of((await rpc(http, "files", "SendMessage", params)).json())
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        request_id = hitl(task["status"]["message"])["tools"][0]["id"]
        if where == "rest":
            decided = await http.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"})
            assert decided.status_code == 200, decided.text
        else:
            async with Sayso(example_config()) as replica:
                await replica.decide(request_id, Approve())
    with anyio.fail_after(20):
        while not [r for r in received if r[0] == 200 and _state(r[2]) == "TASK_STATE_COMPLETED"]:
            await anyio.sleep(0.05)
    attempts: dict[str, list[tuple[int, str]]] = {}
    for status, headers, body in received:
        attempts.setdefault(headers["webhook-id"], []).append((status, _state(body)))
    # The completion's delivery is tried again after the 500 under its own id. An earlier update (the pause) is
    # retried only while it is still the task's state, never sent stale.
    assert list(attempts.values())[-1] == [(500, "TASK_STATE_COMPLETED"), (200, "TASK_STATE_COMPLETED")]
    assert all({state for _, state in tries} == {"TASK_STATE_INPUT_REQUIRED"} for tries in list(attempts.values())[:-1])
    _, headers, body = received[-1]
    Webhook(b"tok-11").verify(body, headers)
    assert json.loads(body)["statusUpdate"]["taskId"] == task["id"]
    assert not (sandbox / "notes.txt").exists()


async def test_a_dead_push_config_is_retried_alone_and_the_healthy_one_gets_the_update_once(
    serve: ServerFactory, sandbox: Path
) -> None:
    """Of a task's two push configs, one answers 503 to everything: only it is tried again, under the same delivery
    id; the other took the update the first time and is not sent it again."""
    received: list[tuple[str, int, str, str]] = []
    app = FastAPI()

    @app.post("/{path}")
    async def hook(path: str, request: Request) -> Response:
        status = 200 if path == "good" else 503
        received.append((path, status, request.headers["webhook-id"], _state(await request.body())))
        return Response(status_code=status)

    receiver = LiveServer.in_thread(app)
    try:
        server = await serve(a2a={"push_private_urls": True})
        async with server.client() as http:
            push = {"url": f"{receiver.base_url}/good", "token": "tok-g"}
            params = {"message": user_message("delete notes"), "configuration": {"taskPushNotificationConfig": push}}
            task = task_of((await rpc(http, "files", "SendMessage", params)).json())
            second = {"taskId": task["id"], "id": "second", "url": f"{receiver.base_url}/down", "token": "tok-d"}
            made = await rpc(http, "files", "CreateTaskPushNotificationConfig", second)
            assert "result" in made.json(), made.text
            request_id = hitl(task["status"]["message"])["tools"][0]["id"]
            decided = await http.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"})
            assert decided.status_code == 200, decided.text
        with anyio.fail_after(20):  # the dead one is tried three times (backoff 1 s, then 2 s)
            while len([r for r in received if r[0] == "down" and r[3] == "TASK_STATE_COMPLETED"]) < 3:
                await anyio.sleep(0.05)
    finally:
        receiver.stop()
    completed = [(path, delivery) for path, _, delivery, state in received if state == "TASK_STATE_COMPLETED"]
    [delivery] = {delivery for _, delivery in completed}
    assert [path for path, _ in completed].count("good") == 1
    assert [path for path, _ in completed].count("down") >= 3
    assert all(d == delivery for _, d in completed)


def _state(body: bytes) -> str:
    state: str = json.loads(body)["statusUpdate"]["status"]["state"]
    return state


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data",
        "http://[fd00:ec2::254]/latest/meta-data",
        "http://[::ffff:169.254.169.254]/hook",
        "http://169.254.10.10/hook",
        "http://100.100.100.200/hook",
        "http://0.0.0.0/hook",
    ],
)
async def test_link_local_and_metadata_addresses_stay_refused_with_private_urls_on(
    serve: ServerFactory, sandbox: Path, url: str
) -> None:
    """`a2a.push_private_urls` opens loopback and private addresses, never link-local or cloud metadata ones."""
    server = await serve(a2a={"push_private_urls": True})
    async with server.client() as http:
        task = task_of(await send(http, user_message("delete notes")))
        refused = await rpc(
            http, "files", "CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": url, "token": "t"}
        )
    error = refused.json()["error"]
    assert error["code"] == -32602 and "not one this server may call" in error["message"]


async def test_a_push_connects_to_the_address_that_was_checked(
    slow_server: InProcess,
    receiver: tuple[str, list[tuple[dict[str, str], bytes]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DNS rebinding: the push host answers a loopback address while it is checked, then the metadata address.
    The delivery goes to the address that was checked (resolved once per delivery), never to the second answer."""
    url, received = receiver
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    real = socket.getaddrinfo
    answers: list[str] = []

    def rebinding(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in ("hooks.rebind.test", b"hooks.rebind.test"):
            return real(host, *args, **kwargs)
        answers.append("127.0.0.1" if len(answers) < 2 else "169.254.169.254")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[-1], port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    async with slow_server.client() as client:
        push = {"url": f"http://hooks.rebind.test:{port}/hook", "token": "tok-9"}
        task = await send_at_once(client, "export q2", taskPushNotificationConfig=push)
        release.set()
        await wait_for_state(client, task["id"], "TASK_STATE_COMPLETED")
        with anyio.fail_after(10):
            while not received:
                await anyio.sleep(0.05)
    headers, body = received[-1]
    assert headers["host"] == f"hooks.rebind.test:{port}"
    assert json.loads(body)["statusUpdate"]["taskId"] == task["id"]
    assert answers == ["127.0.0.1", "127.0.0.1"]  # once when the config was made, once for the delivery


# --- edited arguments under sayso's key (must hold 7)


async def test_an_approval_carries_edited_arguments_under_saysos_key_validated_as_over_rest(
    serve: ServerFactory, sandbox: Path
) -> None:
    """An approval with `edited_args` under sayso's metadata key runs the edited call; an edit that breaks the tool's
    schema, or comes with a rejection, is refused and the task still waits."""
    server = await serve()
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete notes")))
        tool_id = hitl(task["status"]["message"])["tools"][0]["id"]

        def approve(edit: dict[str, Any], approved: bool = True) -> dict[str, Any]:
            payload = {"type": "tool_approval_response", "approvals": [{"id": tool_id, "approved": approved}]}
            message = user_message(task_id=task["id"], context_id=task["contextId"], payload=payload)
            message["metadata"][SAYSO_KEY] = {"approvals": {tool_id: edit}}
            return message

        broken = (await send(client, approve({"edited_args": {"name": 3}})))["error"]
        assert broken["code"] == -32602 and "edited arguments are invalid" in broken["message"]
        rejected = (await send(client, approve({"edited_args": {"name": "todo.md"}}, approved=False)))["error"]
        assert "goes with an approval" in rejected["message"]
        assert (await get_task(client, task["id"]))["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        done = task_of(await send(client, approve({"edited_args": {"name": "todo.md"}})))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert (sandbox / "notes.txt").exists() and not (sandbox / "todo.md").exists()
    decision = done["history"][2]["metadata"][SAYSO_KEY]["decisions"][0]["decision"]
    assert decision == {"kind": "approve", "scope": "once", "edited_args": {"name": "todo.md"}}


async def test_a_push_token_that_cannot_sign_is_refused(
    serve: ServerFactory, sandbox: Path, receiver: tuple[str, list[tuple[dict[str, str], bytes]]]
) -> None:
    """A token that looks like a Standard Webhooks key (`whsec_`) but is no base64 could sign no delivery (and once
    stopped the server's pushes): it is refused as invalid params naming the token."""
    url, _ = receiver
    server = await serve(a2a={"push_private_urls": True})
    async with server.client() as http:
        task = task_of(await send(http, user_message("delete notes")))
        for token in ("whsec_a", "whsec_"):
            bad = {"taskId": task["id"], "url": url, "token": token}
            refused = (await rpc(http, "files", "CreateTaskPushNotificationConfig", bad)).json()
            assert refused["error"]["code"] == -32602, refused
            assert "'token' cannot sign its deliveries" in refused["error"]["message"]
        good = {"taskId": task["id"], "url": url, "token": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
        assert "error" not in (await rpc(http, "files", "CreateTaskPushNotificationConfig", good)).json()
