"""Elicitation requests on the wire: REST (the inbox and decisions), A2A (kagent's HITL) and AG-UI (interrupts).

The server runs in-process as `sayso serve` builds it, with its MCP host in the app's lifespan, so
a form the test server pushes mid-call is answered on that same call from whichever interface.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui.core import Event, RunFinishedEvent
from pydantic import TypeAdapter

from sayso import Config, Sayso
from sayso._runtime import _live
from sayso.protocols.a2a import a2a_router
from sayso.protocols.ag_ui import ag_ui_router
from sayso.server import create_app
from sayso.server._app import DEFAULT_RECOVER_EVERY_SECONDS

from ..conftest import InProcess
from ..models import tool_model, verbs
from .conftest import ElicitServer
from .test_elicitation_cli import open_form, start_run, write_config

ROUTE = verbs(book=("book_table", "day"), sign_in="sign_in")
"""`book DAY` books a table on the test server, `sign in` signs in to it; the model says what the call returned."""

PARTY = {"people": 2, "name": "Ada"}
URI = "https://kagent.dev/extensions/hitl/v1"
SAYSO_KEY = "https://sayso.dev/extensions/requests/v1"
A2A_HEADERS = {"A2A-Version": "1.0", "A2A-Extensions": URI}
EVENTS: TypeAdapter[Event] = TypeAdapter(Event)

Serve = Callable[..., Awaitable[InProcess]]


@pytest.fixture
async def serve(tmp_path: Path, elicit_server: ElicitServer) -> AsyncIterator[Serve]:
    """Start the server (REST, A2A, AG-UI) for an agent `host` that books tables on the test server."""
    started: list[InProcess] = []

    async def factory(*, sweeps: bool = True) -> InProcess:
        config = Config.model_validate(
            {
                "store": f"sqlite:///{tmp_path / 'sayso.db'}",
                "models": {"m": "test"},
                "mcp_servers": {"booking": {"url": elicit_server.mcp_url, "session": "legacy"}},
                "agents": {"host": {"model": "m", "mcp": [{"server": "booking", "tools": ["book_table", "sign_in"]}]}},
                "base_dir": tmp_path,
            }
        )
        sayso = Sayso(config, models={"m": tool_model(ROUTE, read="{result}")})
        app = create_app(
            sayso,
            routers=[a2a_router(sayso), ag_ui_router(sayso)],
            expire_every_seconds=None,
            recover_every_seconds=DEFAULT_RECOVER_EVERY_SECONDS if sweeps else None,
        )
        started.append(await InProcess(app=app, sayso=sayso).start())
        return started[-1]

    yield factory
    for served in started:
        await served.stop()


async def test_rest_lists_a_form_in_the_inbox_refuses_bad_fields_and_takes_the_answer(
    serve: Serve, elicit_server: ElicitServer
) -> None:
    """The inbox shows the server's form; a wrong answer is a 422 naming each field; the right one finishes the run."""
    server = await serve()
    async with server.client() as client:
        paused = (await client.post("/v1/runs", json={"message": "book fri"})).json()
        assert paused["status"] == "paused"
        inbox = (await client.get("/v1/requests", params={"kind": "elicitation"})).json()
        [request] = inbox["requests"]
        assert request["kind"] == "elicitation"
        assert (request["mode"], request["server"], request["tool_name"], request["durable"]) == (
            "form",
            "booking",
            "book_table",
            False,
        )
        assert request["message"] == "Booking for fri: how many people, and under which name?"
        assert set(request["requested_schema"]["properties"]) == {"people", "name"}

        decision = f"/v1/requests/{request['id']}/decision"
        refused = await client.post(decision, json={"kind": "accept", "content": {"people": "many"}})
        assert refused.status_code == 422
        problem = refused.json()
        assert {tuple(e["loc"]): e["msg"] for e in problem["errors"]} == {
            ("content", "people"): "'many' is not of type 'integer'",
            ("content", "name"): "is required",
        }
        assert (await client.get(f"/v1/runs/{paused['run_id']}")).json()["status"] == "paused"

        done = await client.post(decision, json={"kind": "accept", "content": {"people": 2, "name": "Ada"}})
        assert done.status_code == 200, done.text
        assert done.json()["run"]["output"] == "Booked fri for 2 (Ada)"
    assert elicit_server.answers() == ["accept"]


