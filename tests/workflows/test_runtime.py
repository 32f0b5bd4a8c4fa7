"""Workflows in the runtime: a workflow is a run like an agent's, durable in the store, answered through the verbs."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Generator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from sayso import (
    Answer,
    ApprovalRequest,
    Approve,
    Config,
    InputRequest,
    InvalidDecision,
    PrincipalConfig,
    Provide,
    QuestionRequest,
    RequestExpired,
    RequestInput,
    RequestNotFound,
    RunConflict,
    RunResult,
    Sayso,
    Skip,
    StoreError,
    ThreadBusy,
    Workflow,
)
from sayso.workflows import START, AgentNode, InputSkipped

from ..conftest import host_grant, resume_at_once
from ..models import Said, tool_model

CALLS: Counter[str] = Counter()
FLAKY: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    CALLS.clear()
    FLAKY.clear()
    yield


class Trip(BaseModel):
    city: str
    days: int = 1


# nodes


def prepare(node_input: str) -> str:
    CALLS["prepare"] += 1
    return f"a trip to {node_input}"


async def ask_trip(node_input: str) -> AsyncGenerator[Any, Any]:
    CALLS["ask_trip"] += 1
    yield RequestInput(f"Tell me about {node_input}", payload={"draft": node_input}, response_schema=Trip)


def summarise(node_input: Trip) -> str:
    CALLS["summarise"] += 1
    if FLAKY.get("fail"):
        FLAKY["fail"] -= 1
        raise ValueError("the summary service is down")
    return f"{node_input.days} day(s) in {node_input.city}"


def trip_workflow(**kwargs: Any) -> Workflow:
    return Workflow("trip", edges=[(START, prepare, ask_trip, summarise)], **kwargs)


def ask_or_default() -> Generator[Any, Any, Any]:
    try:
        answer = yield RequestInput("Which city?", response_schema=str)
    except InputSkipped as skipped:
        return f"no answer ({skipped.reason})"
    return answer


def to_booking(node_input: str) -> str:
    CALLS["to_booking"] += 1
    return json.dumps({"city": node_input})


def booked(node_input: str) -> str:
    CALLS["booked"] += 1
    return f"done: {node_input}"


def book_table(city: str) -> str:
    """Book a table for dinner."""
    CALLS["book_table"] += 1
    if FLAKY.get("book"):
        FLAKY["book"] -= 1
        # sayso's own error: a tool's other errors are read by the model, this one ends the agent's run.
        raise StoreError("the restaurant's line is busy")
    return f"table booked in {city}"


def book_for(said: str) -> Said:
    """The booker books a table in the city its node's input names, and says what the booking returned."""
    found = re.search(r'"city": "([^"]+)"', said)
    return ("book_table", {"city": found[1]}) if found else f"no city in {said!r}"


def booking_workflow() -> Workflow:
    return Workflow("dinner", edges=[(START, to_booking, AgentNode("booker", name="book"), booked)])


Make = Callable[..., Sayso]


@pytest.fixture
def make(tmp_path: Path) -> Make:
    """A runtime over one SQLite file, with the given workflows and the `booker` agent."""

    def build(
        *workflows: Workflow,
        clock: Callable[[], float] | None = None,
        guide: Model | None = None,
        remember: str = "once",
        **config: Any,
    ) -> Sayso:
        interrupt = {"tools": ["book_table"], "remember": remember}
        agents: dict[str, Any] = {
            "booker": {"model": "m", "tools": [book_table], "interrupt": interrupt, "ask_user": False}
        }
        models: dict[str, Any] = {"m": tool_model(book_for, read="{result}")}
        if guide is not None:
            agents["guide"] = {"model": "g"}
            models["g"] = guide
        built = Config.model_validate(
            {
                "store": f"sqlite:///{tmp_path / 'sayso.db'}",
                "agents": agents,
                "workflows": {w.name: w for w in workflows},
                "base_dir": tmp_path,
                **config,
            }
        )
        extra: dict[str, Any] = {} if clock is None else {"clock": clock}
        return Sayso(built, models=models, **extra)

    return build


