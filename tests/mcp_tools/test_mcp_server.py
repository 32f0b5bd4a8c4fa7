"""sayso as an MCP server (docs/guides/mcp.md#sayso-as-an-mcp-server): `/mcp` driven end to end by the official MCP
Python client over a real socket.

Each agent is a tool. A run that pauses asks its requests through the client's elicitation
callback: as a stateless round trip on a modern session, pushed mid-call on a handshake-era one,
and as a background task parked on input-required. Principals apply as on every interface.
"""

from __future__ import annotations

import json
import secrets
import time
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
from mcp.server import request_state

from sayso import Config, Sayso, load_config
from sayso.protocols import protocol_apps, protocol_routers
from sayso.server import create_app

from ..conftest import LiveServer
from ..models import Call, ToolModel, tool_model, verbs
from . import hooks
from .conftest import ElicitServer

PICK: Call = ("ask_user", {"questions": [{"question": "Which room?", "choices": ["Ada", "Babbage"]}]})


def model() -> ToolModel:
    """`announce TEXT` announces, `pick` asks the person for a room, `book DAY` books a table on the test server;
    the model says what the call returned (the room with `room: `)."""
    route = verbs(announce=("announce", "text"), book=("book_table", "day"))
    return tool_model(
        lambda said: PICK if said == "pick" else route(said),
        read=lambda tool, result: f"room: {result}" if tool == "ask_user" else result,
    )


TOKENS = {"ada": "ada-token", "bob": "bob-token"}


@pytest.fixture(autouse=True)
def nothing_announced() -> Iterator[None]:
    hooks.sent.clear()
    yield


