"""The durable stepper: pauses on `RequestInput`, resumes from saved JSON, never redoes finished nodes."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncGenerator, Generator, Iterator
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from sayso import InvalidDecision, NotReady, Provide, RequestInput, RunConflict, Skip, Workflow
from sayso._core.decisions import Expired
from sayso.workflows import (
    DEFAULT,
    END,
    START,
    FunctionNode,
    InputSkipped,
    MemoryWorkflowPersistence,
    NodeFailed,
    Route,
    WorkflowContext,
    WorkflowEngine,
    WorkflowFailed,
    WorkflowFinished,
    WorkflowOutcome,
    WorkflowPaused,
    WorkflowState,
)

CALLS: Counter[str] = Counter()
SEEN: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    CALLS.clear()
    SEEN.clear()
    yield


class Trip(BaseModel):
    city: str
    days: int = 1


class Feedback(BaseModel):
    comment: str
    done: bool = False


class Shouty(BaseModel):
    word: str

    @field_validator("word")
    @classmethod
    def _upper(cls, word: str) -> str:
        if word != word.upper():
            raise ValueError("must be upper case")
        return word


# nodes


def step1() -> Generator[Any, Any, Any]:
    yield RequestInput("Enter a number:", response_schema=int)


def step2(node_input: int) -> int:
    return node_input * 2


def prepare(node_input: str) -> str:
    CALLS["prepare"] += 1
    return f"plan for {node_input}"


async def ask_trip(node_input: str) -> AsyncGenerator[Any, Any]:
    CALLS["ask_trip:before"] += 1
    trip = yield RequestInput(f"Where to? ({node_input})", payload={"offer": node_input}, response_schema=Trip)
    SEEN["answer_type"] = type(trip)
    CALLS["ask_trip:after"] += 1
    yield trip.model_copy(update={"days": trip.days + 1})


async def summarise(node_input: Trip) -> str:
    CALLS["summarise"] += 1
    SEEN["summarise_input"] = node_input
    return f"{node_input.days} days in {node_input.city}"


def trip_workflow() -> Workflow:
    return Workflow("trip", edges=[(START, prepare, ask_trip, summarise)])


def engine(workflow: Workflow, persistence: MemoryWorkflowPersistence | None = None, **kwargs: Any) -> WorkflowEngine:
    return WorkflowEngine(workflow, persistence=persistence or MemoryWorkflowPersistence(), **kwargs)


def paused(outcome: WorkflowOutcome) -> WorkflowPaused:
    assert isinstance(outcome, WorkflowPaused), outcome
    return outcome


def finished(outcome: WorkflowOutcome) -> WorkflowFinished:
    assert isinstance(outcome, WorkflowFinished), outcome
    return outcome


def failed(outcome: WorkflowOutcome) -> WorkflowFailed:
    assert isinstance(outcome, WorkflowFailed), outcome
    return outcome


# the seed's workflow


async def test_the_seed_workflow_pauses_and_the_answer_flows_into_the_next_node() -> None:
    """`step1` yields `RequestInput`; the validated answer becomes `step2`'s input."""
    wf = engine(Workflow("root_agent", edges=[("START", step1, step2)]))
    pause = paused(await wf.start("run_1"))
    assert pause.node == "step1"
    assert pause.input is not None
    assert (pause.input.message, pause.input.response_schema, pause.input.key) == (
        "Enter a number:",
        {"type": "integer"},
        "step1:1:1",
    )
    done = finished(await wf.resume(pause.state, Provide(value=21)))
    assert done.output == 42
    assert [f.node for f in done.state.finished] == ["step1", "step2"]


