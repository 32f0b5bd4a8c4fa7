"""sayso as an MCP server (§9): `/mcp` driven end to end by the official MCP Python client over a real socket.

Each agent is a tool. A run that pauses asks its requests through the client's elicitation
callback: as a stateless round trip on a modern session, pushed mid-call on a handshake-era one,
and as a background task parked on input-required. Principals apply as on every interface.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp_tasks import call_tool_task
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from sayso import Config, Sayso
from sayso.protocols import protocol_apps, protocol_routers
from sayso.server import create_app

from ..conftest import LiveServer, script
from . import hooks
from .conftest import ElicitServer

RULES: list[dict[str, Any]] = [
    {"user": r"^announce (?P<t>.+)$", "call": "announce", "args": {"text": "{t}"}},
    {
        "user": r"^pick$",
        "call": "ask_user",
        "args": {"questions": [{"question": "Which room?", "choices": ["Ada", "Babbage"]}]},
    },
    {"user": r"^book (?P<d>\w+)$", "call": "book_table", "args": {"day": "{d}"}},
    {"tool": "announce", "reply": "{result}"},
    {"tool": "ask_user", "reply": "room: {result}"},
    {"tool": "book_table", "reply": "{result}"},
]

TOKENS = {"ada": "ada-token", "bob": "bob-token"}


@pytest.fixture(autouse=True)
def nothing_announced() -> Iterator[None]:
    hooks.sent.clear()
    yield


def serve(tmp_path: Path, server: ElicitServer, *, principals: bool = False) -> LiveServer:
    """`sayso serve`'s app (REST, A2A, AG-UI and `/mcp`) on a real port of 127.0.0.1."""
    config: dict[str, Any] = {
        "store": f"sqlite:///{tmp_path / 'sayso.db'}",
        "models": {"m": "test"},
        "mcp_servers": {"booking": {"url": server.mcp_url, "session": "legacy"}},
        "agents": {
            "ops": {
                "model": "m",
                "description": "Announces things, once a person agrees.",
                "tools": ["tests.mcp_tools.hooks:announce"],
                "interrupt": {"tools": ["announce"]},
                "mcp": [{"server": "booking", "tools": ["book_table"]}],
            }
        },
        "base_dir": tmp_path,
    }
    if principals:
        config["principals"] = [{"name": name, "token": token} for name, token in TOKENS.items()]
    sayso = Sayso(Config.model_validate(config), models={"m": script(*RULES)})
    app = create_app(sayso, routers=protocol_routers(sayso), apps=protocol_apps(sayso), expire_every_seconds=None)
    return LiveServer.in_thread(app)


@pytest.fixture
def live(tmp_path: Path, elicit_server: ElicitServer) -> Iterator[LiveServer]:
    served = serve(tmp_path, elicit_server)
    yield served
    served.stop()