def input_of(result: RunResult) -> InputRequest:
    assert result.status == "paused", result
    [request] = result.requests
    assert isinstance(request, InputRequest), request
    return request


async def test_a_workflow_runs_like_an_agent_and_pauses_for_input(make: Make) -> None:
    """`run(message, agent=workflow)` pauses on the node's question: an `input` request on a thread, in the inbox."""
    async with make(trip_workflow()) as app:
        paused = await app.run("Lisbon", agent="trip")
        request = input_of(paused)
        assert (request.node, request.message, request.payload) == (
            "ask_trip",
            "Tell me about a trip to Lisbon",
            {"draft": "a trip to Lisbon"},
        )
        assert request.response_schema["required"] == ["city"]
        assert (request.agent_path, request.run_id, request.thread_id) == ("trip", paused.run_id, paused.thread_id)
        assert [r.request_id for r in (await app.inbox()).requests] == [request.request_id]
        thread = await app.thread(paused.thread_id)
        assert (thread.agent, thread.active_run_id) == ("trip", paused.run_id)
        done = await app.decide(request.request_id, Provide(value={"city": "Lisbon", "days": 3}))
    assert (done.run.status, done.run.output) == ("completed", "3 day(s) in Lisbon")
    assert CALLS == {"prepare": 1, "ask_trip": 2, "summarise": 1}


async def test_a_wrong_answer_is_refused_naming_the_field_and_the_pause_stays_open(make: Make) -> None:
    """A `Provide` that breaks the schema is refused naming the field, nothing is recorded; a good one completes."""
    async with make(trip_workflow()) as app:
        request = input_of(await app.run("Porto", agent="trip"))
        with pytest.raises(InvalidDecision, match="city: field required") as refused:
            await app.decide(request.request_id, Provide(value={"days": 2}))
        assert refused.value.request_id == request.request_id
        with pytest.raises(InvalidDecision, match="days: .*integer"):
            await app.answer_pause(request.run_id, {request.request_id: Provide(value={"city": "Porto", "days": "x"})})
        state = await app.request(request.request_id)
        assert (state.pause_status, state.decision) == ("open", None)
        done = await app.decide(request.request_id, Provide(value={"city": "Porto", "days": 2}))
    assert (done.run.status, done.run.output) == ("completed", "2 day(s) in Porto")


class Visit(BaseModel):
    at: datetime


def ask_visit() -> Generator[Any, Any, Any]:
    CALLS["ask_visit"] += 1
    answer = yield RequestInput("When?", response_schema=Visit)
    return answer.at.isoformat()


async def test_an_answer_the_nodes_type_would_refuse_is_refused_before_it_is_recorded(make: Make) -> None:
    """A `datetime` field's answer in words is refused naming the field, as pydantic says it; the pause stays open."""
    async with make(Workflow("visit", edges=[(START, ask_visit)])) as app:
        request = input_of(await app.run("go", agent="visit"))
        with pytest.raises(InvalidDecision) as refused:
            await app.decide(request.request_id, Provide(value={"at": "next tuesday"}))
        assert refused.value.fields == {"at": "input should be a valid datetime or date, invalid character in year"}
        state = await app.request(request.request_id)
        assert (state.pause_status, state.decision) == ("open", None)
        done = await app.decide(request.request_id, Provide(value={"at": "2024-05-01T10:00"}))
    assert (done.run.status, done.run.output) == ("completed", "2024-05-01T10:00:00")
    assert CALLS == {"ask_visit": 2}