async def test_a_bad_answer_is_refused_and_a_good_one_then_completes() -> None:
    """A wrong answer is refused naming the field, the pause stays open, and a right answer still completes."""
    persistence = MemoryWorkflowPersistence()
    wf = engine(trip_workflow(), persistence)
    pause = paused(await wf.start("run_1", "Lisbon"))
    with pytest.raises(InvalidDecision) as refused:
        await wf.resume(pause.state, Provide(value={"days": "many"}))
    assert refused.value.problem == "city: field required; days: 'many' is not of type 'integer'"
    assert refused.value.request_id == "ask_trip:1:1"
    stored = await persistence.load("run_1")
    assert stored.status == "paused" and stored.pending == pause.input and stored.answers == ()
    done = finished(await wf.resume(stored, Provide(value={"city": "Lisbon", "days": 2})))
    assert done.output == "3 days in Lisbon"


async def test_a_fresh_engine_resumes_from_saved_json_without_redoing_finished_nodes() -> None:
    """A run left waiting resumes on a new engine and workflow object; `prepare` ran once in all."""
    persistence = MemoryWorkflowPersistence()
    pause = paused(await engine(trip_workflow(), persistence).start("run_1", "Lisbon"))
    assert pause.input is not None and pause.input.payload == {"offer": "plan for Lisbon"}
    assert CALLS == {"prepare": 1, "ask_trip:before": 1}

    fresh = engine(trip_workflow(), persistence)  # shares nothing with the first but the saved JSON
    state = await persistence.load("run_1")
    done = finished(await fresh.resume(state, Provide(value={"city": "Porto"})))
    assert done.output == "2 days in Porto"
    assert CALLS == {"prepare": 1, "ask_trip:before": 2, "ask_trip:after": 1, "summarise": 1}
    assert (await persistence.load("run_1")).status == "completed"


async def test_a_model_answer_reaches_the_node_and_the_next_one_as_an_instance() -> None:
    """The generator gets a model instance back, and the annotated next node a model instance too."""
    wf = engine(trip_workflow())
    pause = paused(await wf.start("run_1", "Lisbon"))
    finished(await wf.resume(pause.state, Provide(value={"city": "Faro"})))
    assert SEEN["answer_type"] is Trip
    assert SEEN["summarise_input"] == Trip(city="Faro", days=2)


async def test_the_state_saved_at_a_pause_says_what_the_run_waits_on() -> None:
    """Each save is a full JSON round trip; the pause's state names the node and its question."""
    persistence = MemoryWorkflowPersistence()
    await engine(trip_workflow(), persistence).start("run_1", "Lisbon")
    state = await persistence.load("run_1")
    assert state == WorkflowState.from_json(state.to_json())
    assert state.status == "paused" and state.node == "ask_trip"
    assert state.finished[0].output == "plan for Lisbon"
    assert state.pending is not None and state.pending.response_schema["required"] == ["city"]
    assert persistence.saves == 3  # started, `prepare` finished, paused


async def test_an_answer_only_the_nodes_own_type_refuses_asks_again_with_the_reason() -> None:
    """A value the JSON Schema lets through but a model validator refuses re-opens the question with the reason."""

    async def shout() -> AsyncGenerator[Any, Any]:
        word = yield RequestInput("Say it loud", response_schema=Shouty)
        yield word.word

    wf = engine(Workflow("loud", edges=[(START, shout)]))
    pause = paused(await wf.start("run_1"))
    again = paused(await wf.resume(pause.state, Provide(value={"word": "quiet"})))
    assert again.input is not None
    assert again.input.refused == ("word: value error, must be upper case",)
    assert again.state.answers == ()
    assert finished(await wf.resume(again.state, Provide(value={"word": "LOUD"}))).output == "LOUD"


# loops and routes


async def review(node_input: Any, ctx: WorkflowContext) -> AsyncGenerator[Any, Any]:
    feedback = yield RequestInput(
        f"Round {ctx.visit}: happy with {node_input!r}?", payload=node_input, response_schema=Feedback
    )
    yield Route("done" if feedback.done else "revise", output=feedback.comment)


def draft(node_input: Any, ctx: WorkflowContext) -> str:
    CALLS["draft"] += 1
    ctx.state["drafts"] = ctx.state.get("drafts", 0) + 1
    return f"draft {ctx.visit} ({node_input})"