def serve(
    tmp_path: Path, server: ElicitServer, *, principals: bool = False, limits: dict[str, int] | None = None
) -> LiveServer:
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
    if limits:
        config["limits"] = limits
    sayso = Sayso(Config.model_validate(config), models={"m": model()})
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


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_approval_outside_the_forms_choices_is_asked_again_not_taken_as_a_rejection(
    live: LiveServer, mode: str
) -> None:
    """`"APPROVE!"` is none of the form's choices: it is refused and asked again with the problem (on a stateless
    session and pushed mid-call alike), never recorded as a rejection; the answer that fits then counts."""
    person = Person({"decision": "APPROVE!"}, {"decision": "approve"})
    async with client(live, person, mode=mode) as mcp:
        result = await mcp.call_tool("ops", {"message": "announce lunch"})
    assert text(result).startswith("announced: lunch")
    first, second = person.asked
    assert "Not accepted" not in first.message
    assert second.message.startswith("Not accepted: decision: 'APPROVE!' is not one of")
    assert hooks.sent == ["lunch"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_answer_over_its_size_limit_is_asked_again(
    tmp_path: Path, elicit_server: ElicitServer, mode: str
) -> None:
    """A reason over `answer_bytes` ended the tool call with an error while its request stayed open, the client told
    neither that nor its thread; it is now asked again with the problem, as any refused answer is."""
    served = serve(tmp_path, elicit_server, limits={"answer_bytes": 200})
    try:
        person = Person({"decision": "reject", "reason": "r" * 300}, {"decision": "reject", "reason": "not today"})
        async with client(served, person, mode=mode) as mcp:
            result = await mcp.call_tool("ops", {"message": "announce lunch"})
    finally:
        served.stop()
    assert text(result).startswith("Declined: not today")
    first, second = person.asked
    assert "Not accepted" not in first.message
    assert second.message.startswith("Not accepted: request 'req_")
    assert "the answer takes 329 bytes; the limit is 200" in second.message
    assert hooks.sent == []


async def test_a_question_offers_its_choices_and_own_words_and_a_wrong_answer_is_asked_again(
    live: LiveServer,
) -> None:
    """`ask_user` becomes a form with the choices as a pick and a field for one's own words (choices are
    suggestions); an answer outside the choices, or none, is asked again with the problem."""
    person = Person({"answer_1": "Turing"}, {}, {"answer_1_own": "the garden room"})
    async with client(live, person) as mcp:
        result = await mcp.call_tool("ops", {"message": "pick"})
    assert '"answer": ["the garden room"]' in text(result)
    first, second, third = person.asked
    assert isinstance(first, mcp_types.ElicitRequestFormParams)
    assert first.requested_schema["properties"]["answer_1"]["enum"] == ["Ada", "Babbage"]
    assert first.requested_schema["properties"]["answer_1_own"]["type"] == "string"
    assert second.message.startswith("Not accepted: answer_1: 'Turing' is not one of")
    assert third.message.startswith("Not accepted: question 'Which room?' needs an answer.")


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


CONCIERGE = Path(__file__).resolve().parents[2] / "examples" / "concierge" / "sayso.yaml"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_workflow_is_a_tool_whose_inputs_are_forms_of_their_schema_and_a_wrong_one_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The concierge workflow is served at `/mcp` as a tool; each input is asked as a form of its own schema, an
    answer that breaks it is asked again with the problem, and the plan comes back once both inputs are given."""
    monkeypatch.setenv("SAYSO_STORE", f"sqlite:///{tmp_path / 'concierge.db'}")
    sayso = Sayso(load_config(CONCIERGE))
    served = LiveServer.in_thread(
        create_app(sayso, routers=protocol_routers(sayso), apps=protocol_apps(sayso), expire_every_seconds=None)
    )
    person = Person(
        {"hobby": "fado", "age": "old"},
        {"city": "Lisbon", "hobby": "fado"},
        {"user_response": "Lovely", "done": True},
    )
    try:
        async with client(served, person, mode=mode) as mcp:
            tools = {t.name: t for t in (await mcp.list_tools()).tools}
            result = await mcp.call_tool("concierge", {"message": "Plan my day"})
    finally:
        served.stop()
    assert tools["concierge"].description == "Plans a day out in a city with you, and refines it until you are happy."
    assert text(result).startswith("Your day in Lisbon")
    assert "Your notes: Lovely" in text(result)
    first, again, feedback = person.asked
    assert isinstance(first, mcp_types.ElicitRequestFormParams)
    assert first.message.startswith("This is an interactive concierge")
    assert first.requested_schema["required"] == ["city"]
    assert again.message.startswith("Not accepted: ") and "city" in again.message and "age" in again.message
    assert isinstance(feedback, mcp_types.ElicitRequestFormParams)
    assert set(feedback.requested_schema["properties"]) == {"user_response", "done"}


async def _sse_events(response: httpx.Response) -> AsyncIterator[tuple[str | None, dict[str, Any]]]:
    """The (event id, JSON-RPC message) of each SSE event with data, as they come."""
    event_id: str | None = None
    async for line in response.aiter_lines():
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:") and line[5:].strip():
            yield event_id, json.loads(line[5:])


async def test_a_client_that_drops_mid_pause_reconnects_with_last_event_id_and_answers(live: LiveServer) -> None:
    """On the 2025-11-25 protocol the approval is pushed mid-call; the client drops the stream right after, then
    reconnects with `Last-Event-ID`: the stream goes on where it stopped, the client answers, and the call ends
    with the agent's reply on the resumed stream."""
    base = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    async with httpx.AsyncClient(base_url=live.base_url, timeout=30) as http:
        hello = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        opened = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        assert opened.status_code == 200, opened.text
        headers = {**base, "mcp-session-id": opened.headers["mcp-session-id"]}
        ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post("/mcp", json=ready, headers=headers)).status_code == 202
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "ops", "arguments": {"message": "announce tea"}},
        }
        asked: dict[str, Any] = {}
        last_id: str | None = None
        async with http.stream("POST", "/mcp", json=call, headers=headers) as first:
            async for event_id, message in _sse_events(first):
                last_id = event_id or last_id
                if message.get("method") == "elicitation/create":
                    asked = message
                    break  # the client drops here, before answering
        assert asked["params"]["requestedSchema"]["properties"]["decision"]["enum"] == ["approve", "reject"]
        assert last_id is not None and hooks.sent == []
        resumed_headers = {**headers, "Accept": "text/event-stream", "Last-Event-ID": last_id}
        result: dict[str, Any] = {}
        async with http.stream("GET", "/mcp", headers=resumed_headers) as resumed:
            assert resumed.status_code == 200
            answer = {
                "jsonrpc": "2.0",
                "id": asked["id"],
                "result": {"action": "accept", "content": {"decision": "approve"}},
            }
            assert (await http.post("/mcp", json=answer, headers=headers)).status_code == 202
            async for _, message in _sse_events(resumed):
                if message.get("id") == 2:
                    result = message["result"]
                    break
    assert "".join(part["text"] for part in result["content"]).startswith("announced: tea")
    assert hooks.sent == ["tea"]