async def test_a_fresh_runtime_resumes_without_redoing_finished_nodes(make: Make) -> None:
    """One runtime pauses and closes; another decides from the store alone, and finished nodes do not run again."""
    async with make(trip_workflow()) as first:
        request = input_of(await first.run("Oslo", agent="trip"))
    assert CALLS == {"prepare": 1, "ask_trip": 1}
    async with make(trip_workflow()) as second:
        done = await second.decide(request.request_id, Provide(value={"city": "Oslo"}))
        transcript = await second.transcript(done.run.thread_id)
    assert (done.run.status, done.run.output) == ("completed", "1 day(s) in Oslo")
    assert CALLS == {"prepare": 1, "ask_trip": 2, "summarise": 1}
    assert [(e.role, e.text) for e in transcript] == [
        ("user", "Oslo"),
        ("decision", None),
        ("tool_result", '{"city":"Oslo"}'),
        ("assistant", "1 day(s) in Oslo"),
    ]
    assert transcript[1].decision is not None and transcript[1].decision["value"] == {"city": "Oslo"}


async def test_a_node_that_raises_fails_the_run_naming_it_and_resume_retries_it(make: Make) -> None:
    """A failing node fails the run with its name; `resume` runs only that node again, with the answer it had."""
    FLAKY["fail"] = 1
    async with make(trip_workflow()) as app:
        request = input_of(await app.run("Rome", agent="trip"))
        failed = await app.decide(request.request_id, Provide(value={"city": "Rome"}))
        assert (failed.run.status, failed.run.error) == (
            "failed",
            "node 'summarise' failed: ValueError: the summary service is down",
        )
        assert (await app.result(request.run_id)).status == "failed"
        retried = await app.resume(request.run_id)
    assert (retried.status, retried.output, retried.run_id) == ("completed", "1 day(s) in Rome", request.run_id)
    assert CALLS == {"prepare": 1, "ask_trip": 2, "summarise": 2}


async def test_a_failed_run_is_not_retried_once_its_thread_moved_on(make: Make) -> None:
    """After a new message on the thread, the failed run stays failed: `ThreadBusy`."""
    FLAKY["fail"] = 5
    async with make(trip_workflow()) as app:
        request = input_of(await app.run("Rome", agent="trip"))
        failed = (await app.decide(request.request_id, Provide(value={"city": "Rome"}))).run
        newer = await app.run("Paris", thread_id=failed.thread_id)
        assert newer.status == "paused"
        with pytest.raises(ThreadBusy):
            await app.resume(failed.run_id)


def undecided(node_input: str) -> str:
    return "maybe"


async def test_a_node_that_breaks_a_rule_of_the_engine_fails_the_run_in_plain_words(make: Make) -> None:
    """A node's output that matches none of its routes fails the run with the engine's words, not a private class."""
    async with make(Workflow("pick", edges=[(START, undecided, {"yes": booked, "no": to_booking})])) as app:
        failed = await app.run("go", agent="pick")
        stored = await app.result(failed.run_id)
    expected = (
        "node 'undecided' failed: it returned 'maybe', which matches none of its routes (routes: 'yes', 'no'); "
        "return Route(...) or add a DEFAULT route"
    )
    assert (failed.status, failed.error) == ("failed", expected)
    assert stored.error == expected


def badly_decoded(node_input: str) -> dict[str, str]:
    return {"note": "paid \ud800"}


def keyed_by_a_set(node_input: str) -> dict[frozenset[int], str]:
    return {frozenset([1]): "x"}


async def test_a_nodes_output_holding_a_lone_surrogate_is_kept_with_a_replacement_character(make: Make) -> None:
    """Before, `sayso run` crashed with `PydanticSerializationError` and the run was left running."""
    async with make(Workflow("decode", edges=[(START, badly_decoded)])) as app:
        done = await app.run("go", agent="decode")
        assert (done.status, done.output) == ("completed", '{"note": "paid \ufffd"}')
        assert (await app.result(done.run_id)).status == "completed"