async def test_rest_shows_a_page_to_visit_and_done_finishes_the_call(serve: Serve, elicit_server: ElicitServer) -> None:
    """A URL elicitation carries its page; `{"kind": "accept"}` is "done", `decline` and `cancel` are refusals."""
    server = await serve()
    async with server.client() as client:
        paused = (await client.post("/v1/runs", json={"message": "sign in"})).json()
        [request] = paused["requests"]
        assert (request["mode"], request["url"], request["elicitation_id"]) == (
            "url",
            f"{elicit_server.base_url}/login?user=ada",
            "login-1",
        )
        done = await client.post(f"/v1/requests/{request['id']}/decision", json={"kind": "accept"})
        assert done.json()["run"]["output"] == "sign-in accept"
        again = (await client.post("/v1/runs", json={"message": "sign in"})).json()
        cancelled = await client.post(f"/v1/requests/{again['requests'][0]['id']}/decision", json={"kind": "cancel"})
        assert cancelled.json()["run"]["output"] == "sign-in cancel"


async def a2a_send(client: httpx.AsyncClient, message: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "SendMessage", "params": {"message": message}}
    response = await client.post("/a2a/host", json=body, headers=A2A_HEADERS)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    assert "result" in result, result
    task: dict[str, Any] = result["result"]["task"]
    return task


