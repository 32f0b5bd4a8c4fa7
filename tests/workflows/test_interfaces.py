"""A workflow's `input` request on every interface: REST, the CLI and `sayso chat`, A2A and AG-UI.

Each interface shows the message, the payload and the schema, and sends an answer that the
runtime checks against the schema: a wrong one is refused naming the field, the pause stays
open, and a good one carries the workflow on. The concierge example (seed 004) is the workflow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pexpect
import pytest
from ag_ui.core import Event, RunFinishedEvent
from pydantic import TypeAdapter
from typer.testing import CliRunner

from sayso import Sayso, load_config
from sayso.cli import app
from sayso.protocols.a2a import a2a_router
from sayso.protocols.ag_ui import ag_ui_router
from sayso.server import create_app

from ..conftest import InProcess, LiveServer
from .one_node import one_node_workflow

NODE_STEPS = Path(__file__).resolve().parents[1] / "protocols" / "node" / "ag_ui_steps.mjs"
CONCIERGE = Path(__file__).resolve().parents[2] / "examples" / "concierge" / "sayso.yaml"
SAYSO_KEY = "https://sayso.dev/extensions/requests/v1"
A2A = {"A2A-Version": "1.0"}
EVENTS: TypeAdapter[Event] = TypeAdapter(Event)
runner = CliRunner()

GREET_NODES = """
from sayso.workflows import RequestInput


def ask_name():
    name = yield RequestInput("What is your name?", response_schema=str)
    return f"Hello, {name}!"
"""


@pytest.fixture
def greet(tmp_path: Path) -> Path:
    """A workflow that asks for text (`response_schema=str`), as a config file next to its node module."""
    return one_node_workflow(tmp_path, "greet", GREET_NODES, "ask_name", own_store=False)


@pytest.fixture
async def server() -> AsyncIterator[InProcess]:
    """The concierge example served in-process with REST, A2A and AG-UI."""
    sayso = Sayso(load_config(CONCIERGE))
    app = create_app(sayso, routers=[a2a_router(sayso), ag_ui_router(sayso)], expire_every_seconds=None)
    served = await InProcess(app=app, sayso=sayso).start()
    yield served
    await served.stop()


# REST


async def test_rest_lists_the_workflow_shows_its_input_and_refuses_a_wrong_value_field_by_field(
    server: InProcess,
) -> None:
    """`/v1/agents` lists the workflow; the inbox shows message and schema; a wrong `provide` is a 422 naming
    the field, the request stays open, and a good one carries the run to the next question."""
    async with server.client() as client:
        listed = (await client.get("/v1/agents")).json()["agents"]
        assert {"name": "concierge", "kind": "workflow", "entry": True} in [
            {k: a[k] for k in ("name", "kind", "entry")} for a in listed
        ]
        run = (await client.post("/v1/runs", json={"message": "Plan my day"})).json()
        [request] = (await client.get("/v1/requests")).json()["requests"]
        assert request["id"] == run["requests"][0]["id"]
        assert (request["kind"], request["node"], request["agent_path"]) == ("input", "ask_preferences", "concierge")
        assert request["message"].startswith("This is an interactive concierge")
        assert request["response_schema"]["required"] == ["city"]
        url = f"/v1/requests/{request['id']}/decision"
        refused = await client.post(url, json={"kind": "provide", "value": {"hobby": "fado", "age": "old"}})
        assert refused.status_code == 422
        problem = refused.json()
        assert problem["type"].endswith("invalid-decision") and problem["request_id"] == request["id"]
        assert sorted((e["loc"], e["msg"]) for e in problem["errors"]) == [
            (["age"], "'old' is not of type 'integer'"),
            (["city"], "field required"),
        ]
        assert (await client.get(f"/v1/requests/{request['id']}")).json()["status"] == "open"
        decided = await client.post(url, json={"kind": "provide", "value": {"city": "Lisbon", "hobby": "fado"}})
        assert decided.status_code == 200, decided.text
        [feedback] = decided.json()["run"]["requests"]
    assert (feedback["kind"], feedback["node"]) == ("input", "get_user_feedback")
    assert feedback["payload"]["itinerary"][1] == {
        "name": "An afternoon of fado",
        "description": "The best place in Lisbon for fado.",
    }
    assert set(feedback["response_schema"]["properties"]) == {"user_response", "done"}


async def test_rest_refuses_an_answer_holding_a_lone_surrogate_and_the_request_stays_open(server: InProcess) -> None:
    """JSON may escape a lone surrogate, which is no Unicode text and cannot be stored: the answer is a 422 naming
    the problem, not a server error, and the request takes a good answer after it."""
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "Plan my day"})).json()
        [request] = run["requests"]
        url = f"/v1/requests/{request['id']}/decision"
        body = '{"kind": "provide", "value": {"city": "Lis\\ud800bon"}}'
        refused = await client.post(url, content=body, headers={"content-type": "application/json"})
        assert refused.status_code == 422, refused.text
        assert "city: the text holds a lone surrogate" in refused.json()["detail"]
        assert (await client.get(f"/v1/requests/{request['id']}")).json()["status"] == "open"
        decided = await client.post(url, json={"kind": "provide", "value": {"city": "Lisbon"}})
    assert decided.status_code == 200, decided.text


async def test_rest_every_answer_the_person_gave_is_in_the_thread_in_order(server: InProcess) -> None:
    """After the concierge loop, `GET /v1/threads/{id}` (what a reload shows) holds the first message, each input
    answer where it was given (a decision line and the answer, like an approval's), then the plan."""
    answers = [
        {"city": "Lisbon", "hobby": "fado"},
        {"user_response": "add a tram ride", "done": False},
        {"user_response": "perfect", "done": True},
    ]
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "Plan my day"})).json()
        for value in answers:
            [request] = run["requests"]
            decided = await client.post(
                f"/v1/requests/{request['id']}/decision", json={"kind": "provide", "value": value}
            )
            assert decided.status_code == 200, decided.text
            run = decided.json()["run"]
        assert run["status"] == "completed"
        transcript = (await client.get(f"/v1/threads/{run['thread_id']}")).json()["transcript"]
    lines = [(e["role"], e.get("tool_name")) for e in transcript]
    assert lines == [
        ("user", None),
        ("decision", "ask_preferences"),
        ("tool_result", "ask_preferences"),
        ("decision", "get_user_feedback"),
        ("tool_result", "get_user_feedback"),
        ("decision", "get_user_feedback"),
        ("tool_result", "get_user_feedback"),
        ("assistant", None),
    ]
    given = [e["decision"] for e in transcript if e["role"] == "decision"]
    assert [(d["decision"], d["by"], d["value"]) for d in given] == [("provide", "person", v) for v in answers]
    assert transcript[-1]["text"].startswith("Your day in Lisbon")