async def test_a_nodes_output_keyed_by_what_json_cannot_key_fails_the_node_in_plain_words(make: Make) -> None:
    async with make(Workflow("keys", edges=[(START, keyed_by_a_set, booked)])) as app:
        failed = await app.run("go", agent="keys")
    assert (failed.status, failed.error) == (
        "failed",
        "node 'keyed_by_a_set' failed: its output cannot be stored as JSON: `frozenset` not valid as object key",
    )


async def test_an_agent_nodes_approval_pauses_the_workflow_labelled_with_the_node(make: Make) -> None:
    """The agent's approval is the workflow's open request (`dinner/book`); approving runs the tool once and the
    workflow finishes."""
    async with make(booking_workflow()) as app:
        paused = await app.run("Lisbon", agent="dinner")
        [request] = paused.requests
        assert isinstance(request, ApprovalRequest)
        assert (request.tool_name, request.args, request.agent_path) == (
            "book_table",
            {"city": "Lisbon"},
            "dinner/book",
        )
        assert (paused.agent, paused.run_id) == ("dinner", (await app.run_record(paused.run_id)).run_id)
        assert [r.request_id for r in (await app.inbox()).requests] == [request.request_id]
        done = await app.decide(request.request_id, Approve())
        again = await app.decide(request.request_id, Approve())
    assert (done.run.status, done.run.output, done.run.run_id) == (
        "completed",
        "done: table booked in Lisbon",
        paused.run_id,
    )
    assert (again.recorded, again.run.status) == (False, "completed")
    assert CALLS == {"to_booking": 1, "book_table": 1, "booked": 1}


async def test_allow_for_this_chat_on_an_agent_nodes_call_covers_the_workflows_chat(make: Make) -> None:
    """A `thread` grant given on an agent node's approval covers the node's calls in later runs of the same
    workflow chat (the node's agent runs on a new thread each time) and none in another chat."""
    async with make(booking_workflow(), remember="thread") as app:
        paused = await app.run("Lisbon", agent="dinner")
        [request] = paused.requests
        await app.decide(request.request_id, Approve(scope="thread"))
        [grant] = await app.grants()
        again = await app.run("Porto", agent="dinner", thread_id=paused.thread_id)
        elsewhere = await app.run("Faro", agent="dinner")
    assert grant.thread_id == paused.thread_id
    assert (again.status, again.output) == ("completed", "done: table booked in Porto")
    assert elsewhere.status == "paused"
    assert CALLS["book_table"] == 2


async def test_a_hosts_grants_reach_an_agent_nodes_calls(make: Make) -> None:
    """Grants a host passes to `run` cover an agent node's calls in that workflow chat, as they cover a delegate's;
    sayso stores none of them."""
    async with make(booking_workflow()) as app:
        grant = host_grant("book_table", agent="dinner", thread_id="thr_host_grants")
        covered = await app.run("Lisbon", agent="dinner", thread_id="thr_host_grants", grants=[grant])
        uncovered = await app.run("Faro", agent="dinner", grants=[grant])
        assert await app.grants() == []
    assert (covered.status, covered.output) == ("completed", "done: table booked in Lisbon")
    assert uncovered.status == "paused"
    assert CALLS["book_table"] == 1


async def test_an_agent_node_resumes_in_a_fresh_runtime(make: Make) -> None:
    """An agent node paused in one runtime is approved in another; nodes before it do not run again."""
    async with make(booking_workflow()) as first:
        [request] = (await first.run("Paris", agent="dinner")).requests
    async with make(booking_workflow()) as second:
        done = await second.decide(request.request_id, Approve())
    assert (done.run.status, done.run.output) == ("completed", "done: table booked in Paris")
    assert CALLS == {"to_booking": 1, "book_table": 1, "booked": 1}