class Person:
    """The official client's elicitation callback: records what it was asked and answers from a list."""

    def __init__(self, *answers: dict[str, Any] | str) -> None:
        self.answers = list(answers)
        self.asked: list[mcp_types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        self.asked.append(params)
        answer = self.answers.pop(0)
        if isinstance(answer, str):
            return mcp_types.ElicitResult(action=answer)  # type: ignore[arg-type]  # decline / cancel
        return mcp_types.ElicitResult(action="accept", content=answer)


@asynccontextmanager
async def client(
    live: LiveServer, person: Person, *, token: str | None = None, mode: str = "auto"
) -> AsyncIterator[Client]:
    """The official MCP client on `/mcp`, signed in with `token` when given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers) as http:
        transport = streamable_http_client(f"{live.base_url}/mcp", http_client=http)
        async with Client(transport, elicitation_callback=person, mode=mode) as mcp:
            yield mcp


def text(result: mcp_types.CallToolResult) -> str:
    assert not result.is_error, result
    return "".join(part.text for part in result.content if isinstance(part, mcp_types.TextContent))


async def test_each_agent_is_a_tool_and_an_approval_is_asked_as_a_form(live: LiveServer) -> None:
    """The agent's tool pauses on its gated call; the client is asked approve/reject, and the call runs once."""
    person = Person({"decision": "approve"})
    async with client(live, person) as mcp:
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
        assert tools["ops"].description == "Announces things, once a person agrees."
        assert set(tools["ops"].input_schema["properties"]) == {"message", "thread_id"}
        result = await mcp.call_tool("ops", {"message": "announce lunch"})
    assert text(result).startswith("announced: lunch")
    [asked] = person.asked
    assert isinstance(asked, mcp_types.ElicitRequestFormParams)
    assert "ops wants to run announce" in asked.message
    assert asked.requested_schema["properties"]["decision"]["enum"] == ["approve", "reject"]
    assert hooks.sent == ["lunch"]


async def test_a_rejection_with_a_reason_reaches_the_agent(live: LiveServer) -> None:
    """Rejecting in the client's form is a rejection in sayso: the call never runs, the model reads the reason."""
    person = Person({"decision": "reject", "reason": "not today"})
    async with client(live, person) as mcp:
        result = await mcp.call_tool("ops", {"message": "announce party"})
    assert text(result).startswith("Declined: not today")
    assert hooks.sent == []


async def test_a_question_is_asked_with_its_choices_and_a_wrong_answer_is_asked_again(live: LiveServer) -> None:
    """`ask_user` becomes a form whose field lists the choices; a refused answer comes back with the problem."""
    person = Person({"answer_1": ""}, {"answer_1": "Babbage"})
    async with client(live, person) as mcp:
        result = await mcp.call_tool("ops", {"message": "pick"})
    assert "Babbage" in text(result)
    first, second = person.asked
    assert isinstance(first, mcp_types.ElicitRequestFormParams)
    assert first.requested_schema["properties"]["answer_1"]["enum"] == ["Ada", "Babbage"]
    assert second.message.startswith("Not accepted: question 'Which room?' needs an answer.")


async def test_a_form_from_an_mcp_server_below_reaches_the_client_and_its_answer_goes_back_down(
    live: LiveServer, elicit_server: ElicitServer
) -> None:
    """MCP both ways: the booking server's form, pushed to sayso mid-call, is asked of the client at `/mcp`."""
    person = Person({"people": 2, "name": "Ada"})
    async with client(live, person) as mcp:
        result = await mcp.call_tool("ops", {"message": "book fri"})
    assert text(result).startswith("Booked fri for 2 (Ada)")
    [asked] = person.asked
    assert isinstance(asked, mcp_types.ElicitRequestFormParams)
    assert asked.message == "Booking for fri: how many people, and under which name?"
    assert elicit_server.answers() == ["accept"]


async def test_a_handshake_era_client_is_asked_mid_call(live: LiveServer) -> None:
    """On a legacy session the same pause is pushed as `elicitation/create` on the open call."""
    person = Person({"decision": "approve"})
    async with client(live, person, mode="legacy") as mcp:
        result = await mcp.call_tool("ops", {"message": "announce tea"})
    assert text(result).startswith("announced: tea")
    assert len(person.asked) == 1


async def test_a_tasked_call_parks_on_input_required_and_another_connection_answers_it(live: LiveServer) -> None:
    """Called as a task, the paused run is a task on input-required whose input requests are the elicitations."""
    first = FastMCPClient(StreamableHttpTransport(f"{live.base_url}/mcp"))
    async with first:
        task = await call_tool_task(first, "ops", {"message": "announce cake"})
        parked = await task.wait(state="input_required", timeout=30)
        stored = task.create_result.model_dump(mode="json", by_alias=True)
    [asked] = (parked.input_requests or {}).values()
    assert "ops wants to run announce" in asked["params"]["message"]
    assert hooks.sent == []

    from fastmcp_tasks.client import ToolTask
    from fastmcp_tasks.client_models import ClientCreateTaskResult

    async def approve(message: str, response_type: Any, params: Any, context: Any) -> mcp_types.ElicitResult:
        return mcp_types.ElicitResult(action="accept", content={"decision": "approve"})

    second = FastMCPClient(StreamableHttpTransport(f"{live.base_url}/mcp"), elicitation_handler=approve)
    async with second:
        done = await ToolTask(second, "ops", ClientCreateTaskResult.model_validate(stored)).result()
    assert str(done.data).startswith("announced: cake")
    assert hooks.sent == ["cake"]


async def test_principals_apply_at_mcp_as_everywhere(tmp_path: Path, elicit_server: ElicitServer) -> None:
    """Without a valid token `/mcp` answers 401; with one, the run is the caller's own thread."""
    served = serve(tmp_path, elicit_server, principals=True)
    try:
        refused = httpx.post(f"{served.base_url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"] == "Bearer"
        person = Person({"decision": "approve"})
        async with client(served, person, token=TOKENS["ada"]) as mcp:
            result = await mcp.call_tool("ops", {"message": "announce hello"})
        answer = text(result)
        thread_id = answer.rsplit("(thread ", 1)[1].rstrip(")")
        with served.client(TOKENS["ada"]) as rest:
            assert rest.get(f"/v1/threads/{thread_id}").status_code == 200
        with served.client(TOKENS["bob"]) as rest:
            assert rest.get(f"/v1/threads/{thread_id}").status_code == 404
    finally:
        served.stop()


async def test_sayso_serve_mounts_mcp(tmp_path: Path) -> None:
    """The `sayso serve` command serves `/mcp` beside REST: the official client lists each agent as a tool."""
    (tmp_path / "script.yaml").write_text("name: s\nrules: []\nfallback: hello from the script\n")
    (tmp_path / "sayso.yaml").write_text(
        "models: {m: {scripted: script.yaml}}\n"
        "agents:\n  greeter: {model: m, description: Says hello.}\n  helper: {model: m, instructions: Helps.}\n"
    )
    env = {"SAYSO_STORE": f"sqlite:///{tmp_path / 'sayso.db'}", "PATH": ""}
    served, _ = LiveServer.process([str(tmp_path / "sayso.yaml")], env=env)
    try:
        async with client(served, Person()) as mcp:
            tools = {t.name: t.description for t in (await mcp.list_tools()).tools}
            answer = text(await mcp.call_tool("greeter", {"message": "hi"}))
    finally:
        served.stop()
    assert tools == {"greeter": "Says hello.", "helper": "Helps."}
    assert answer.startswith("[script] hello from the script")
