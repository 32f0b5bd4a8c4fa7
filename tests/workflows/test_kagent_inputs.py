"""A workflow's input over kagent's HITL (issue 23, point 5): an `ask_user_request` a kagent client answers.

v1 (the extension requested) and 0.x (`kagent_compat`, DataParts): the input is asked as kagent
questions built from its message and schema, sayso's own key beside them, and kagent's answer
carries the workflow on; a wrong answer is refused naming the field and the task still waits.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from sayso import Config, Sayso, load_config
from sayso.protocols.a2a import a2a_router
from sayso.server import create_app

from ..conftest import InProcess
from .one_node import one_node_workflow

CONCIERGE = Path(__file__).resolve().parents[2] / "examples" / "concierge" / "sayso.yaml"
URI = "https://kagent.dev/extensions/hitl/v1"
SAYSO_KEY = "https://sayso.dev/extensions/requests/v1"
HITL = {"A2A-Version": "1.0", "A2A-Extensions": URI}
PLAIN = {"A2A-Version": "1.0"}
GENERIC = "Human input is required before the agent can continue."

Serve = Callable[[Config], Any]


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Config], Any]]:
    started: list[InProcess] = []

    async def start(config: Config) -> InProcess:
        sayso = Sayso(config)
        served = await InProcess(
            app=create_app(sayso, routers=[a2a_router(sayso)], expire_every_seconds=None), sayso=sayso
        ).start()
        started.append(served)
        return served

    yield start
    for served in started:
        await served.stop()


async def send(
    client: httpx.AsyncClient, agent: str, message: dict[str, Any], headers: dict[str, str] = HITL
) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "SendMessage", "params": {"message": message}}
    response = await client.post(f"/a2a/{agent}", json=body, headers=headers)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def message(
    *, text: str | None = None, task: dict[str, Any] | None = None, payload: Any = None, data: Any = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": []}
    if text is not None:
        out["parts"].append({"text": text})
    if data is not None:
        out["parts"].append({"data": data})
    if task is not None:
        out.update(taskId=task["id"], contextId=task["contextId"])
    if payload is not None:
        out.update(extensions=[URI], metadata={URI: payload})
    return out


def answer(asked: dict[str, Any], *words: list[str]) -> dict[str, Any]:
    return {"type": "ask_user_response", "id": asked["id"], "answers": [{"answer": w} for w in words]}


async def test_a_kagent_v1_client_answers_the_concierges_inputs_to_the_end(serve: Serve) -> None:
    """Each input is an `ask_user_request` (one question per field, the message first); kagent's answers, read
    by each field's type, carry the workflow through the feedback loop to its plan."""
    server = await serve(load_config(CONCIERGE))
    async with server.client() as client:
        task = (await send(client, "concierge", message(text="Plan my day")))["result"]["task"]
        status = task["status"]["message"]
        asked = status["metadata"][URI]
        assert status["extensions"] == [URI]
        assert status["parts"][0]["text"].startswith("This is an interactive concierge")
        assert asked["type"] == "ask_user_request" and set(asked) == {"type", "id", "questions"}
        questions = asked["questions"]
        assert questions[0]["question"].startswith("This is an interactive concierge")
        assert questions[0]["question"].endswith("\n\nCity: The city to spend the day in.")
        assert questions[1]["question"] == "Age (optional: answer - to leave it out): Your age."
        assert questions[4]["choices"] == ["relaxed", "packed"]
        [ours] = status["metadata"][SAYSO_KEY]["requests"]
        assert (ours["kind"], ours["node"], ours["id"]) == ("input", "ask_preferences", asked["id"])

        wrong = await send(
            client, "concierge", message(task=task, payload=answer(asked, ["-"], ["-"], ["fado"], ["-"], ["-"]))
        )
        assert "city: field required" in wrong["error"]["message"]
        wrong_id = await send(client, "concierge", message(task=task, payload={**answer(asked, ["x"]), "id": "nope"}))
        assert "invalid correlation" in wrong_id["error"]["message"]

        good = answer(asked, ["Lisbon"], ["41"], ["fado"], ["-"], ["packed"])
        review = (await send(client, "concierge", message(task=task, payload=good)))["result"]["task"]
        feedback = review["status"]["message"]["metadata"][URI]
        assert [q["choices"] for q in feedback["questions"]] == [[], ["true", "false"]]
        [shown] = review["status"]["message"]["metadata"][SAYSO_KEY]["requests"]
        assert shown["payload"]["itinerary"][1]["name"] == "An afternoon of fado"

        done = answer(feedback, ["Lovely, keep it"], ["true"])
        final = (await send(client, "concierge", message(task=review, payload=done)))["result"]["task"]
    assert final["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "Lovely, keep it" in final["artifacts"][0]["parts"][0]["text"]
    history = final["history"]
    answers = [m["metadata"][URI] for m in history if m["role"] == "ROLE_USER" and URI in m.get("metadata", {})]
    assert answers[0]["answers"][0] == {"answer": ["Lisbon"]} and answers[0]["answers"][1] == {"answer": ["41"]}


GREET_NODES = """
from sayso.workflows import RequestInput


def ask_name():
    name = yield RequestInput("", response_schema=str)
    return f"Hello, {name}!"
"""


def greet_config(tmp_path: Path) -> Config:
    return load_config(one_node_workflow(tmp_path, "greet", GREET_NODES, "ask_name", module="nameless_nodes"))


async def test_an_input_without_a_message_reads_kagents_generic_line(
    serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no message, the status text is kagent's line for a pause with no tool call; one answer fills it."""
    monkeypatch.syspath_prepend(str(tmp_path))
    server = await serve(greet_config(tmp_path))
    async with server.client() as client:
        task = (await send(client, "greet", message(text="hi")))["result"]["task"]
        status = task["status"]["message"]
        assert status["parts"] == [{"text": GENERIC}]
        asked = status["metadata"][URI]
        assert asked["questions"] == [{"question": GENERIC, "choices": [], "multiple": False}]
        done = (await send(client, "greet", message(task=task, payload=answer(asked, ["Ada"]))))["result"]["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"][0]["text"] == "Hello, Ada!"


async def test_a_kagent_0x_client_answers_an_input_with_ask_user_answers(serve: Serve) -> None:
    """In compat mode a client without the header gets an `ask_user` confirmation DataPart and answers it with
    `ask_user_answers`; a reject skips the input, as a 0.x reject does; the history shows the DataParts."""
    config = load_config(CONCIERGE)
    config = config.model_copy(update={"a2a": config.a2a.model_copy(update={"kagent_compat": True})})
    server = await serve(config)
    async with server.client() as client:
        task = (await send(client, "concierge", message(text="Plan my day"), PLAIN))["result"]["task"]
        [part] = task["status"]["message"]["parts"]
        call = part["data"]["args"]["originalFunctionCall"]
        assert (part["data"]["name"], call["name"]) == ("adk_request_confirmation", "ask_user")
        assert len(call["args"]["questions"]) == 5
        assert part["data"]["args"]["toolConfirmation"]["payload"] is None
        answers = [{"answer": a} for a in (["Porto"], ["-"], ["-"], ["-"], ["relaxed"])]
        decision = {"decision_type": "approve", "ask_user_answers": answers}
        review = (await send(client, "concierge", message(task=task, data=decision), PLAIN))["result"]["task"]
        [again] = review["status"]["message"]["parts"]
        assert again["data"]["args"]["originalFunctionCall"]["args"]["questions"][1]["choices"] == ["true", "false"]
        read = await send(client, "concierge", message(task=review, data={"decision_type": "reject"}), PLAIN)
    failed = read["result"]["task"]
    assert failed["status"]["state"] == "TASK_STATE_FAILED"  # the concierge cannot go on without feedback
    assert "skipped the input of node 'get_user_feedback'" in failed["status"]["message"]["parts"][0]["text"]
    shown = [m for m in failed["history"] if m["role"] == "ROLE_AGENT" and m["parts"] and "data" in m["parts"][0]]
    assert len(shown) == 2 and all(URI not in m.get("metadata", {}) for m in shown)
    decided = [m["parts"][0]["data"] for m in failed["history"] if m["role"] == "ROLE_USER" and "data" in m["parts"][0]]
    assert decided[0]["ask_user_answers"][0] == {"answer": ["Porto"]}
    assert decided[1]["decision_type"] == "reject"


LIST_NODES = """
from pydantic import BaseModel

from sayso.workflows import RequestInput


class Seats(BaseModel):
    name: str
    rows: list[int]
    grid: list[list[int]] | None = None


def ask_seats():
    seats = yield RequestInput("Which seats?", response_schema=Seats)
    return f"{seats.name}: rows {sum(seats.rows)}, grid {seats.grid}"
"""


async def test_a_kagent_client_answers_a_list_of_numbers_one_word_each(
    serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list field is asked as a multiple-answer question, its answers the list's items: each is read by the
    items' type (`3` a number, `[1, 2]` a list), so a `list[int]` field can be answered at all."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "seats_nodes.py").write_text(LIST_NODES)
    (tmp_path / "idle.script.yaml").write_text("name: idle\nrules: []\nfallback: idle\n")
    file = tmp_path / "seats.yaml"
    file.write_text(
        f"store: sqlite:///{tmp_path / 'seats.db'}\n"
        "models: {idle: {scripted: idle.script.yaml}}\n"
        "agents: {idle: {model: idle}}\n"
        "workflows:\n"
        "  seats:\n"
        "    nodes: {ask: 'seats_nodes:ask_seats'}\n"
        "    edges: [[START, ask]]\n"
        "entry: seats\n"
    )
    server = await serve(load_config(file))
    async with server.client() as client:
        task = (await send(client, "seats", message(text="book")))["result"]["task"]
        asked = task["status"]["message"]["metadata"][URI]
        assert [q["multiple"] for q in asked["questions"]] == [False, True, True]
        wrong = await send(client, "seats", message(task=task, payload=answer(asked, ["Ada"], ["3", "x"], ["-"])))
        assert "rows.1: 'x' is not of type 'integer'" in wrong["error"]["message"]
        good = answer(asked, ["Ada"], ["3", " 4 "], ["[1, 2]", "[3]"])
        done = (await send(client, "seats", message(task=task, payload=good)))["result"]["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED", done["status"]
    assert done["artifacts"][0]["parts"][0]["text"] == "Ada: rows 7, grid [[1, 2], [3]]"