async def test_a_run_whose_process_died_is_carried_on_from_its_last_finished_node(make: Make) -> None:
    """A run left running by a dead runtime is taken over after its lease lapses; finished nodes are not redone."""
    now = [1000.0]
    blocked = anyio.Event()

    async def stall(node_input: str) -> str:
        CALLS["stall"] += 1
        if CALLS["stall"] == 1:
            blocked.set()
            await anyio.sleep_forever()
        return node_input.upper()

    stalling = Workflow("stalling", edges=[(START, prepare, stall)])
    async with make(stalling, clock=lambda: now[0]) as dying:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: dying.run("Bern", agent="stalling"))
            await blocked.wait()
            tg.cancel_scope.cancel()
        [summary] = await dying.threads()
        assert summary.active_run_id is not None
        run_id = summary.active_run_id
    now[0] += 600
    async with make(stalling, clock=lambda: now[0]) as taking_over:
        assert (await taking_over.run_record(run_id)).status == "running"
        done = await taking_over.resume(run_id)
    assert (done.status, done.output) == ("completed", "A TRIP TO BERN")
    assert CALLS == {"prepare": 1, "stall": 2}


async def test_an_unanswered_question_expires_and_the_node_sees_a_skip(make: Make) -> None:
    """With `ttl_seconds`, the expiry sweep closes the question; the node catches `InputSkipped` and finishes."""
    now = [1000.0]
    ask = Workflow("ask", edges=[(START, ask_or_default)], ttl_seconds=60)
    async with make(ask, clock=lambda: now[0]) as app:
        request = input_of(await app.run("go", agent="ask"))
        assert request.expires_at == 1060.0
        now[0] = 1061.0
        [expired] = await app.expire()
    assert (expired.status, expired.output) == (
        "completed",
        "no answer (Expired: no decision before 1970-01-01 00:17:40 UTC)",
    )


def ask_count() -> Generator[Any, Any, Any]:
    count = yield RequestInput("How many?", response_schema=int)
    return count


async def test_an_input_that_expires_says_it_expired_not_that_someone_skipped_it(make: Make) -> None:
    """Nobody skipped an input whose time ran out: the failed run and a late answer both say it expired."""
    now = [1000.0]
    timed = Workflow("timed", edges=[(START, ask_count)], ttl_seconds=60)
    async with make(timed, clock=lambda: now[0]) as app:
        request = input_of(await app.run("go", agent="timed"))
        now[0] = 1061.0
        with pytest.raises(RequestExpired) as late:
            await app.decide(request.request_id, Provide(value=5))
        [expired] = await app.expire()
    assert expired.status == "failed"
    assert expired.error is not None and "skipped" not in expired.error
    assert "the input of node 'ask_count' expired unanswered" in expired.error
    assert late.value.problem == "the input of node 'ask_count' expired before a decision arrived"


async def test_skipping_a_question_reaches_the_node(make: Make) -> None:
    """`Skip` answers an input request; the node reads the reason."""
    async with make(Workflow("ask", edges=[(START, ask_or_default)])) as app:
        request = input_of(await app.run("go", agent="ask"))
        done = await app.decide(request.request_id, Skip(reason="not now"))
    assert done.run.output == "no answer (not now)"


async def test_a_new_message_supersedes_a_paused_workflow_run(make: Make) -> None:
    """A message on a paused workflow thread skips its question and starts a new run with the message."""
    async with make(trip_workflow()) as app:
        first = input_of(await app.run("Lima", agent="trip"))
        second = input_of(await app.run("Quito", thread_id=first.thread_id))
        assert second.message == "Tell me about a trip to Quito"
        assert (await app.run_record(first.run_id)).status == "cancelled"
        state = await app.request(first.request_id)
        assert state.decision is not None and state.decision.decision == Skip(
            reason="the person sent a message instead of answering"
        )


async def test_cancelling_a_paused_workflow_run_closes_its_agent_node_too(make: Make) -> None:
    """Cancel closes the workflow's pause and the agent node's run below it; nothing runs."""
    async with make(booking_workflow()) as app:
        paused = await app.run("Rome", agent="dinner")
        [request] = paused.requests
        cancelled = await app.cancel(paused.run_id)
        assert cancelled.status == "cancelled"
        assert (await app.run_record(request.run_id)).status == "cancelled"
    assert CALLS == {"to_booking": 1}


