"""AG-UI inputs that carry what the thread already has: a message is taken once, by its AG-UI id.

An AG-UI client sends the whole history with every run. The HttpAgent's history after a workflow's
interrupt still ends with the person's message (a workflow streams no assistant message), so each
cancel once read it as new and started the workflow again; a client that sent an earlier input
again re-ran its turn. And what an input adds beside a resume (a new message after a browser
tool's answer, or with the resume itself) was dropped.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo

from sayso import Sayso
from sayso.workflows import START, InputSkipped, RequestInput, Workflow

from ..conftest import InProcess, LiveServer
from ..models import ToolModel
from ..tools import RAN, ran
from .conftest import NOT_ASKED, ServerFactory, client_tool, example_config, protocol_app
from .test_ag_ui import finished, interrupt_of, post, run_input, types, user
from .test_ag_ui_kaboo import STEPS, drive
from .test_ag_ui_node import NODE_DIR, needs_node

PICK = {"name": "pick_color", "description": "Ask the browser for a color", "parameters": {"type": "object"}}


def charge(node_input: str) -> str:
    """A node with a side effect: it must run once per message."""
    RAN.append(("charge", {"input": node_input}))
    return "charged"


def ask_city(node_input: str) -> Any:
    """Ask for a city; a skipped question carries on without one."""
    try:
        city = yield RequestInput("Which city?", response_schema=str)
    except InputSkipped:
        return "no city"
    return city


def done(node_input: str) -> str:
    return f"done: {node_input}"


def charge_then_ask() -> Workflow:
    return Workflow("wf", edges=[(START, charge, ask_city, done)])


async def request_state(server: InProcess, request_id: str) -> dict[str, Any]:
    async with server.client() as client:
        response = await client.get(f"/v1/requests/{request_id}")
    assert response.status_code == 200, response.text
    state: dict[str, Any] = response.json()
    return state


async def user_lines(server: InProcess, thread_id: str) -> list[str]:
    async with server.client() as client:
        thread = (await client.get(f"/v1/threads/{thread_id}")).json()
    return [line["text"] for line in thread["transcript"] if line["role"] == "user"]


def assistant_calls(*call_ids: str) -> dict[str, Any]:
    """The assistant message an AG-UI client keeps for the tool calls it was streamed."""
    calls = [{"id": c, "type": "function", "function": {"name": "pick_color", "arguments": "{}"}} for c in call_ids]
    return {"id": uuid.uuid4().hex, "role": "assistant", "toolCalls": calls}


def tool_answer(call_id: str, content: str) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "role": "tool", "toolCallId": call_id, "content": content}


def messages_of(events: list[Any]) -> list[tuple[str, str]]:
    """The message events of a run, each as its type and the id of the message or call it carries."""
    return [
        (e.type, getattr(e, "message_id", None) or e.tool_call_id)
        for e in events
        if e.type.startswith(("TEXT_MESSAGE_", "TOOL_CALL_"))
    ]


def history_of(events: list[Any]) -> list[dict[str, Any]]:
    """The messages an AG-UI client keeps of the events it was streamed, as `@ag-ui/client` builds them."""
    kept: list[dict[str, Any]] = []
    for event in events:
        if event.type == "TEXT_MESSAGE_START":
            kept.append({"id": event.message_id, "role": "assistant", "content": ""})
        elif event.type == "TEXT_MESSAGE_CONTENT":
            kept[-1]["content"] += event.delta
        elif event.type == "TOOL_CALL_START":
            call = {"id": event.tool_call_id, "type": "function", "function": {"name": event.tool_call_name}}
            kept.append({"id": event.tool_call_id, "role": "assistant", "toolCalls": [call]})
        elif event.type == "TOOL_CALL_ARGS":
            kept[-1]["toolCalls"][0]["function"]["arguments"] = event.delta
        elif event.type == "TOOL_CALL_RESULT":
            kept.append(
                {"id": event.message_id, "role": "tool", "toolCallId": event.tool_call_id, "content": event.content}
            )
    return kept


# Issue 1: a message the thread already took is never new text


async def test_cancelling_a_workflows_input_with_the_history_sent_again_skips_it_and_runs_nothing_twice(
    serve: ServerFactory,
) -> None:
    """The cancel comes with the history as the HttpAgent keeps it (ending with the person's message): the input
    is skipped and the workflow goes on; the node before it ran once and no second question is asked."""
    server = await serve(workflows={"wf": charge_then_ask()})
    said = user("go")
    form = interrupt_of(await post(server, run_input("thr-wf-cancel", [said]), agent="wf"))
    assert form.reason == "sayso:input"
    cancel = [{"interruptId": form.id, "status": "cancelled"}]
    events = await post(server, run_input("thr-wf-cancel", [said], resume=cancel), agent="wf")
    outcome = finished(events).outcome
    assert outcome is not None and outcome.type == "success", events[-1]
    assert finished(events).result == "done: no city"
    assert ran("charge") == [{"input": "go"}]
    assert (await request_state(server, form.id))["decision"]["kind"] == "skip"
    assert await user_lines(server, "thr-wf-cancel") == ["go"]


async def test_an_input_sent_again_after_its_turn_runs_nothing_and_streams_what_the_client_lacks_once(
    serve: ServerFactory, sandbox: Path
) -> None:
    """With a thread grant in place, the same input sent again (same message) would delete the file again if it
    were read as a new message: it runs nothing. A client that dropped before the answer reached it (its history
    ends with the message) is streamed the turn's call, result and reply, in order; one that holds them gets
    nothing again."""
    server = await serve()
    said = user("delete notes")
    first = await post(server, run_input("thr-resend", [said]))
    asked = interrupt_of(first)
    approve = {"interruptId": asked.id, "status": "resolved", "payload": {"status": "approved", "scope": "thread"}}
    approved = await post(server, run_input("thr-resend", [said], resume=[approve]))
    assert finished(approved).outcome.type == "success"  # type: ignore[union-attr]
    assert not (sandbox / "notes.txt").exists()
    (sandbox / "notes.txt").write_text("written again\n")

    dropped = await post(server, run_input("thr-resend", [said]))
    assert messages_of(dropped) == messages_of(first) + messages_of(approved)
    assert [e.content for e in dropped if e.type == "TOOL_CALL_RESULT"][-1] == "Deleted notes.txt."
    assert [e.delta for e in dropped if e.type == "TEXT_MESSAGE_CONTENT"] == ["Deleted notes.txt."]
    assert types(dropped)[-2:] == ["STATE_SNAPSHOT", "RUN_FINISHED"]
    outcome = finished(dropped).outcome
    assert outcome is not None and outcome.type == "success" and not outcome.pending_tool_call_ids

    holding = [said, *history_of(dropped)]
    for _ in range(2):
        again = await post(server, run_input("thr-resend", holding))
        assert types(again) == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_FINISHED"], types(again)
        outcome = finished(again).outcome
        assert outcome is not None and outcome.type == "success" and not outcome.pending_tool_call_ids
    assert (sandbox / "notes.txt").read_text() == "written again\n"
    assert await user_lines(server, "thr-resend") == ["delete notes"]


async def test_the_message_a_pause_waits_on_sent_again_shows_the_same_interrupt_and_decides_nothing(
    serve: ServerFactory, sandbox: Path
) -> None:
    """Sent again without a resume, the message that paused the run is not a new one that would skip the pause:
    the same interrupt is shown again, still open, with the call it waits on streamed to a client that lacks it
    (once: a client that holds it is not streamed it again), and answering it afterwards works."""
    server = await serve()
    said = user("delete notes")
    first = await post(server, run_input("thr-resend-paused", [said]))
    asked = interrupt_of(first)
    again = await post(server, run_input("thr-resend-paused", [said]))
    assert messages_of(again) == messages_of(first)
    assert [e.tool_call_id for e in again if e.type == "TOOL_CALL_START"][-1] == asked.tool_call_id
    assert interrupt_of(again).id == asked.id
    holding = await post(server, run_input("thr-resend-paused", [said, *history_of(again)]))
    assert types(holding) == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_FINISHED"], types(holding)
    assert interrupt_of(holding).id == asked.id
    assert (await request_state(server, asked.id))["status"] == "open"
    approve = {"interruptId": asked.id, "status": "resolved", "payload": {"status": "approved"}}
    outcome = finished(await post(server, run_input("thr-resend-paused", [said], resume=[approve]))).outcome
    assert outcome is not None and outcome.type == "success"
    assert not (sandbox / "notes.txt").exists()


async def test_a_pending_browser_call_is_streamed_to_a_client_that_sends_its_message_again_without_it(
    serve: ServerFactory,
) -> None:
    """The run waits on the browser's `pick_color`: a client that dropped before it saw the call is streamed it
    (and told it is pending), so it can run it and answer; one that holds it is not streamed it twice."""
    server = await serve(
        models={"demo": client_tool()}, agents={"files": {"model": "demo", "client_tools": ["pick_color"]}}
    )
    said = user("color please")
    first = await post(server, run_input("thr-resend-call", [said], tools=[PICK]))
    (call_id,) = finished(first).outcome.pending_tool_call_ids or []  # type: ignore[union-attr]
    dropped = await post(server, run_input("thr-resend-call", [said], tools=[PICK]))
    assert [(e.tool_call_id, e.tool_call_name) for e in dropped if e.type == "TOOL_CALL_START"] == [
        (call_id, "pick_color")
    ]
    assert finished(dropped).outcome.pending_tool_call_ids == [call_id]  # type: ignore[union-attr]
    holding = await post(server, run_input("thr-resend-call", [said, *history_of(dropped)], tools=[PICK]))
    assert "TOOL_CALL_START" not in types(holding)
    assert finished(holding).outcome.pending_tool_call_ids == [call_id]  # type: ignore[union-attr]
    answered = [said, *history_of(dropped), tool_answer(call_id, "teal")]
    events = await post(server, run_input("thr-resend-call", answered, tools=[PICK]))
    assert [e.delta for e in events if e.type == "TEXT_MESSAGE_CONTENT"] == ["The browser chose teal."]


async def test_a_message_refused_before_it_was_taken_is_taken_when_sent_again(
    serve: ServerFactory, sandbox: Path
) -> None:
    """A message the run refused (a client tool that is no tool) was never taken: sent again, fixed, it runs."""
    server = await serve()
    said = user("delete notes")
    bad = [{**PICK, "parameters": "notschema"}]
    refused = await post(server, run_input("thr-retry", [said], tools=bad))
    assert refused[-1].type == "RUN_ERROR" and refused[-1].code == "invalid_input"
    asked = interrupt_of(await post(server, run_input("thr-retry", [said], tools=[PICK])))
    assert asked.metadata["tool_input"] == {"name": "notes.txt"}


async def test_messages_the_thread_never_took_are_all_sent_to_the_agent(serve: ServerFactory) -> None:
    """A message that was refused (the thread was new and the tool wrong) and the one typed after it both reach
    the agent: nothing the person said is dropped because it came before the last message."""
    model = client_tool()
    server = await serve(models={"demo": model}, agents={"files": {"model": "demo", "client_tools": ["pick_color"]}})
    first, second = user("first words"), user("color please")
    bad = [{**PICK, "parameters": "notschema"}]
    assert (await post(server, run_input("thr-two-new", [first], tools=bad)))[-1].type == "RUN_ERROR"
    events = await post(server, run_input("thr-two-new", [first, second], tools=[PICK]))
    assert finished(events).result == NOT_ASKED  # the model was sent both messages as one: "first words ..."
    assert await user_lines(server, "thr-two-new") == ["first words\n\ncolor please"]


# Issues 2 and 3: what an input adds beside a resume is used, not dropped


async def test_a_browser_tools_answer_followed_by_a_new_message_is_used_then_the_message_answered(
    serve: ServerFactory,
) -> None:
    """The answer to the pending browser call comes with a new message after it: the answer carries the run on,
    then the new message is answered, both in the same AG-UI run."""
    server = await serve(
        models={"demo": client_tool()}, agents={"files": {"model": "demo", "client_tools": ["pick_color"]}}
    )
    said = user("color please")
    events = await post(server, run_input("thr-answer-then-say", [said], tools=[PICK]))
    (call_id,) = finished(events).outcome.pending_tool_call_ids or []  # type: ignore[union-attr]
    history = [said, assistant_calls(call_id), tool_answer(call_id, "teal"), user("hi")]
    events = await post(server, run_input("thr-answer-then-say", history, tools=[PICK]))
    results = [e.content for e in events if e.type == "TOOL_CALL_RESULT" and e.tool_call_id == call_id]
    assert results == ["teal"]
    said_back = [e.delta for e in events if e.type == "TEXT_MESSAGE_CONTENT"]
    assert said_back == ["The browser chose teal.", NOT_ASKED]
    outcome = finished(events).outcome
    assert outcome is not None and outcome.type == "success" and not outcome.pending_tool_call_ids
    assert await user_lines(server, "thr-answer-then-say") == ["color please", "hi"]
    message_ids = [e.message_id for e in events if e.type == "TEXT_MESSAGE_START"]
    assert len(set(message_ids)) == 2


async def test_a_new_message_sent_with_a_resume_is_answered_after_it(serve: ServerFactory, sandbox: Path) -> None:
    """The approval is applied (the file is deleted), then the new message is answered: here it asks again."""
    server = await serve()
    said = user("delete notes")
    asked = interrupt_of(await post(server, run_input("thr-resume-and-say", [said])))
    approve = {"interruptId": asked.id, "status": "resolved", "payload": {"status": "approved"}}
    events = await post(server, run_input("thr-resume-and-say", [said, user("delete todo")], resume=[approve]))
    assert any(e.type == "TOOL_CALL_RESULT" and e.content == "Deleted notes.txt." for e in events)
    assert not (sandbox / "notes.txt").exists()
    following = interrupt_of(events)
    assert following.id != asked.id and following.metadata["tool_input"] == {"name": "todo.md"}
    assert (sandbox / "todo.md").exists()
    assert await user_lines(server, "thr-resume-and-say") == ["delete notes", "delete todo"]


async def test_a_new_message_the_run_would_refuse_refuses_the_resume_it_came_with_before_anything_is_recorded(
    serve: ServerFactory, sandbox: Path
) -> None:
    """The message is checked before the answer is recorded: a tool that is no tool refuses the whole input, the
    call does not run and the pause stays open for the next input."""
    server = await serve()
    said = user("delete notes")
    asked = interrupt_of(await post(server, run_input("thr-resume-refused", [said])))
    approve = {"interruptId": asked.id, "status": "resolved", "payload": {"status": "approved"}}
    bad = [{**PICK, "parameters": "notschema"}]
    body = run_input("thr-resume-refused", [said, user("delete todo")], resume=[approve], tools=bad)
    events = await post(server, body)
    assert [e.type for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert events[-1].code == "invalid_input" and "parameters must be a JSON Schema object" in events[-1].message
    assert (sandbox / "notes.txt").exists()
    assert (await request_state(server, asked.id))["status"] == "open"


async def test_a_new_message_after_a_resume_that_asks_again_moves_on_from_the_new_question(
    serve: ServerFactory, sandbox: Path
) -> None:
    """The answer leads to an approval; the new message then moves on from it, as any new message does: the
    deletion is skipped, never run, and the new message is answered."""
    server = await serve()
    said = user("delete report")
    asked = interrupt_of(await post(server, run_input("thr-resume-asks", [said])))
    answer = {"interruptId": asked.id, "status": "resolved", "payload": {"answers": [{"answer": ["report-2026.txt"]}]}}
    events = await post(server, run_input("thr-resume-asks", [said, user("list")], resume=[answer]))
    outcome = finished(events).outcome
    assert outcome is not None and outcome.type == "success"
    assert (finished(events).result or "").startswith("Files in the sandbox:")
    skipped = [e for e in events if e.type == "TOOL_CALL_RESULT" and e.content.startswith("Skipped:")]
    assert len(skipped) == 1
    assert (sandbox / "report-2026.txt").exists()


# The unmodified @ag-ui/client


@pytest.fixture
def live_workflow() -> Iterator[LiveServer]:
    server = LiveServer.in_thread(protocol_app(Sayso(example_config(workflows={"wf": charge_then_ask()}))))
    yield server
    server.stop()


@needs_node
def test_the_http_agent_cancels_a_workflows_input_without_starting_the_workflow_again(
    live_workflow: LiveServer,
) -> None:
    """HttpAgent: `go`, then a resume cancelling the input (its history unchanged, still ending with `go`): the
    workflow carries on past the input, and its first node ran once."""
    asked, cancelled = drive(
        f"{live_workflow.base_url}/ag-ui/wf", "thr-node-wf", [{"say": "go"}, {"resume": {"status": "cancelled"}}]
    )
    (form,) = asked["outcome"]["interrupts"]
    assert form["reason"] == "sayso:input"
    assert cancelled["error"] is None, cancelled
    assert cancelled["outcome"] == {"type": "success"}
    assert cancelled["result"] == "done: no city"
    assert ran("charge") == [{"input": "go"}]


class HeldBack(ToolModel):
    """`look` lists the sandbox, then says what it found, but only once the test lets the first answer go."""

    def __init__(self) -> None:
        super().__init__(lambda said: ("list_files", {}) if said == "look" else NOT_ASKED, "I looked: {result}")
        self.release = threading.Event()

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert self.release.wait(timeout=60), "the test never let the model answer"
        return super()._respond(messages, info)


def ended(server: LiveServer, thread_id: str) -> bool:
    with server.client() as client:
        thread = client.get(f"/v1/threads/{thread_id}").json()
    return thread["active_run"] is None or thread["active_run"]["status"] != "running"


@pytest.fixture
def held_back() -> Iterator[tuple[LiveServer, HeldBack]]:
    model = HeldBack()
    server = LiveServer.in_thread(protocol_app(Sayso(example_config(), models={"demo": model})))
    yield server, model
    model.release.set()
    server.stop()


@needs_node
def test_the_http_agent_that_dropped_mid_run_gets_the_answer_when_it_sends_its_input_again(
    held_back: tuple[LiveServer, HeldBack],
) -> None:
    """HttpAgent: the run starts, the client aborts while the model works, the run goes on without it; the same
    input sent again streams the call, its result and the reply into the chat's message list, once: sent again
    once more, nothing is added."""
    server, model = held_back
    steps = [{"say": "look", "abortOnStart": True}, {"gate": True}, {}]
    node = subprocess.Popen(
        ["node", str(STEPS), f"{server.base_url}/ag-ui/files", "thr-node-drop", json.dumps(steps)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=NODE_DIR,
    )
    try:
        assert node.stdout is not None and node.stdin is not None
        aborted = json.loads(node.stdout.readline())
        assert aborted["events"][0] == "RUN_STARTED" and aborted["outcome"] is None, aborted
        assert [m["role"] for m in aborted["messages"]] == ["user"]
        model.release.set()
        deadline = time.monotonic() + 60
        while not ended(server, "thr-node-drop"):
            assert time.monotonic() < deadline, "the run never ended"
            time.sleep(0.05)
        node.stdin.write("go on\n")
        node.stdin.flush()
        out, err = node.communicate(timeout=120)
    finally:
        if node.poll() is None:
            node.kill()
    assert node.returncode == 0, err
    resent, again = (json.loads(line) for line in out.splitlines())
    assert resent["error"] is None and resent["outcome"] == {"type": "success"}, resent
    assert "TOOL_CALL_RESULT" in resent["events"] and "TEXT_MESSAGE_CONTENT" in resent["events"]
    chat = [(m["role"], m["content"], m["toolCalls"]) for m in resent["messages"]]
    listing = next(m["content"] for m in resent["messages"] if m["role"] == "tool")
    assert chat == [
        ("user", "look", []),
        ("assistant", None, ["list_files"]),
        ("tool", listing, []),
        ("assistant", f"I looked: {listing}", []),
    ]
    assert again["error"] is None and again["outcome"] == {"type": "success"}, again
    assert again["events"] == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_FINISHED"]
    assert again["messages"] == resent["messages"]