def publish(node_input: str, ctx: WorkflowContext) -> str:
    return f"published after {ctx.state['drafts']} drafts: {node_input}"


async def test_a_loop_runs_until_the_person_says_done() -> None:
    """Feedback routes back to `draft` until the person says done; each round is a new question."""
    persistence = MemoryWorkflowPersistence()
    wf = engine(
        Workflow("editing", edges=[(START, draft, review), (review, {"revise": draft, "done": publish})]), persistence
    )
    pause = paused(await wf.start("run_1", "first idea"))
    keys = []
    for comment in ("shorter", "warmer"):
        assert pause.input is not None
        keys.append(pause.input.key)
        state = await persistence.load("run_1")
        pause = paused(await engine(wf.workflow, persistence).resume(state, Provide(value={"comment": comment})))
    assert pause.input is not None
    assert pause.input.message == "Round 3: happy with 'draft 3 (warmer)'?"
    assert pause.input.payload == "draft 3 (warmer)"
    done = finished(await wf.resume(pause.state, Provide(value={"comment": "perfect", "done": True})))
    assert done.output == "published after 3 drafts: perfect"
    assert keys == ["review:1:1", "review:2:1"]
    assert CALLS["draft"] == 3
    assert [f.route for f in done.state.finished if f.node == "review"] == ["revise", "revise", "done"]


def classify(node_input: str) -> str:
    return "long" if len(node_input) > 5 else "short"


def shout(node_input: str) -> str:
    return node_input.upper()


def whisper(node_input: str) -> str:
    return node_input.lower()


def pick_by_name(node_input: str) -> Route:
    return Route("whisper" if node_input == "quiet" else "shout", output=node_input)


def unknown_route(node_input: str) -> Route:
    return Route("nowhere", output=node_input)


@pytest.mark.parametrize(
    ("edges", "given", "output"),
    [
        pytest.param([(START, classify, {"long": shout, "short": whisper})], "abcdefg", "LONG", id="value-is-route"),
        pytest.param([(START, classify, {"long": shout, "short": whisper})], "Hi", "short", id="other-value"),
        pytest.param([(START, pick_by_name, {"a": shout, "b": whisper})], "quiet", "quiet", id="route-by-node-name"),
        pytest.param([(START, unknown_route, {"x": shout, DEFAULT: whisper})], "LOUD", "loud", id="default-route"),
        pytest.param(
            [(START, classify, {"short": END, "long": shout}), (shout, END)], "Hi", "short", id="route-to-end"
        ),
    ],
)
async def test_routes_choose_the_next_node(edges: list[Any], given: str, output: str) -> None:
    """A node's route value, a `Route` naming a route or a successor, or the DEFAULT route picks the next node."""
    assert finished(await engine(Workflow("routes", edges=edges)).start("run_1", given)).output == output


async def test_a_route_the_node_does_not_have_fails_the_run_naming_the_node() -> None:
    """Choosing a route that no edge has fails the run at that node, listing the routes it has."""
    outcome = failed(await engine(Workflow("routes", edges=[(START, unknown_route, {"x": shout})])).start("run_1", "a"))
    assert outcome.node == "unknown_route"
    assert outcome.error == (
        "node 'unknown_route' failed: it chose route 'nowhere', which it does not have (routes: 'x')"
    )


def over_budget(node_input: str) -> str:
    raise NodeFailed(f"{node_input} is over the trip's budget")


async def test_a_node_that_raises_node_failed_fails_the_run_in_its_own_words() -> None:
    """`NodeFailed` is the message alone: what the person reading the run's error should see."""
    outcome = failed(await engine(Workflow("budget", edges=[(START, over_budget)])).start("run_1", "Lisbon"))
    assert outcome.error == "node 'over_budget' failed: Lisbon is over the trip's budget"


# failures, retries, crashes