class _Later:
    """The clock of the MCP SDK's request-state boundary, moved on: the person took a while to answer."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def time(self) -> float:
        return time.time() + self.seconds


async def test_the_answers_leg_reaches_a_restarted_server_after_a_long_pause(
    tmp_path: Path, elicit_server: ElicitServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stateless call pauses on one server; the answers' leg goes to another one on the same store (a restart,
    or another replica), eleven minutes later: the state is sealed under the configured key, for as long as the
    pause waits, so the answers are taken and the call runs once."""
    monkeypatch.setenv("SAYSO_MCP_STATE_KEY", secrets.token_hex(16))
    first = serve(tmp_path, elicit_server)
    try:
        async with client(first, Person()) as mcp:
            asked = await mcp.session.call_tool("ops", {"message": "announce lunch"}, allow_input_required=True)
    finally:
        first.stop()
    assert isinstance(asked, mcp_types.InputRequiredResult) and asked.request_state
    [request_id] = (asked.input_requests or {}).keys()
    assert hooks.sent == []

    monkeypatch.setattr(request_state, "time", _Later(11 * 60))
    second = serve(tmp_path, elicit_server)
    try:
        async with client(second, Person()) as mcp:
            approve = mcp_types.ElicitResult(action="accept", content={"decision": "approve"})
            result = await mcp.call_tool(
                "ops",
                {"message": "announce lunch"},
                input_responses={request_id: approve},
                request_state=asked.request_state,
            )
    finally:
        second.stop()
    assert text(result).startswith("announced: lunch")
    assert hooks.sent == ["lunch"]


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


@pytest.mark.parametrize(
    ("arguments", "named"),
    [({"message": ""}, "message"), ({"message": 5}, "message"), ({}, "message"), ({"message": "hi", "x": 1}, "x")],
)
async def test_a_call_without_a_message_is_a_tool_error_and_starts_nothing(
    live: LiveServer, arguments: dict[str, Any], named: str
) -> None:
    """An empty, missing or non-text `message` (or an argument the tool has not) is a tool error naming it in words,
    as REST refuses it, without pydantic's report (the input echoed, its links); no thread is started."""
    async with client(live, Person()) as mcp:
        result = await mcp.call_tool("ops", arguments)
    assert result.is_error
    said = "".join(part.text for part in result.content if isinstance(part, mcp_types.TextContent))
    assert said.startswith("the arguments do not fit the tool: ") and f"{named}: " in said, said
    assert "pydantic" not in said and "input_value" not in said
    with live.client() as rest:
        assert rest.get("/v1/threads").json()["threads"] == []


@pytest.mark.parametrize("thread_id", ["a b/<script>", "t" * 5_000])
async def test_a_thread_id_that_is_no_id_is_a_tool_error_and_starts_nothing(live: LiveServer, thread_id: str) -> None:
    """A `thread_id` REST would refuse is a tool error saying what a thread id is; no thread is stored under it."""
    async with client(live, Person()) as mcp:
        result = await mcp.call_tool("ops", {"message": "announce lunch", "thread_id": thread_id})
    assert result.is_error
    said = "".join(part.text for part in result.content if isinstance(part, mcp_types.TextContent))
    assert "thread_id" in said and "is not a thread id" in said and len(said) < 300
    with live.client() as rest:
        assert rest.get("/v1/threads").json()["threads"] == []
    assert hooks.sent == []


async def test_an_empty_thread_id_starts_a_new_thread(live: LiveServer) -> None:
    """A model fills an optional `thread_id` with "": that names no thread, so the message starts a new one."""
    async with client(live, Person({"decision": "approve"})) as mcp:
        result = await mcp.call_tool("ops", {"message": "announce lunch", "thread_id": ""})
    assert not result.is_error and text(result).startswith("announced: lunch")
    with live.client() as rest:
        assert len(rest.get("/v1/threads").json()["threads"]) == 1
    assert hooks.sent == ["lunch"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_client_that_cannot_show_forms_is_told_which_requests_wait_and_where_to_answer_them(
    live: LiveServer, mode: str
) -> None:
    """A client without the elicitation capability is not sent forms it cannot show: the tool error names the open
    request, its thread and where to answer it, and an answer given there carries the run on."""
    async with httpx2.AsyncClient() as http:
        transport = streamable_http_client(f"{live.base_url}/mcp", http_client=http)
        async with Client(transport, mode=mode) as mcp:
            result = await mcp.call_tool("ops", {"message": "announce tea"})
    assert result.is_error
    said = "".join(part.text for part in result.content if isinstance(part, mcp_types.TextContent))
    with live.client() as rest:
        [request] = rest.get("/v1/requests").json()["requests"]
        assert request["id"] in said and request["thread_id"] in said, said
        assert "cannot show" in said and "/v1/requests/" in said and "inbox" in said, said
        decided = rest.post(f"/v1/requests/{request['id']}/decision", json={"kind": "approve"})
        assert decided.status_code == 200, decided.text
        assert decided.json()["run"]["output"].startswith("announced: tea")