async def test_cancelling_a_working_workflow_run_stops_the_node_and_frees_the_thread(make: Make) -> None:
    """A workflow run cancelled while a node works ends as cancelled; the node never finishes, the node after it
    never runs, the finished node is not run again, and the thread takes a new message."""
    started, release = anyio.Event(), anyio.Event()

    async def slow(node_input: str) -> str:
        CALLS["slow"] += 1
        started.set()
        await release.wait()
        CALLS["slow finished"] += 1
        return node_input

    slow_flow = Workflow("slow", edges=[(START, prepare, slow, booked)])
    async with make(slow_flow) as app:
        run_id = "run_slow_cancelled_1"
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: app.run("Oslo", agent="slow", thread_id="thr_slow", run_id=run_id))
            await started.wait()
            assert (await app.run_record(run_id)).status == "running"
            cancelled = await app.cancel(run_id)
        release.set()
        assert cancelled.status == "cancelled"
        assert (await app.run_record(run_id)).status == "cancelled"
        with pytest.raises(RunConflict, match="cancelled"):
            await app.cancel(run_id)
        CALLS.clear()
        after = await app.run("Bergen", agent="slow", thread_id="thr_slow")  # `release` is set: no wait now
    assert (after.status, after.output) == ("completed", "done: a trip to Bergen")
    assert CALLS == {"prepare": 1, "slow": 1, "slow finished": 1, "booked": 1}


async def test_only_the_owner_or_an_approver_of_the_workflow_decides_its_input(make: Make) -> None:
    """The one access rule: a stranger may not decide; an approver for the workflow sees it in the inbox and may."""
    principals = [
        PrincipalConfig(name="alice"),
        PrincipalConfig(name="bob"),
        PrincipalConfig(name="ops", approver_for=["trip"]),
    ]
    async with make(trip_workflow(), principals=principals) as app:
        request = input_of(await app.run("Kyiv", agent="trip", principal="alice"))
        with pytest.raises(RequestNotFound):  # bob may not see it: as if there were no such request
            await app.decide(request.request_id, Provide(value={"city": "Kyiv"}), principal="bob")
        assert (await app.inbox(principal="bob")).requests == []
        assert [r.request_id for r in (await app.inbox(principal="ops")).requests] == [request.request_id]
        done = await app.decide(request.request_id, Provide(value={"city": "Kyiv"}), principal="ops")
    assert done.run.status == "completed"


async def test_input_requests_are_announced_and_audited(make: Make) -> None:
    """Listeners hear the question opened and answered; the answer is in the audit log with who gave it."""
    events: list[tuple[str, str]] = []
    app = make(trip_workflow())
    app.add_listener(lambda event, data: events.append((event, data["request"]["kind"])))
    async with app:
        request = input_of(await app.run("Riga", agent="trip"))
        await app.decide(request.request_id, Provide(value={"city": "Riga"}))
        audit = [r.body for r in await app.audit_log() if r.body.get("request_id") == request.request_id]
        assert await app.verify_audit() is None
    assert events == [("request.opened", "input"), ("request.decided", "input")]
    assert [(a["event"], a["decision"], a["by"], a["principal"]) for a in audit] == [
        ("decision", "provide", "person", "local")
    ]


async def test_the_entry_may_be_a_workflow(make: Make) -> None:
    """A config whose `entry` is a workflow runs it for a new thread without naming it."""
    async with make(trip_workflow(), entry="trip") as app:
        assert input_of(await app.run("Tallinn")).node == "ask_trip"