def flaky(node_input: str) -> str:
    CALLS["flaky"] += 1
    if CALLS["flaky"] == 1:
        raise ConnectionError("the booking service is down")
    return node_input + "!"


async def test_a_node_that_raises_fails_the_run_and_resume_retries_only_that_node() -> None:
    """The failure names the node; a retry on a fresh engine re-runs it and not the nodes before it."""
    persistence = MemoryWorkflowPersistence()
    wf = Workflow("retry", edges=[(START, prepare, flaky)])
    outcome = failed(await engine(wf, persistence).start("run_1", "Lisbon"))
    assert outcome.node == "flaky"
    assert outcome.error == "node 'flaky' failed: ConnectionError: the booking service is down"
    state = await persistence.load("run_1")
    assert state.status == "failed" and state.error == outcome.error
    done = finished(await engine(wf, persistence).resume(state))
    assert done.output == "plan for Lisbon!"
    assert CALLS == {"prepare": 1, "flaky": 2}


async def test_a_retry_after_answering_does_not_ask_again() -> None:
    """A generator node that fails after its answer is retried with that answer, not a new question."""

    async def ask_then_fail() -> AsyncGenerator[Any, Any]:
        city = yield RequestInput("City?", response_schema=str)
        CALLS["after"] += 1
        if CALLS["after"] == 1:
            raise TimeoutError("slow")
        yield city

    wf = engine(Workflow("retry", edges=[(START, ask_then_fail)]))
    pause = paused(await wf.start("run_1"))
    state = failed(await wf.resume(pause.state, Provide(value="Lisbon"))).state
    assert finished(await wf.resume(state)).output == "Lisbon"


class Crash(Exception):
    """Stands for the process dying right after a save."""


class CrashingPersistence(MemoryWorkflowPersistence):
    def __init__(self, crash_after: int) -> None:
        super().__init__()
        self.crash_after = crash_after

    async def save(self, state: WorkflowState) -> None:
        await super().save(state)
        if self.saves == self.crash_after:
            raise Crash


async def test_a_run_interrupted_while_running_resumes_at_the_node_it_was_running() -> None:
    """After a crash between nodes, a fresh engine carries the run on from the saved node; `prepare` does not rerun."""
    persistence = CrashingPersistence(crash_after=2)  # started, then `prepare` finished
    wf = Workflow("crash", edges=[(START, prepare, shout)])
    with pytest.raises(Crash):
        await engine(wf, persistence).start("run_1", "x")
    state = await persistence.load("run_1")
    assert (state.status, state.node) == ("running", "shout")
    done = finished(await engine(wf, MemoryWorkflowPersistence()).resume(state))
    assert done.output == "PLAN FOR X"
    assert CALLS["prepare"] == 1


async def test_output_that_is_not_json_fails_the_node() -> None:
    """A node whose output cannot be stored fails at that node, before anything after it runs."""

    def opaque() -> object:
        return object()

    outcome = failed(await engine(Workflow("opaque", edges=[(START, opaque, step2)])).start("run_1"))
    assert outcome.node == "opaque"
    assert "its output cannot be stored as JSON" in outcome.error


async def test_a_loop_that_never_waits_fails_after_max_steps() -> None:
    """A loop that keeps choosing to go round fails the run instead of running forever."""

    def again(node_input: Any) -> Route:
        return Route("again")

    wf = engine(Workflow("spin", edges=[(START, again, {"again": again, "done": END})]), max_steps=5)
    outcome = failed(await wf.start("run_1"))
    assert outcome.error.endswith("went through 5 nodes without stopping; does a loop never exit?")
    assert outcome.state.visits("again") == 5


# skipping, replay rules, resume rules