# the command line


def cli_json(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def test_the_cli_answers_with_json_refuses_a_wrong_field_and_shows_the_command() -> None:
    """`sayso decide … answer '{...}'` answers an input; a wrong field exits 4 naming it; the panel shows the form."""
    shown = runner.invoke(app, ["run", str(CONCIERGE), "Plan my day"])
    assert shown.exit_code == 0, shown.output
    assert "asks for input at ask_preferences" in shown.stdout
    assert "answer: city (text, required), age (whole number), hobby (text)" in shown.stdout
    assert """answer '{"city": "..."}'""" in shown.stdout
    paused = cli_json("run", str(CONCIERGE), "Plan my day")
    request_id = paused["requests"][0]["id"]
    bad = runner.invoke(app, ["decide", str(CONCIERGE), request_id, "answer", '{"hobby": "fado"}'])
    assert bad.exit_code == 4 and "city: field required" in bad.stderr
    review = cli_json("decide", str(CONCIERGE), request_id, "answer", '{"city": "Porto", "hobby": "fado"}')
    [feedback] = review["requests"]
    assert feedback["node"] == "get_user_feedback" and feedback["payload"]["itinerary"][0]["name"]
    done = cli_json("decide", str(CONCIERGE), feedback["id"], "answer", '{"user_response": "great", "done": true}')
    assert done["status"] == "completed" and done["output"].startswith("Your day in Porto")


def test_the_cli_takes_plain_text_where_the_schema_asks_for_text(greet: Path) -> None:
    """For a string schema the words after `answer` are the answer, no JSON quoting."""
    paused = cli_json("run", str(greet), "hi")
    [request] = paused["requests"]
    assert request["response_schema"] == {"type": "string"}
    done = cli_json("decide", str(greet), request["id"], "answer", "Ada", "Lovelace")
    assert done["output"] == "Hello, Ada Lovelace!"


def test_chat_prompts_each_field_and_asks_again_after_a_refusal() -> None:
    """`sayso chat` asks the form field by field, checks each as it is typed (asking it again when refused), shows the
    proposal as a list, and the loop runs to the plan."""
    env = {**os.environ, "COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"}
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "sayso", "chat", str(CONCIERGE)],
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 100),
    )
    chat.expect("Running the workflow concierge")
    chat.expect("you>")
    chat.sendline("Plan my day")
    chat.expect(r"city \(text, required\)>")
    chat.sendline("")  # each field is checked as it is typed: the same field is asked again
    chat.expect("not accepted: city is required")
    chat.expect(r"city \(text, required\)>")
    chat.sendline("Lisbon")
    chat.expect(r"age \(whole number\)>")
    chat.sendline("old")
    chat.expect("not accepted: 'old' is not of type 'integer'; try again")
    chat.expect(r"age \(whole number\)>")
    chat.sendline("200")
    chat.expect("not accepted: 200 is greater than the maximum of 130; try again")
    chat.expect(r"age \(whole number\)>")
    chat.sendline("41")
    chat.expect(r"hobby \(text\)>")
    chat.sendline("fado")
    chat.expect(r"\)> ")
    chat.sendline("")
    chat.expect(r"pace .*> ")
    chat.sendline("")
    chat.expect(r"\d\. An afternoon of fado — ")  # the proposal, read as a list, not as JSON
    chat.expect(r"user_response \(text, required\)>")
    chat.sendline("lovely")
    chat.expect(r"done \(yes/no, default false\)>")
    chat.sendline("maybe")
    chat.expect("not accepted: 'maybe' is not of type 'boolean'")
    chat.expect(r"done \(yes/no, default false\)>")
    chat.sendline("y")
    chat.expect("Your day in Lisbon")
    chat.expect("you>")
    chat.sendeof()
    chat.expect(pexpect.EOF)


