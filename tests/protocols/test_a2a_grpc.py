"""A2A over gRPC (issue 23, point 1): `lf.a2a.v1.A2AService`, the agent named in `tenant`, kagent's HITL.

The same handlers as JSON-RPC, so a task is the same on both: its pause and payload, a refusal,
its history; the caller is the bearer token in the call's metadata, as over HTTP.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.types import GetTaskRequest, ListTasksRequest, Message, Part, Role, SendMessageRequest, TaskState, a2a_pb2_grpc
from google.protobuf.json_format import MessageToDict
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from sayso import Config, Sayso, load_config
from sayso.protocols.a2a import a2a_router
from sayso.server import create_app

from ..conftest import InProcess, LiveServer, free_port
from ..models import tool_model, verbs
from . import transfer_tools
from .a2a_helpers import HEADERS, SAYSO_KEY, URI, collect, get_task, sdk_message
from .conftest import EXAMPLE, example_config, protocol_app

Served = tuple[InProcess, int]


@pytest.fixture
async def grpc_serve() -> AsyncIterator[Callable[..., Awaitable[Served]]]:
    started: list[InProcess] = []

    async def start(**overrides: Any) -> Served:
        port = free_port()
        sayso = Sayso(example_config(**overrides))
        app = create_app(sayso, routers=[a2a_router(sayso, grpc_port=port)], expire_every_seconds=None)
        served = await InProcess(app=app, sayso=sayso).start()
        started.append(served)
        return served, port

    yield start
    for served in started:
        await served.stop()


def message(
    text: str | None = None, *, task: Any = None, payload: dict[str, Any] | None = None, extras: Any = None
) -> Message:
    out = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER)
    if text is not None:
        out.parts.append(Part(text=text))
    if task is not None:
        out.task_id, out.context_id = task.id, task.context_id
    if payload is not None:
        out.extensions.append(URI)
        out.metadata.update({URI: payload})
    if extras is not None:
        out.metadata.update({SAYSO_KEY: extras})
    return out


HITL_METADATA = (("a2a-extensions", URI),)


async def test_the_sdks_grpc_client_pauses_and_approves_and_the_task_is_the_same_over_json_rpc(
    grpc_serve: Callable[..., Awaitable[Served]], sandbox: Path
) -> None:
    """The card offers gRPC with the tenant; a2a-sdk's gRPC transport streams the pause with kagent's payload and
    approves it; JSON-RPC reads the very same task, payload and history."""
    server, port = await grpc_serve()
    async with server.client() as http:
        card = (await http.get("/a2a/files/.well-known/agent-card.json")).json()
        grpc_interface = next(i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC")
        assert grpc_interface == {
            "url": f"127.0.0.1:{port}",
            "protocolBinding": "GRPC",
            "tenant": "kagent/files",
            "protocolVersion": "1.0",
        }
        config = ClientConfig(
            streaming=True,
            httpx_client=http,
            supported_protocol_bindings=["GRPC"],
            grpc_channel_factory=grpc.aio.insecure_channel,
        )
        client = await create_client(f"{http.base_url}/a2a/files", client_config=config)
        [*_, last] = await collect(client, sdk_message("delete notes"))
        update = last.status_update
        assert update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        asked = MessageToDict(update.status.message)
        [tool] = asked["metadata"][URI]["tools"]
        assert (tool["name"], tool["args"]) == ("delete_file", {"name": "notes.txt"})

        over_http = await get_task(http, update.task_id)
        assert over_http["status"]["message"]["metadata"][URI] == asked["metadata"][URI]

        answer = {"type": "tool_approval_response", "approvals": [{"id": tool["id"], "approved": True}]}
        request = sdk_message(task_id=update.task_id, context_id=update.context_id, payload=answer)
        [*_, done] = await collect(client, request)
        assert done.status_update.status.state == TaskState.TASK_STATE_COMPLETED
        task = await client.get_task(GetTaskRequest(id=update.task_id), context=ClientCallContext())
        await client.close()
        read = await get_task(http, update.task_id)
    assert MessageToDict(task)["history"] == read["history"]
    assert not (sandbox / "notes.txt").exists()


async def test_raw_grpc_calls_name_the_agent_by_tenant_and_get_the_echo_and_the_refusals(
    grpc_serve: Callable[..., Awaitable[Served]], sandbox: Path
) -> None:
    """grpcurl's call as kagent documents it: `tenant` `kagent/files`, the extension in metadata (echoed); without it
    the pause is text only; a wrong answer is INVALID_ARGUMENT and the task still waits; a wrong tenant NOT_FOUND."""
    _, port = await grpc_serve()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
        call = stub.SendMessage(
            SendMessageRequest(tenant="kagent/files", message=message("delete notes")), metadata=HITL_METADATA
        )
        task = (await call).task
        assert ("a2a-extensions", URI) in list(await call.trailing_metadata() or ())
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        [tool] = MessageToDict(task.status.message)["metadata"][URI]["tools"]

        plain = stub.SendMessage(SendMessageRequest(tenant="kagent/files", message=message("delete notes")))
        quiet = (await plain).task.status.message
        assert not quiet.extensions and URI not in MessageToDict(quiet).get("metadata", {})
        assert ("a2a-extensions", URI) not in list(await plain.trailing_metadata() or ())

        wrong = {"type": "tool_approval_response", "approvals": [{"id": "req_nope", "approved": True}]}
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.SendMessage(
                SendMessageRequest(tenant="kagent/files", message=message(task=task, payload=wrong)),
                metadata=HITL_METADATA,
            )
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "missing ids" in (refused.value.details() or "")
        still = await stub.GetTask(GetTaskRequest(tenant="kagent/files", id=task.id))
        assert still.status.state == TaskState.TASK_STATE_INPUT_REQUIRED

        approved = {"type": "tool_approval_response", "approvals": [{"id": tool["id"], "approved": True}]}
        misspelled = {"approvals": {tool["id"]: {"edited_arg": {"name": "todo.md"}}}}  # once ignored: ran unedited
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.SendMessage(
                SendMessageRequest(
                    tenant="kagent/files", message=message(task=task, payload=approved, extras=misspelled)
                ),
                metadata=HITL_METADATA,
            )
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "'edited_arg'" in (refused.value.details() or "")
        still = await stub.GetTask(GetTaskRequest(tenant="kagent/files", id=task.id))
        assert still.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert (sandbox / "notes.txt").exists()

        for tenant in ("default/files", "kagent/nobody"):
            with pytest.raises(grpc.aio.AioRpcError) as unknown:
                await stub.GetTask(GetTaskRequest(tenant=tenant, id=task.id))
            assert unknown.value.code() == grpc.StatusCode.NOT_FOUND

        right = {"type": "tool_approval_response", "approvals": [{"id": tool["id"], "approved": True}]}
        stream = stub.SendStreamingMessage(
            SendMessageRequest(tenant="kagent/files", message=message(task=task, payload=right)),
            metadata=HITL_METADATA,
        )
        events = [event async for event in stream]
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert not (sandbox / "notes.txt").exists()


async def test_list_tasks_over_grpc_refuses_an_unknown_status(grpc_serve: Callable[..., Awaitable[Served]]) -> None:
    """A status number no task state has is INVALID_ARGUMENT naming it and the states accepted, not every task."""
    server, port = await grpc_serve()
    await server.sayso.run("list")
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
        listed = await stub.ListTasks(ListTasksRequest(tenant="kagent/files"))
        assert len(listed.tasks) == 1
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.ListTasks(ListTasksRequest(tenant="kagent/files", status=42))  # type: ignore[arg-type]
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "42" in (refused.value.details() or "") and "TASK_STATE_WORKING" in (refused.value.details() or "")


async def test_reflection_lists_the_service_for_grpcurl(grpc_serve: Callable[..., Awaitable[Served]]) -> None:
    """grpcurl, as kagent's docs call it, needs no proto files: the server answers reflection."""
    _, port = await grpc_serve()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub: Any = reflection_pb2_grpc.ServerReflectionStub(channel)  # type: ignore[arg-type]
        asked = reflection_pb2.ServerReflectionRequest(list_services="")
        [answer] = [r async for r in stub.ServerReflectionInfo(iter([asked]))]
    assert "lf.a2a.v1.A2AService" in [s.name for s in answer.list_services_response.service]