async def test_an_uncaught_skip_fails_the_node_and_a_retry_asks_again() -> None:
    """Skipping raises `InputSkipped` in the node; uncaught, the run fails and a retry asks the question again."""
    wf = engine(Workflow("root_agent", edges=[("START", step1, step2)]))
    pause = paused(await wf.start("run_1"))
    outcome = failed(await wf.resume(pause.state, Skip(reason="not now")))
    assert outcome.error == "node 'step1' failed: InputSkipped: the person skipped the input of node 'step1': not now"
    assert outcome.state.answers == ()
    again = paused(await wf.resume(outcome.state))
    assert again.input is not None and again.input.key == "step1:1:1"


async def test_a_node_may_catch_a_skip_and_carry_on() -> None:
    """A node that catches `InputSkipped` decides itself what a skipped question means."""

    async def ask_or_default() -> AsyncGenerator[Any, Any]:
        try:
            city = yield RequestInput("City?", response_schema=str)
        except InputSkipped:
            city = "Lisbon"
        yield city

    wf = engine(Workflow("default", edges=[(START, ask_or_default)]))
    pause = paused(await wf.start("run_1"))
    assert finished(await wf.resume(pause.state, Skip())).output == "Lisbon"


async def test_ctx_state_changes_of_a_paused_node_are_not_applied_twice() -> None:
    """A node replayed after its answer starts again from the `ctx.state` it first saw."""

    async def count_then_ask(ctx: WorkflowContext) -> AsyncGenerator[Any, Any]:
        ctx.state["asked"] = ctx.state.get("asked", 0) + 1
        yield (yield RequestInput("ok?", response_schema=bool))

    def report(node_input: bool, ctx: WorkflowContext) -> dict[str, Any]:
        return {"ok": node_input, "asked": ctx.state["asked"], "outputs": dict(ctx.outputs)}

    wf = engine(Workflow("state", edges=[(START, count_then_ask, report)]))
    pause = paused(await wf.start("run_1"))
    done = finished(await wf.resume(pause.state, Provide(value=True)))
    assert done.output == {"ok": True, "asked": 1, "outputs": {"count_then_ask": True}}


async def test_several_questions_in_one_node_are_answered_in_order() -> None:
    """A node may ask twice; the second question is a new pause and the first answer is replayed."""

    def two_questions() -> Generator[Any, Any, Any]:
        city = yield RequestInput("City?", response_schema=str)
        days = yield RequestInput(f"Days in {city}?", response_schema=int)
        return f"{days} days in {city}"

    wf = engine(Workflow("two", edges=[(START, two_questions)]))
    first = paused(await wf.start("run_1"))
    second = paused(await wf.resume(first.state, Provide(value="Rome")))
    assert second.input is not None
    assert (second.input.message, second.input.key) == ("Days in Rome?", "two_questions:1:2")
    assert finished(await wf.resume(second.state, Provide(value=3))).output == "3 days in Rome"


async def test_a_replay_that_asks_fewer_questions_fails_the_node() -> None:
    """A node must ask the same questions on replay; answers it no longer asks for fail it."""

    def moody() -> Generator[Any, Any, Any]:
        CALLS["moody"] += 1
        if CALLS["moody"] == 1:
            yield RequestInput("City?", response_schema=str)
        return "changed its mind"

    wf = engine(Workflow("moody", edges=[(START, moody)]))
    pause = paused(await wf.start("run_1"))
    outcome = failed(await wf.resume(pause.state, Provide(value="Rome")))
    assert "asked 0 question(s) on replay but 1 were answered" in outcome.error


async def test_resume_refuses_what_does_not_fit_the_runs_state() -> None:
    """No answer while waiting, an answer while not waiting, or anything after completion is refused."""
    wf = engine(Workflow("root_agent", edges=[("START", step1, step2)]))
    pause = paused(await wf.start("run_1"))
    with pytest.raises(NotReady, match="node 'step1' waits for input"):
        await wf.resume(pause.state)
    done = finished(await wf.resume(pause.state, Provide(value=1)))
    with pytest.raises(RunConflict, match="has completed"):
        await wf.resume(done.state)
    failed_state = failed(await engine(Workflow("retry", edges=[(START, flaky)])).start("run_2", "x")).state
    with pytest.raises(RunConflict, match="takes no 'provide' decision"):
        await wf.resume(failed_state.__class__(**{**failed_state.__dict__, "workflow": "root_agent"}), Provide(value=1))
    with pytest.raises(RunConflict, match="is of workflow 'retry'"):
        await wf.resume(failed_state)