# A2A


async def a2a_send(client: httpx.AsyncClient, agent: str, message: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "SendMessage", "params": {"message": message}}
    response = await client.post(f"/a2a/{agent}", json=body, headers=A2A)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def a2a_message(*, text: str | None = None, data: Any = None, task_id: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": []}
    if text is not None:
        message["parts"].append({"text": text})
    if data is not None:
        message["parts"].append({"data": data})
    if task_id is not None:
        message["taskId"] = task_id
    return message


async def test_a2a_input_required_shows_the_message_and_takes_the_answer_as_a_data_part(server: InProcess) -> None:
    """The task waits in input-required with the message as text and schema and payload under sayso's key;
    a DataPart answers, a wrong one is a JSON-RPC error naming the field and the task still waits."""
    async with server.client() as client:
        card = (await client.get("/a2a/concierge/.well-known/agent-card.json")).json()
        assert card["name"] == "concierge"
        task = (await a2a_send(client, "concierge", a2a_message(text="Plan my day")))["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        status = task["status"]["message"]
        assert status["parts"][0]["text"].startswith("This is an interactive concierge")
        [ours] = status["metadata"][SAYSO_KEY]["requests"]
        assert (ours["kind"], ours["node"]) == ("input", "ask_preferences")
        assert ours["response_schema"]["required"] == ["city"]
        wrong = await a2a_send(client, "concierge", a2a_message(data={"hobby": "fado"}, task_id=task["id"]))
        refusal = wrong["error"]["message"]
        assert "city: field required" in refusal and "the task still waits" in refusal
        answer = {"city": "Lisbon", "hobby": "fado", "age": 41}
        review = (await a2a_send(client, "concierge", a2a_message(data=answer, task_id=task["id"])))["result"]["task"]
    assert review["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    [feedback] = review["status"]["message"]["metadata"][SAYSO_KEY]["requests"]
    assert feedback["node"] == "get_user_feedback"
    assert feedback["payload"]["itinerary"][1]["name"] == "An afternoon of fado"


async def test_a2a_refuses_two_data_parts_for_one_input_and_the_task_still_waits(server: InProcess) -> None:
    """Two values for one input are ambiguous: the answer is refused rather than the second silently dropped."""
    async with server.client() as client:
        task = (await a2a_send(client, "concierge", a2a_message(text="Plan my day")))["result"]["task"]
        two = a2a_message(data={"city": "Lisbon"}, task_id=task["id"])
        two["parts"].append({"data": {"city": "Porto"}})
        refused = await a2a_send(client, "concierge", two)
        assert "one DataPart" in refused["error"]["message"] and "the task still waits" in refused["error"]["message"]
        one = a2a_message(data={"city": "Porto"}, task_id=task["id"])
        review = (await a2a_send(client, "concierge", one))["result"]["task"]
    [feedback] = review["status"]["message"]["metadata"][SAYSO_KEY]["requests"]
    assert feedback["node"] == "get_user_feedback"


async def test_a2a_takes_text_for_a_string_schema(greet: Path) -> None:
    """A workflow asking for text is answered by a plain text part on its task."""
    sayso = Sayso(load_config(greet))
    app = create_app(sayso, routers=[a2a_router(sayso)], expire_every_seconds=None)
    served = await InProcess(app=app, sayso=sayso).start()
    try:
        async with served.client() as client:
            task = (await a2a_send(client, "greet", a2a_message(text="hi")))["result"]["task"]
            assert task["status"]["message"]["parts"][0]["text"] == "What is your name?"
            done = (await a2a_send(client, "greet", a2a_message(text="Ada", task_id=task["id"])))["result"]["task"]
    finally:
        await served.stop()
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"][0]["text"] == "Hello, Ada!"


# AG-UI


async def ag_ui(server: InProcess, body: dict[str, Any]) -> list[Any]:
    events: list[Any] = []
    async with server.client() as client, client.stream("POST", "/ag-ui/concierge", json=body) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(EVENTS.validate_python(json.loads(line[6:])))
    return events


def run_input(thread_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": uuid.uuid4().hex,
        "state": None,
        "messages": extra.pop("messages", []),
        "tools": [],
        "context": [],
        "forwardedProps": None,
        **extra,
    }


async def test_ag_ui_interrupts_with_the_schema_and_payload_and_checks_the_resume_the_same_way(
    server: InProcess,
) -> None:
    """The run ends on an interrupt carrying `responseSchema` (the input's) and the payload; a resume payload
    that breaks it is a RUN_ERROR naming the field, and a good one moves on to the next question."""
    start = run_input("thr-agui-wf", messages=[{"id": "m1", "role": "user", "content": "Plan my day"}])
    first = (await ag_ui(server, start))[-1]
    assert isinstance(first, RunFinishedEvent) and first.outcome is not None and first.outcome.type == "interrupt"
    (form,) = first.outcome.interrupts
    assert form.reason == "sayso:input" and form.message is not None and form.message.startswith("This is")
    assert form.response_schema is not None and form.response_schema["required"] == ["city"]
    assert form.metadata is not None and form.metadata["node"] == "ask_preferences"
    wrong = {"interruptId": form.id, "status": "resolved", "payload": {"hobby": "fado"}}
    refused = (await ag_ui(server, run_input("thr-agui-wf", resume=[wrong])))[-1]
    assert refused.type == "RUN_ERROR" and refused.code == "invalid_resume"
    assert "city: field required" in refused.message
    good = {"interruptId": form.id, "status": "resolved", "payload": {"city": "Lisbon", "hobby": "fado"}}
    second = (await ag_ui(server, run_input("thr-agui-wf", resume=[good])))[-1]
    assert isinstance(second, RunFinishedEvent) and second.outcome is not None and second.outcome.type == "interrupt"
    (feedback,) = second.outcome.interrupts
    assert feedback.metadata is not None and feedback.metadata["node"] == "get_user_feedback"
    assert feedback.metadata["payload"]["itinerary"][1]["name"] == "An afternoon of fado"
    assert feedback.response_schema is not None and "done" in feedback.response_schema["properties"]


TWO_QUESTIONS_NODES = """
from sayso.workflows import RequestInput


def ask_both():
    name = yield RequestInput("What is your name?", response_schema=str)
    age = yield RequestInput("How old are you?", response_schema=int)
    return f"{name} is {age}"
"""


def test_the_official_ag_ui_client_answers_two_inputs_in_a_row(tmp_path: Path) -> None:
    """@ag-ui/client's HttpAgent keeps the result streamed for the first input as a tool message, with no call
    before it (an input is no model call), and sends it back with the next resume: it echoes what the server
    sent, so the second input takes its answer instead of the resume being refused."""
    sayso = Sayso(load_config(one_node_workflow(tmp_path, "two", TWO_QUESTIONS_NODES, "ask_both", own_store=False)))
    server = LiveServer.in_thread(
        create_app(sayso, routers=[a2a_router(sayso), ag_ui_router(sayso)], expire_every_seconds=None)
    )
    steps = [
        {"say": "hi"},
        {"resume": {"status": "resolved", "payload": "Ada"}},
        {"resume": {"status": "resolved", "payload": 36}},
    ]
    try:
        done = subprocess.run(
            ["node", str(NODE_STEPS), f"{server.base_url}/ag-ui/two", "thr-two", json.dumps(steps)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=NODE_STEPS.parent,
            check=False,
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    first, second, third = (json.loads(line) for line in done.stdout.splitlines())
    assert [i["message"] for i in first["outcome"]["interrupts"]] == ["What is your name?"]
    assert [i["message"] for i in second["outcome"]["interrupts"]] == ["How old are you?"]
    assert third["error"] is None
    assert third["outcome"] == {"type": "success"}
    assert third["result"] == "Ada is 36"


COUNTING_NODES = """
from pathlib import Path

from sayso.workflows import RequestInput

CALLS = Path(__file__).parent / "calls.txt"


def note(name):
    with CALLS.open("a") as calls:
        calls.write(name + "\\n")


def prepare(node_input: str) -> str:
    note("prepare")
    return node_input.upper()


def ask(node_input: str):
    note("ask")
    answer = yield RequestInput(f"Confirm {node_input}?", response_schema=bool)
    return f"{node_input}: {'yes' if answer else 'no'}"
"""


def test_a_fresh_process_resumes_without_redoing_finished_nodes(tmp_path: Path) -> None:
    """One `sayso` process pauses and exits; another answers from the store alone; the node before the question
    ran once in all (the asking node is replayed with its answer, as documented)."""
    (tmp_path / "counting_nodes.py").write_text(COUNTING_NODES)
    (tmp_path / "idle.script.yaml").write_text("name: idle\nrules: []\nfallback: idle\n")
    config = tmp_path / "counting.yaml"
    config.write_text(
        "models: {idle: {scripted: idle.script.yaml}}\n"
        "agents: {idle: {model: idle}}\n"
        "workflows:\n"
        "  confirm:\n"
        "    nodes: {prepare: 'counting_nodes:prepare', ask: 'counting_nodes:ask'}\n"
        "    edges: [[START, prepare, ask]]\n"
        "entry: confirm\n"
    )
    sayso = [sys.executable, "-m", "sayso"]
    first = subprocess.run([*sayso, "run", str(config), "order 66", "--json"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    [request] = json.loads(first.stdout)["requests"]
    assert request["message"] == "Confirm ORDER 66?"
    second = subprocess.run(
        [*sayso, "decide", str(config), request["id"], "answer", "true", "--json"], capture_output=True, text=True
    )
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["output"] == "ORDER 66: yes"
    assert (tmp_path / "calls.txt").read_text().split() == ["prepare", "ask", "ask"]


@pytest.mark.parametrize(("said", "read"), [("yes", "yes"), ("No", "no"), ("y", "yes"), ("false", "no")])
def test_a_yes_or_no_input_takes_the_words_its_panel_asks_for(tmp_path: Path, said: str, read: str) -> None:
    """The panel says `answer: yes/no` and `sayso chat` takes yes or no; `sayso decide ... answer yes` was refused
    ("'yes' is not of type 'boolean'"). A word that is neither is still refused, the input left open."""
    (tmp_path / "yes_no_nodes.py").write_text(COUNTING_NODES)
    (tmp_path / "idle.script.yaml").write_text("name: idle\nrules: []\nfallback: idle\n")
    config = tmp_path / "yes_no.yaml"
    config.write_text(
        "models: {idle: {scripted: idle.script.yaml}}\n"
        "agents: {idle: {model: idle}}\n"
        "workflows:\n"
        "  confirm:\n"
        "    nodes: {prepare: 'yes_no_nodes:prepare', ask: 'yes_no_nodes:ask'}\n"
        "    edges: [[START, prepare, ask]]\n"
        "entry: confirm\n"
    )
    first = runner.invoke(app, ["run", str(config), "order 7", "--json"])
    assert first.exit_code == 0, first.output
    [request] = json.loads(first.stdout)["requests"]
    refused = runner.invoke(app, ["decide", str(config), request["id"], "answer", "maybe"])
    assert refused.exit_code == 4 and "'maybe' is not of type 'boolean'" in refused.output
    decided = runner.invoke(app, ["decide", str(config), request["id"], "answer", said, "--json"])
    assert decided.exit_code == 0, decided.output
    assert json.loads(decided.stdout)["output"] == f"ORDER 7: {read}"
