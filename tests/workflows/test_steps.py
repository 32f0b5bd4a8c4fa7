"""Side effects that run once in a workflow node (`ctx.step`, `sayso.step`): a node replayed for each answer to its
`RequestInput`, or retried after it failed, does not do a step's work again; a loop's next pass does."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai.models.test import TestModel

import sayso
from sayso import Config, InputRequest, Provide, RequestInput, RunResult, Sayso, Workflow
from sayso.workflows import END, MemoryWorkflowPersistence, Route, WorkflowContext, WorkflowEngine, WorkflowPaused

CHARGED: Counter[str] = Counter()
FLAKY: dict[str, int] = {}


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    CHARGED.clear()
    FLAKY.clear()
    yield


class Booking(BaseModel):
    city: str
    number: int


async def book(city: str) -> Booking:
    CHARGED[city] += 1
    return Booking(city=city, number=CHARGED[city])


def flaky_book(city: str) -> Booking:
    """Fails the first `FLAKY[city]` times it runs, before doing anything."""
    if FLAKY.get(city, 0) > 0:
        FLAKY[city] -= 1
        raise ConnectionError("the booking service is down")
    CHARGED[city] += 1
    return Booking(city=city, number=CHARGED[city])


async def plan(node_input: str, ctx: WorkflowContext) -> AsyncGenerator[Any, Any]:
    booking = await ctx.step("book", book, node_input)
    assert isinstance(booking, Booking)
    nights = yield RequestInput(f"How many nights in {booking.city}?", response_schema=int)
    meal = yield RequestInput("Which meal?", response_schema=str)
    again = await sayso.step(ctx, "book", book, node_input)  # the same name again: a step of its own
    yield f"booking {booking.number} and {again.number}: {nights} nights, {meal}"


def make(tmp_path: Path, *workflows: Workflow) -> Sayso:
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "agents": {"clerk": {"model": "m"}},
            "workflows": {w.name: w for w in workflows},
        }
    )
    return Sayso(config, models={"m": TestModel()})


def question(result: RunResult) -> InputRequest:
    assert result.status == "paused", result
    [request] = result.requests
    assert isinstance(request, InputRequest)
    return request


async def test_a_step_before_a_request_input_runs_once_after_the_answers(tmp_path: Path) -> None:
    """The node runs three times (the start, then once per answer); its booking happens once, and a second step of
    the same name once more, each read back as a `Booking` when the node is replayed."""
    async with make(tmp_path, Workflow("trip", edges=[("START", plan)])) as app:
        first = question(await app.run("Lisbon", agent="trip"))
        assert CHARGED["Lisbon"] == 1
        second = question((await app.decide(first.request_id, Provide(value=3))).run)
        done = await app.decide(second.request_id, Provide(value="dinner"))
    assert done.run.output == "booking 1 and 2: 3 nights, dinner"
    assert CHARGED["Lisbon"] == 2


async def test_a_step_runs_once_when_another_process_takes_the_answer(tmp_path: Path) -> None:
    """The step is in the store with the run: a runtime opened afresh answers, and the replay finds it done."""
    workflow = Workflow("trip", edges=[("START", plan)])
    async with make(tmp_path, workflow) as first:
        asked = question(await first.run("Rome", agent="trip"))
    async with make(tmp_path, workflow) as second:
        nights = question((await second.decide(asked.request_id, Provide(value=2))).run)
    async with make(tmp_path, workflow) as third:
        done = await third.decide(nights.request_id, Provide(value="lunch"))
    assert done.run.output == "booking 1 and 2: 2 nights, lunch"
    assert CHARGED["Rome"] == 2


async def flaky_node(node_input: str, ctx: WorkflowContext) -> str:
    booking = await ctx.step("book", flaky_book, node_input)
    if FLAKY.get("after", 0) > 0:  # the node fails after its step finished
        FLAKY["after"] -= 1
        raise RuntimeError("the node broke after booking")
    return f"booked {booking.number}"


async def test_a_retried_node_keeps_a_finished_step_and_runs_one_that_raised_again(tmp_path: Path) -> None:
    """A step whose function raised is not recorded, so the node's retry runs it again; a step that finished before
    the node failed is not run again by the retry."""
    FLAKY.update({"Oslo": 1, "after": 1})
    async with make(tmp_path, Workflow("flaky", edges=[("START", flaky_node)])) as app:
        failed = await app.run("Oslo", agent="flaky")
        assert failed.status == "failed" and "ConnectionError: the booking service is down" in (failed.error or "")
        assert CHARGED["Oslo"] == 0
        broke = await app.resume(failed.run_id)
        assert broke.status == "failed" and "the node broke after booking" in (broke.error or "")
        done = await app.resume(failed.run_id)
    assert done.output == "booked 1"
    assert CHARGED["Oslo"] == 1


async def loop(node_input: Any, ctx: WorkflowContext) -> Route:
    booking = await ctx.step("book", book, "Paris")
    return Route("again" if booking.number < 2 else "done", output=booking.number)


async def test_a_loops_next_pass_takes_its_steps_anew(tmp_path: Path) -> None:
    """Steps are keyed by the node's pass: a loop that comes back to a node books again."""
    workflow = Workflow("loop", edges=[("START", loop), (loop, {"again": loop, "done": END})])
    async with make(tmp_path, workflow) as app:
        done = await app.run("go", agent="loop")
    assert done.output == "2"
    assert CHARGED["Paris"] == 2


async def test_an_engine_on_its_own_keeps_steps_in_memory() -> None:
    """`WorkflowEngine` without a runtime records steps in its own memory: a resumed node replays them."""
    engine = WorkflowEngine(Workflow("trip", edges=[("START", plan)]), persistence=MemoryWorkflowPersistence())
    first = await engine.start("run_1", "Bergen")
    assert isinstance(first, WorkflowPaused)
    second = await engine.resume(first.state, Provide(value=1))
    assert isinstance(second, WorkflowPaused)
    done = await engine.resume(second.state, Provide(value="breakfast"))
    assert done.state.output == "booking 1 and 2: 1 nights, breakfast"
    assert CHARGED["Bergen"] == 2