def a2a_message(text: str | None = None, *, task: dict[str, Any] | None = None, payload: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": []}
    if text is not None:
        message["parts"].append({"text": text})
    if task is not None:
        message.update(taskId=task["id"], contextId=task["contextId"])
    if payload is not None:
        message.update(metadata={URI: payload}, extensions=[URI])
    return message


async def test_a2a_shows_a_form_as_kagent_questions_and_takes_kagent_answers(
    serve: Serve, elicit_server: ElicitServer
) -> None:
    """A kagent client sees an ask_user_request (accept, decline or cancel, then each field) and answers it as usual."""
    server = await serve()
    async with server.client() as client:
        task = await a2a_send(client, a2a_message("book fri"))
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        message = task["status"]["message"]
        payload = message["metadata"][URI]
        assert payload["type"] == "ask_user_request"
        assert [q["question"] for q in payload["questions"]] == [
            "Booking for fri: how many people, and under which name?",
            "People",
            "Name",
        ]
        assert payload["questions"][0]["choices"] == ["accept", "decline", "cancel"]
        [ours] = message["metadata"][SAYSO_KEY]["requests"]
        assert (ours["kind"], ours["mode"], ours["respond_with"]) == ("elicitation", "form", "elicitation_response")
        answer = {
            "type": "ask_user_response",
            "id": payload["id"],
            "answers": [{"answer": a} for a in (["accept"], ["2"], ["Ada"])],
        }
        done = await a2a_send(client, a2a_message(task=task, payload=answer))
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        assert "Booked fri for 2 (Ada)" in json.dumps(done)

        declined = await a2a_send(client, a2a_message("book sat"))
        request_id = declined["status"]["message"]["metadata"][URI]["id"]
        response = {"type": "elicitation_response", "id": request_id, "action": "decline"}
        finished = await a2a_send(client, a2a_message(task=declined, payload=response))
        assert "Booking declined" in json.dumps(finished)
    assert elicit_server.bookings() == ["fri:2:Ada"]


async def test_an_answer_the_holder_carries_on_first_still_returns_the_finished_run(
    serve: Serve, elicit_server: ElicitServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server holding a live form also watches for answers given anywhere and carries the run on itself; an A2A
    or AG-UI answer given here as the watch looks waits for that carry-on and returns the finished run, not one
    still working (A2A) or an error (AG-UI)."""
    monkeypatch.setattr(_live, "POLL_SECONDS", 0.002)  # the watch looks all the time: it often takes the answer first
    server = await serve()
    async with server.client() as client:
        for day in ("mon", "tue", "wed", "thu", "fri", "sat"):
            task = await a2a_send(client, a2a_message(f"book {day}"))
            asked = task["status"]["message"]["metadata"][URI]
            answers = [{"answer": a} for a in (["accept"], ["2"], ["Ada"])]
            answer = {"type": "ask_user_response", "id": asked["id"], "answers": answers}
            done = await a2a_send(client, a2a_message(task=task, payload=answer))
            assert done["status"]["state"] == "TASK_STATE_COMPLETED", done["status"]
            assert f"Booked {day} for 2 (Ada)" in json.dumps(done)
        for n in range(6):  # AG-UI's resume skips what it leaves out: it raced the watch as well
            user = {"id": uuid.uuid4().hex, "role": "user", "content": "book sun"}
            [*_, asked] = await ag_ui_post(client, ag_ui_input(f"thr-race-{n}", [user]))
            assert isinstance(asked, RunFinishedEvent) and asked.outcome is not None
            assert asked.outcome.type == "interrupt"
            [pending] = asked.outcome.interrupts
            entry = {"interruptId": pending.id, "status": "resolved", "payload": {"action": "accept", "content": PARTY}}
            [*_, done] = await ag_ui_post(client, ag_ui_input(f"thr-race-{n}", [], resume=[entry]))
            assert isinstance(done, RunFinishedEvent), done
            assert done.outcome is not None and done.outcome.type == "success"
            run = (await client.get(f"/v1/runs/{(done.metadata or {})['sayso_run_id']}")).json()
            assert run["status"] == "completed", run  # finished, not still being carried on by the watch
    assert len(elicit_server.bookings()) == 12


async def ag_ui_post(client: httpx.AsyncClient, body: dict[str, Any]) -> list[Any]:
    events: list[Any] = []
    async with client.stream("POST", "/ag-ui/host", json=body) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(EVENTS.validate_python(json.loads(line[6:])))
    return events


def ag_ui_input(thread_id: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": uuid.uuid4().hex,
        "state": None,
        "messages": messages,
        "tools": [],
        "context": [],
        "forwardedProps": None,
        **extra,
    }


async def test_ag_ui_interrupts_with_the_requested_schema_and_resumes_with_the_content(
    serve: Serve, elicit_server: ElicitServer
) -> None:
    """RUN_FINISHED interrupts with reason sayso:elicitation whose responseSchema holds the server's form."""
    server = await serve()
    async with server.client() as client:
        user = {"id": uuid.uuid4().hex, "role": "user", "content": "book sun"}
        events = await ag_ui_post(client, ag_ui_input("thr-elicit", [user]))
        last = events[-1]
        assert isinstance(last, RunFinishedEvent)
        assert last.outcome is not None and last.outcome.type == "interrupt"
        [pending] = last.outcome.interrupts
        assert pending.reason == "sayso:elicitation"
        assert pending.message == "Booking for sun: how many people, and under which name?"
        schema = pending.response_schema or {}
        assert schema["required"] == ["action"]
        assert set(schema["properties"]["content"]["properties"]) == {"people", "name"}
        assert (pending.metadata or {})["mode"] == "form"
        entry = {
            "interruptId": pending.id,
            "status": "resolved",
            "payload": {"action": "accept", "content": {"people": 5, "name": "Bo"}},
        }
        resumed = await ag_ui_post(client, ag_ui_input("thr-elicit", [], resume=[entry]))
        done = resumed[-1]
        assert isinstance(done, RunFinishedEvent)
        assert done.outcome is not None and done.outcome.type == "success"
    assert elicit_server.bookings() == ["sun:5:Bo"]


# --- an answer the MCP client could not deliver is refused before it is recorded (issue 22 ¶9)

UNDELIVERABLE = [
    pytest.param({"people": 2, "name": "Ada", "x": {"a": 1}}, {"x": "is not a field of this form"}, id="extra-field"),
    pytest.param(
        {"people": 2, "name": {"first": "Ada"}},
        {"name": "{'first': 'Ada'} is not of type 'string'"},
        id="nested-value",
    ),
]


@pytest.mark.parametrize(("content", "errors"), UNDELIVERABLE)
async def test_rest_refuses_an_answer_the_mcp_client_could_not_deliver_and_the_form_stays_open(
    serve: Serve, elicit_server: ElicitServer, content: dict[str, Any], errors: dict[str, str]
) -> None:
    server = await serve()
    async with server.client() as client:
        paused = (await client.post("/v1/runs", json={"message": "book fri"})).json()
        decision = f"/v1/requests/{paused['requests'][0]['id']}/decision"
        refused = await client.post(decision, json={"kind": "accept", "content": content})
        assert refused.status_code == 422, refused.text
        assert {e["loc"][-1]: e["msg"] for e in refused.json()["errors"]} == errors
        assert (await client.get(f"/v1/runs/{paused['run_id']}")).json()["status"] == "paused"
        assert elicit_server.answers() == []
        done = await client.post(decision, json={"kind": "accept", "content": {"people": 2, "name": "Ada"}})
        assert done.json()["run"]["output"] == "Booked fri for 2 (Ada)"
    assert elicit_server.answers() == ["accept"]


async def test_a2a_refuses_an_answer_with_an_extra_field_and_the_task_still_waits(
    serve: Serve, elicit_server: ElicitServer
) -> None:
    server = await serve()
    async with server.client() as client:
        task = await a2a_send(client, a2a_message("book fri"))
        request_id = task["status"]["message"]["metadata"][URI]["id"]
        content = {"people": 2, "name": "Ada", "x": {"a": 1}}
        answer = {"type": "elicitation_response", "id": request_id, "action": "accept", "content": content}
        body = {
            "jsonrpc": "2.0",
            "id": "1",
            "method": "SendMessage",
            "params": {"message": a2a_message(task=task, payload=answer)},
        }
        refused = (await client.post("/a2a/host", json=body, headers=A2A_HEADERS)).json()
        assert "x: is not a field of this form" in refused["error"]["message"]
        get = {"jsonrpc": "2.0", "id": "2", "method": "GetTask", "params": {"id": task["id"]}}
        still = (await client.post("/a2a/host", json=get, headers=A2A_HEADERS)).json()["result"]
        assert still["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert elicit_server.answers() == []


async def test_ag_ui_refuses_an_answer_with_an_extra_field_and_the_interrupt_stays_open(
    serve: Serve, elicit_server: ElicitServer
) -> None:
    server = await serve()
    async with server.client() as client:
        user = {"id": uuid.uuid4().hex, "role": "user", "content": "book sun"}
        last = (await ag_ui_post(client, ag_ui_input("thr-extra", [user])))[-1]
        assert isinstance(last, RunFinishedEvent) and last.outcome is not None
        [pending] = last.outcome.interrupts  # type: ignore[union-attr]
        content = {"people": 5, "name": "Bo", "x": {"a": 1}}
        entry = {"interruptId": pending.id, "status": "resolved", "payload": {"action": "accept", "content": content}}
        refused = await ag_ui_post(client, ag_ui_input("thr-extra", [], resume=[entry]))
        assert refused[-1].type == "RUN_ERROR" and "x: is not a field of this form" in refused[-1].message
        entry["payload"] = {"action": "accept", "content": {"people": 5, "name": "Bo"}}
        done = (await ag_ui_post(client, ag_ui_input("thr-extra", [], resume=[entry])))[-1]
        assert isinstance(done, RunFinishedEvent) and done.outcome is not None and done.outcome.type == "success"
    assert elicit_server.bookings() == ["sun:5:Bo"]


# --- a form whose holder died is refused with why, on every wire (issue 22 ¶3)


async def orphaned_form(tmp_path: Path, elicit_server: ElicitServer) -> dict[str, Any]:
    """A form held by a `sayso run` on this store that was then killed (SIGKILL): open, with nobody to deliver it."""
    config = write_config(tmp_path, elicit_server, replay=False)
    holder = start_run(config, "book fri")
    request = open_form(config, holder)
    holder.kill()
    holder.communicate(timeout=60)
    return request


ENDED = "the call that asked this has ended: the process that held it stopped"


async def test_a2a_refuses_an_answer_to_a_form_whose_holder_died_saying_why(
    tmp_path: Path, serve: Serve, elicit_server: ElicitServer
) -> None:
    """A kagent answer to a form whose holding process died is refused with why; the form closes as cancelled."""
    request = await orphaned_form(tmp_path, elicit_server)
    server = await serve(sweeps=False)
    async with server.client() as client:
        get = {"jsonrpc": "2.0", "id": "1", "method": "GetTask", "params": {"id": request["run_id"]}}
        task = (await client.post("/a2a/host", json=get, headers=A2A_HEADERS)).json()["result"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        answer = {"type": "elicitation_response", "id": request["id"], "action": "accept", "content": PARTY}
        body = {
            "jsonrpc": "2.0",
            "id": "2",
            "method": "SendMessage",
            "params": {"message": a2a_message(task=task, payload=answer)},
        }
        refused = (await client.post("/a2a/host", json=body, headers=A2A_HEADERS)).json()
        assert ENDED in refused["error"]["message"], refused
        get["id"] = "3"
        ended = (await client.post("/a2a/host", json=get, headers=A2A_HEADERS)).json()["result"]
        assert ended["status"]["state"] == "TASK_STATE_COMPLETED"
    assert elicit_server.bookings() == []


async def test_ag_ui_refuses_an_answer_to_a_form_whose_holder_died_saying_why(
    tmp_path: Path, serve: Serve, elicit_server: ElicitServer
) -> None:
    """An AG-UI resume of a form whose holding process died ends in a conflict RUN_ERROR saying why."""
    request = await orphaned_form(tmp_path, elicit_server)
    server = await serve(sweeps=False)
    async with server.client() as client:
        entry = {"interruptId": request["id"], "status": "resolved", "payload": {"action": "accept", "content": PARTY}}
        refused = await ag_ui_post(client, ag_ui_input(request["thread_id"], [], resume=[entry]))
        assert refused[-1].type == "RUN_ERROR" and refused[-1].code == "conflict", refused[-1]
        assert ENDED in refused[-1].message
        assert (await client.get("/v1/requests")).json()["requests"] == []
    assert elicit_server.bookings() == []