async def test_a_state_naming_a_node_the_graph_no_longer_has_is_a_conflict() -> None:
    """Resuming with a changed graph that lost the waiting node is refused, not guessed."""
    persistence = MemoryWorkflowPersistence()
    await engine(Workflow("wf", edges=[(START, step1, step2)]), persistence).start("run_1")
    changed = Workflow("wf", edges=[(START, FunctionNode(step2, name="other"))])
    with pytest.raises(RunConflict, match="has no node 'step1' any more"):
        await engine(changed).resume(await persistence.load("run_1"), Provide(value=1))


async def test_an_expired_question_reaches_the_node_as_a_skip_with_the_expiry_text() -> None:
    """An expired input is a skip whose reason says when it expired."""

    async def ask_or_note() -> AsyncGenerator[Any, Any]:
        try:
            yield (yield RequestInput("City?", response_schema=str))
        except InputSkipped as skipped:
            yield skipped.reason

    wf = engine(Workflow("expiry", edges=[(START, ask_or_note)]))
    pause = paused(await wf.start("run_1"))
    done = finished(await wf.resume(pause.state, Expired(expires_at=0)))
    assert done.output == "Expired: no decision before 1970-01-01 00:00:00 UTC"


async def test_a_pending_question_becomes_an_input_request_labelled_with_its_node() -> None:
    """The runtime's request for a question carries the node, the message, the payload and the schema."""
    pause = paused(await engine(trip_workflow()).start("run_1", "Lisbon"))
    assert pause.input is not None
    request = pause.input.to_request(
        request_id="req_1", run_id="run_1", thread_id="thr_1", agent_path="trip/ask_trip", created_at=5.0
    )
    assert (request.kind, request.node, request.tool_name, request.tool_call_id) == (
        "input",
        "ask_trip",
        "ask_trip",
        "ask_trip:1:1",
    )
    assert request.message == "Where to? (plan for Lisbon)"
    assert request.payload == {"offer": "plan for Lisbon"}
    assert request.response_schema == Trip.model_json_schema()


async def test_a_refused_answer_leads_the_message_of_the_request_asked_again() -> None:
    """When the node's own type refused an answer, the new request says why first."""

    async def shout() -> AsyncGenerator[Any, Any]:
        yield RequestInput("Say it loud", response_schema=Shouty)

    wf = engine(Workflow("loud", edges=[(START, shout)]))
    again = paused(await wf.resume(paused(await wf.start("run_1")).state, Provide(value={"word": "quiet"})))
    assert again.input is not None
    request = again.input.to_request(request_id="r", run_id="run_1", thread_id="t", agent_path="loud", created_at=0)
    assert request.message == "Your previous answer was refused: word: value error, must be upper case\n\nSay it loud"


def test_the_workflows_surface_is_exported_and_sorted() -> None:
    """`sayso.workflows.__all__` lists only names it has, in order, and the top package re-exports the two basics."""
    import sayso
    import sayso.workflows

    assert sayso.workflows.__all__ == sorted(sayso.workflows.__all__)
    assert all(hasattr(sayso.workflows, name) for name in sayso.workflows.__all__)
    assert sayso.Workflow is sayso.workflows.Workflow and sayso.RequestInput is sayso.workflows.RequestInput


async def test_a_store_that_fails_stops_the_engine_instead_of_failing_the_node() -> None:
    """A failed save at a pause reaches the caller; it is not recorded as the node's failure."""
    persistence = CrashingPersistence(crash_after=3)  # started, `prepare` finished, then the pause
    with pytest.raises(Crash):
        await engine(trip_workflow(), persistence).start("run_1", "Lisbon")
