"""Remote delegates as kagent sees them: a child that speaks only kagent 0.x, the nested block naming the child's
own task, context and ids, the wording of hints and rejections, and a child that asks without the extension."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, Part, Task, TaskState, TaskStatus
from a2a.utils.errors import UnsupportedOperationError
from fastapi import FastAPI

from sayso import Config, Sayso, load_config

from ..conftest import InProcess, LiveServer
from ..models import tool_model, verbs
from .a2a_helpers import URI, hitl, rpc, task_of, user_message
from .conftest import EXAMPLE, protocol_app

Parent = Callable[..., Awaitable[InProcess]]
"""Serves a coordinator delegating to the remote agent at a URL (`name`: the delegate's name, `files` by default)."""


@pytest.fixture
def legacy_child(tmp_path: Path, sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The file manager as a kagent 0.x agent would be: an A2A 0.3 card without the v1 extension, DataPart pauses."""
    monkeypatch.delenv("SAYSO_STORE")
    config = load_config(EXAMPLE)
    config = Config.model_validate(
        {
            **config.model_dump(),
            "store": f"sqlite:///{tmp_path / 'child.db'}",
            "a2a": {"legacy_only": True},
            "base_dir": config.base_dir,
        }
    )
    server = LiveServer.in_thread(protocol_app(Sayso(config)))
    yield f"{server.base_url}/a2a/files"
    server.stop()


@pytest.fixture
async def parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Parent]:
    """A coordinator that hands `tidy ...` to a remote agent at a URL, served in-process with A2A."""
    monkeypatch.delenv("SAYSO_STORE", raising=False)
    started: list[InProcess] = []

    async def serve(url: str, name: str = "files") -> InProcess:
        config = Config.model_validate(
            {
                "store": f"sqlite:///{tmp_path / 'parent.db'}",
                "agents": {"coordinator": {"model": "c", "delegates": [{"a2a": url, "name": name}]}},
                "base_dir": tmp_path,
            }
        )
        model = tool_model(verbs(tidy=(name, "task")), read="files said: {result}")
        sayso = Sayso(config, models={"c": model})
        served = await InProcess(app=protocol_app(sayso), sayso=sayso).start()
        started.append(served)
        return served

    yield serve
    for served in started:
        await served.stop()


async def call(client: httpx.AsyncClient, message: dict[str, Any]) -> dict[str, Any]:
    return task_of((await rpc(client, "coordinator", "SendMessage", {"message": message})).json())


async def test_a_kagent_0x_child_works_and_the_nested_block_names_its_own_task(
    legacy_child: str, parent: Parent, sandbox: Path
) -> None:
    """A child that speaks only kagent 0.x pauses, asks and is answered through the parent; the parent's pause names
    the child's own task, context and ids, with kagent's remote-agent hint."""
    server = await parent(legacy_child)
    async with server.client() as client:
        task = await call(client, user_message("tidy delete report"))
        asked = hitl(task["status"]["message"])
        assert asked["type"] == "ask_user_request"
        nested = asked["nested"]
        child_task = await child_task_of(legacy_child, nested["task_id"])
        assert child_task["contextId"] == nested["context_id"] and child_task["status"]["state"] == "input-required"
        (part,) = child_task["status"]["message"]["parts"]
        assert nested["tools"][0]["id"] == part["data"]["id"], "the child's own confirmation id"
        answer = {
            "type": "ask_user_response",
            "id": nested["tools"][0]["id"],
            "answers": [{"answer": ["report-2026.txt"]}],
        }
        task = await call(client, user_message(task_id=task["id"], context_id=task["contextId"], payload=answer))

        approval = hitl(task["status"]["message"])
        assert approval["hint"] == "Remote agent 'files' requires approval for tool(s): delete_file (files)"
        [tool] = approval["nested"]["tools"]
        child_task = await child_task_of(legacy_child, approval["nested"]["task_id"])
        (part,) = child_task["status"]["message"]["parts"]
        assert (tool["id"], tool["call_id"]) == (part["data"]["id"], part["data"]["args"]["originalFunctionCall"]["id"])
        approve = {"type": "tool_approval_response", "approvals": [{"id": tool["id"], "approved": True}]}
        done = await call(client, user_message(task_id=task["id"], context_id=task["contextId"], payload=approve))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["status"]["message"]["parts"][0]["text"].startswith("files said: Deleted report-2026.txt.")
    assert not (sandbox / "report-2026.txt").exists() and (sandbox / "report-2025.txt").exists()


async def test_a_plain_rejection_reads_in_the_childs_own_words(
    legacy_child: str, parent: Parent, sandbox: Path
) -> None:
    """Rejecting a remote call without a reason sends no reason down: the child says "Declined by the person."."""
    server = await parent(legacy_child)
    async with server.client() as client:
        task = await call(client, user_message("tidy delete notes"))
        [tool] = hitl(task["status"]["message"])["nested"]["tools"]
        reject = {"type": "tool_approval_response", "approvals": [{"id": tool["id"], "approved": False}]}
        done = await call(client, user_message(task_id=task["id"], context_id=task["contextId"], payload=reject))
    assert done["status"]["message"]["parts"][0]["text"] == "files said: Declined by the person."
    assert (sandbox / "notes.txt").exists()


async def child_task_of(url: str, task_id: str) -> dict[str, Any]:
    """The child's task as its own (A2A 0.3) endpoint shows it."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": task_id}}
    async with httpx.AsyncClient(timeout=30) as http:
        result: dict[str, Any] = (await http.post(url, json=body)).json()["result"]
    return result


# --- a child that asks without the extension


class AsksWithoutTheExtension(AgentExecutor):
    """An A2A agent (the a2a-sdk's own server) that needs input but says so only in words, as most agents do."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        submitted = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
        await event_queue.enqueue_event(Task(id=task_id, context_id=context_id, status=submitted))
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.requires_input(updater.new_agent_message([Part(text="Which namespace?")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise UnsupportedOperationError("this test agent's tasks cannot be cancelled")


def sdk_child(executor: AgentExecutor, name: str) -> LiveServer:
    """An A2A agent served by the a2a-sdk on 127.0.0.1 at `/a2a/NAME`, run by `executor`."""
    port_app = FastAPI()
    server = LiveServer.in_thread(port_app)
    url = f"{server.base_url}/a2a/{name}"
    card = AgentCard(
        name=name,
        description="A test agent.",
        version="1",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )
    handler = DefaultRequestHandler(executor, InMemoryTaskStore(), card)
    port_app.router.routes.extend(create_jsonrpc_routes(handler, f"/a2a/{name}"))
    port_app.router.routes.extend(create_agent_card_routes(card, card_url=f"/a2a/{name}/.well-known/agent-card.json"))
    return server


@pytest.fixture
def plain_child() -> Iterator[str]:
    """A plain A2A agent served by the a2a-sdk on 127.0.0.1."""
    server = sdk_child(AsksWithoutTheExtension(), "plain")
    yield f"{server.base_url}/a2a/plain"
    server.stop()


async def test_a_remote_pause_without_the_extension_fails_the_call_with_kagents_wording(
    plain_child: str, parent: Parent
) -> None:
    """A child that goes input-required without a HITL payload fails the delegate call; the model reads kagent's
    wording and the child's context id, and the parent does not pause."""
    server = await parent(plain_child, name="plain")
    async with server.client() as client:
        done = await call(client, user_message("tidy the namespace"))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    text = done["status"]["message"]["parts"][0]["text"]
    assert "Remote agent 'plain' requested input without a valid HITL extension." in text
    context = text.split("Its context id is ")[1].split("'")[1]
    listing = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"contextId": context}}
    async with httpx.AsyncClient(timeout=30) as http:
        found = (await http.post(plain_child, json=listing, headers={"A2A-Version": "1.0"})).json()["result"]
    [child] = found["tasks"]
    assert child["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", "the child's own task, still waiting there"


# --- a child whose HITL request cannot be taken as it is


class PausesOn(AgentExecutor):
    """An A2A agent that pauses on whatever HITL request it is given: a v1 payload, or kagent 0.x DataParts."""

    def __init__(self, *, v1: dict[str, Any] | None = None, legacy: Sequence[dict[str, Any]] = ()) -> None:
        self.v1, self.legacy = v1, legacy

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        submitted = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
        await event_queue.enqueue_event(Task(id=task_id, context_id=context_id, status=submitted))
        updater = TaskUpdater(event_queue, task_id, context_id)
        parts = [Part(text="Needs a decision")]
        for data in self.legacy:
            part = Part()
            part.data.struct_value.update(data)
            part.metadata.update({"adk_type": "function_call", "adk_is_long_running": True})
            parts.append(part)
        message = updater.new_agent_message(parts, metadata={URI: self.v1} if self.v1 else None)
        if self.v1:
            message.extensions.append(URI)
        await updater.requires_input(message)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise UnsupportedOperationError("this test agent's tasks cannot be cancelled")


def _approval(*tools: dict[str, Any], hint: Any = "Deleting needs approval (rm)") -> PausesOn:
    return PausesOn(v1={"type": "tool_approval_request", "hint": hint, "tools": list(tools)})


def _confirmation(call: dict[str, Any], hint: Any = "Deleting needs approval") -> PausesOn:
    """A kagent 0.x pause on one call."""
    args = {"originalFunctionCall": call, "toolConfirmation": {"hint": hint, "confirmed": False}}
    return PausesOn(legacy=[{"id": "c1", "name": "adk_request_confirmation", "args": args}])


RM = {"id": "a1", "name": "rm", "args": {"path": "x"}}

MALFORMED = {
    "a number for a hint": (_approval(RM, hint=5), "hint"),
    "text for the arguments": (_approval({**RM, "args": "rm -rf /"}), "args"),
    "an object for a tool's name": (_approval({**RM, "name": {"x": 1}}), "tool_name"),
    "two tools with one id": (_approval(RM, {**RM, "args": {"path": "y"}}), "'a1'"),
    "a tool without an id": (_approval(RM, {"name": "rm", "args": {}}), "tool_call_id"),
    "text for the questions": (
        PausesOn(v1={"type": "ask_user_request", "id": "q1", "questions": "what?"}),
        "questions",
    ),
    "no questions": (PausesOn(v1={"type": "ask_user_request", "id": "q1", "questions": []}), "at least one question"),
    "a question without text": (
        PausesOn(v1={"type": "ask_user_request", "id": "q1", "questions": [{"question": "", "choices": ["a"]}]}),
        "no text",
    ),
    "kagent 0.x: a number for a hint": (_confirmation(RM, hint=5), "hint"),
    "kagent 0.x: a list for the arguments": (_confirmation({**RM, "args": ["rm", "-rf"]}), "args"),
    "kagent 0.x: no questions": (_confirmation({"id": "f1", "name": "ask_user", "args": {}}), "questions"),
}


@pytest.mark.parametrize("agent, named", MALFORMED.values(), ids=MALFORMED.keys())
async def test_a_remote_pause_that_cannot_be_taken_fails_the_call_and_leaves_the_coordinator_whole(
    parent: Parent, agent: PausesOn, named: str
) -> None:
    """A child pausing on a HITL request with a wrong type, shape or a repeated id fails the delegate call: the
    coordinator's model reads what was wrong and the child's context id, nothing waits in the inbox, and the
    inbox, the coordinator's thread and the server go on answering."""
    child = sdk_child(agent, "odd")
    try:
        server = await parent(f"{child.base_url}/a2a/odd", name="odd")
        async with server.client() as client:
            started = await client.post("/v1/runs", json={"message": "tidy the bin", "agent": "coordinator"})
            assert started.status_code == 200, started.text
            run = started.json()
            inbox = await client.get("/v1/requests")
            again = await client.post(
                "/v1/runs", json={"message": "tidy more", "agent": "coordinator", "thread_id": run["thread_id"]}
            )
            health = await client.get("/healthz")
    finally:
        child.stop()
    assert run["status"] == "completed"
    assert run["output"].startswith("files said: Error: the delegate odd failed: Remote agent 'odd' paused on a")
    assert named in run["output"] and "Its context id is '" in run["output"]
    assert inbox.status_code == 200 and inbox.json()["requests"] == []
    assert again.status_code == 200 and again.json()["status"] == "completed"
    assert health.status_code == 200