async def test_an_approved_call_in_an_agent_node_runs_once_when_two_runtimes_resume_at_once(make: Make) -> None:
    """Two runtimes resume the approved workflow at the same moment: the call runs once and the workflow ends once."""
    async with make(booking_workflow()) as a, make(booking_workflow()) as b:
        paused = await a.run("Vienna", agent="dinner")
        await a.decide(paused.requests[0].request_id, Approve(), resume=False)
        outcomes = await resume_at_once([a, b], paused.run_id)
        final = await a.result(paused.run_id)
    # The winner completes it; the loser is refused, sees the run still paused or already running
    # while the winner carries it on, or (arriving once the winner is done) reads the same finished run.
    results = [o for o in outcomes if isinstance(o, RunResult)]
    assert [o.status for o in results].count("completed") >= 1
    assert {(o.status, o.output) for o in results} <= {("completed", final.output), ("paused", None), ("running", None)}
    assert (final.status, final.output) == ("completed", "done: table booked in Vienna")
    assert CALLS == {"to_booking": 1, "book_table": 1, "booked": 1}


async def test_a_pydantic_ai_agent_runs_as_a_node(make: Make) -> None:
    """A pydantic-ai `Agent` given as a node gets the previous output as its prompt; its answer flows on."""

    def shout(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        [prompt] = [p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart)]
        return ModelResponse(parts=[TextPart(content=str(prompt).upper())])

    greeter = Agent(FunctionModel(shout), name="greeter")
    async with make(Workflow("greet", edges=[(START, prepare, greeter, booked)])) as app:
        done = await app.run("Nice", agent="greet")
    assert (done.status, done.output) == ("completed", "done: A TRIP TO NICE")


async def test_an_agent_nodes_question_pauses_the_workflow_and_its_answer_reaches_the_agent(make: Make) -> None:
    """`ask_user` inside an agent node is the workflow's open question; the answer goes to the agent, which answers."""
    guide = tool_model(
        lambda said: ("ask_user", {"questions": [{"question": "Which city?"}]}),
        read=lambda tool, result: "going to " + json.loads(result)[0]["answer"][0],
    )
    asking = Workflow("asking", edges=[(START, to_booking, AgentNode("guide", name="ask"), booked)])
    async with make(asking, guide=guide) as app:
        paused = await app.run("the city", agent="asking")
        [question] = paused.requests
        assert isinstance(question, QuestionRequest) and question.agent_path == "asking/ask"
        done = await app.decide(question.request_id, Answer(answers=(("Oslo",),)))
    assert (done.run.status, done.run.output) == ("completed", "done: going to Oslo")


async def test_an_agent_nodes_failed_run_fails_the_node_and_resume_starts_the_agent_again(make: Make) -> None:
    """When the agent's own run fails, the node fails naming it; `resume` runs the agent node from the start."""
    FLAKY["book"] = 1
    async with make(booking_workflow()) as app:
        [first] = (await app.run("Rome", agent="dinner")).requests
        failed = (await app.decide(first.request_id, Approve())).run
        assert failed.status == "failed" and failed.error is not None
        assert failed.error.startswith("node 'book' failed: its agent's run")
        assert failed.error.endswith("failed: StoreError: the restaurant's line is busy")
        retried = await app.resume(failed.run_id)
        [second] = retried.requests
        assert second.request_id != first.request_id and second.agent_path == "dinner/book"
        done = await app.decide(second.request_id, Approve())
    assert (done.run.status, done.run.output) == ("completed", "done: table booked in Rome")
    assert CALLS == {"to_booking": 1, "book_table": 2, "booked": 1}


async def test_a_forced_resume_skips_the_question_and_the_node_sees_it(make: Make) -> None:
    """`resume(force=True)` on a workflow waiting for input closes the question as skipped; the node reads it."""
    async with make(Workflow("ask", edges=[(START, ask_or_default)])) as app:
        paused = input_of(await app.run("go", agent="ask"))
        done = await app.resume(paused.run_id, force=True)
    assert (done.status, done.output) == (
        "completed",
        "no answer (the run was resumed before this request was answered)",
    )