PRINCIPALS = [{"name": "alice", "token": "alice-token"}, {"name": "bob", "token": "bob-token"}]


async def test_the_bearer_token_in_metadata_is_the_caller(grpc_serve: Callable[..., Awaitable[Served]]) -> None:
    """No token (or a wrong one) is UNAUTHENTICATED; another principal's task is not found, as over HTTP."""
    server, port = await grpc_serve(principals=PRINCIPALS)
    alice = (("authorization", "Bearer alice-token"), *HITL_METADATA)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
        for metadata in ((), (("authorization", "Bearer wrong"),)):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.SendMessage(
                    SendMessageRequest(tenant="kagent/files", message=message("list")), metadata=metadata
                )
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert (refused.value.details() or "").startswith(("a bearer token is required", "the bearer token names"))
        task = (
            await stub.SendMessage(
                SendMessageRequest(tenant="kagent/files", message=message("delete notes")), metadata=alice
            )
        ).task
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        with pytest.raises(grpc.aio.AioRpcError) as hidden:
            await stub.GetTask(
                GetTaskRequest(tenant="kagent/files", id=task.id), metadata=(("authorization", "Bearer bob-token"),)
            )
        assert hidden.value.code() == grpc.StatusCode.NOT_FOUND
    async with server.client("alice-token") as http:
        read = await get_task(http, task.id, HEADERS)
    assert read["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_a_remote_delegate_over_grpc_with_a_wrong_token_fails_as_refused(
    grpc_serve: Callable[..., Awaitable[Served]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """UNAUTHENTICATED from the child is a refusal: nothing started there, and the parent's model reads it so, not as
    an outcome it cannot know."""
    _, port = await grpc_serve(principals=PRINCIPALS)
    monkeypatch.setenv("FILES_TOKEN", "wrong")
    delegate = {"a2a": f"grpc://127.0.0.1:{port}/kagent/files", "name": "files", "token_env": "FILES_TOKEN"}
    config = {
        "store": f"sqlite:///{tmp_path / 'parent.db'}",
        "agents": {"coordinator": {"model": "c", "delegates": [delegate]}},
    }
    model = tool_model(verbs(tidy=("files", "task")), read="files said: {result}")
    async with Sayso(Config.model_validate(config), models={"c": model}) as parent:
        done = await parent.run("tidy delete notes", agent="coordinator")
    assert done.output is not None
    assert done.output.startswith("files said: Error: the delegate files failed: the remote agent at grpc://")
    assert "/kagent/files refused the task: gRPC Error UNAUTHENTICATED" in done.output


PARENT_CONFIG = """
store: sqlite:///parent.db
models:
  c: {{scripted: coordinator.yaml}}
agents:
  coordinator:
    model: c
    delegates:
      - {{a2a: "grpc://127.0.0.1:{port}/kagent/files", description: Manages the files of a sandbox}}
"""

COORDINATOR = """
rules:
  - {user: '^tidy (?P<what>.+)$', call: files, args: {task: "{what}"}}
  - {tool: files, reply: "files said: {result}"}
"""


def test_a_remote_delegate_is_reached_over_grpc_and_its_pause_cascades_up(tmp_path: Path) -> None:
    """`sayso serve --grpc-port` serves the child; the parent's delegate at grpc://…/kagent/files mirrors its pause,
    and the decision taken on the parent runs the call in the child."""
    sandbox = tmp_path / "child-sandbox"
    sandbox.mkdir()
    (sandbox / "notes.txt").write_text("Buy milk.\n")
    base = {k: v for k, v in os.environ.items() if k != "SAYSO_STORE"}
    grpc_port = free_port()
    child_env = {**base, "SAYSO_STORE": f"sqlite:///{tmp_path / 'child.db'}", "SAYSO_SANDBOX": str(sandbox)}
    child, _ = LiveServer.process([str(EXAMPLE), "--grpc-port", str(grpc_port)], env=child_env)
    parent_dir = tmp_path / "parent"
    parent_dir.mkdir()
    (parent_dir / "sayso.yaml").write_text(PARENT_CONFIG.format(port=grpc_port))
    (parent_dir / "coordinator.yaml").write_text(COORDINATOR)
    try:
        parent, _ = LiveServer.process([str(parent_dir / "sayso.yaml")], env=base)
        try:
            with parent.client() as http:
                run = http.post("/v1/runs", json={"message": "tidy delete notes", "agent": "coordinator"}).json()
                assert run["status"] == "paused", run
                [request] = run["requests"]
                assert (request["tool_name"], request["agent_path"], request["is_nested"]) == (
                    "delete_file",
                    "coordinator/files",
                    True,
                )
                assert (sandbox / "notes.txt").exists()
                done = http.post(f"/v1/requests/{request['id']}/decision", json={"kind": "approve"}).json()
        finally:
            parent.stop()
    finally:
        child.stop()
    assert done["run"]["output"] == "files said: Deleted notes.txt."
    assert not (sandbox / "notes.txt").exists()


BANK_SCRIPT = """
rules:
  - {user: '^pay bob$', call: transfer, args: {to: bob, amount: 30.5, count: 3, tags: [rent], account: main}}
  - {tool: transfer, result: '(?s)(?P<r>.*)', reply: "Done: {r}"}
"""

BANK = """
store: sqlite:///child.db
models:
  m: {scripted: script.yaml}
agents:
  files:
    model: m
    tools: [tests.protocols.transfer_tools:transfer]
    interrupt: {tools: [transfer]}
"""


@pytest.fixture
def bank_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """A sayso agent paying through `transfer` (an integer `count` among its arguments), served on 127.0.0.1: its
    JSON-RPC URL and its gRPC URL."""
    monkeypatch.delenv("SAYSO_STORE")
    folder = tmp_path / "child"
    folder.mkdir()
    (folder / "script.yaml").write_text(BANK_SCRIPT)
    (folder / "sayso.yaml").write_text(BANK)
    sayso = Sayso(load_config(folder / "sayso.yaml"))
    port = free_port()
    server = LiveServer.in_thread(create_app(sayso, routers=[a2a_router(sayso, grpc_port=port)]))
    yield f"{server.base_url}/a2a/files", f"grpc://127.0.0.1:{port}/kagent/files"
    server.stop()
    transfer_tools.RAN.clear()


@pytest.mark.parametrize("transport", ["JSON-RPC", "gRPC"])
async def test_a_remote_pauses_integer_arguments_stay_integers_in_the_coordinators_request(
    bank_child: tuple[str, str], tmp_path: Path, transport: str
) -> None:
    """protobuf keeps every number as a double, so the remote call's `count: 3` came up as `3.0` in the coordinator's
    request (the inbox, GET /v1/requests, the run's requests); it reads as the remote sent it, `30.5` still a float."""
    url = bank_child[0] if transport == "JSON-RPC" else bank_child[1]
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'parent.db'}",
            "agents": {"coordinator": {"model": "c", "delegates": [{"a2a": url, "name": "files"}]}},
            "base_dir": tmp_path,
        }
    )
    sayso = Sayso(config, models={"c": tool_model(verbs(tidy=("files", "task")), read="files said: {result}")})
    parent = await InProcess(app=protocol_app(sayso), sayso=sayso).start()
    try:
        async with parent.client() as http:
            run = (await http.post("/v1/runs", json={"message": "tidy pay bob", "agent": "coordinator"})).json()
            assert run["status"] == "paused", run
            listed = (await http.get("/v1/requests")).json()["requests"]
            [request] = run["requests"]
            done = (await http.post(f"/v1/requests/{request['id']}/decision", json={"kind": "approve"})).json()
    finally:
        await parent.stop()
    shown = {"to": "bob", "amount": 30.5, "count": 3, "tags": ["rent"], "account": "main"}
    assert request["args"] == shown and type(request["args"]["count"]) is int
    assert [r["args"] for r in listed] == [shown] and type(listed[0]["args"]["count"]) is int
    assert type(request["args"]["amount"]) is float
    assert done["run"]["status"] == "completed"
    assert transfer_tools.RAN[0]["count"] == 3
