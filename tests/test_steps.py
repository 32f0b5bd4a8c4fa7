"""Side effects that run once (`sayso.step`): a tool's work before its in-body approval is not done again when the
body runs again after the approval, in this process or another; its result comes back as recorded."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import RunContext

import sayso
from sayso import Approve, RunDeps, Sayso, UsageError, require_approval

from .conftest import MakeApp
from .models import tool_model

CHARGED: Counter[str] = Counter()
"""How many times each order's card was charged: the side effect that must happen once."""


class Receipt(BaseModel):
    order: str
    amount: int


async def charge(order: str, amount: int) -> Receipt:
    CHARGED[order] += 1
    return Receipt(order=order, amount=amount * CHARGED[order])  # a second charge would read as a different receipt


THREADS: set[int] = set()
"""The threads plain step functions ran in."""


def note(order: str) -> str:
    THREADS.add(threading.get_ident())
    CHARGED[f"note {order}"] += 1
    return f"note {CHARGED[f'note {order}']}"


async def pay(ctx: RunContext[RunDeps], order: str) -> str:
    """Charge an order, then ask a person to confirm the email."""
    receipt = await sayso.step(ctx, "charge", charge, order, amount=10)
    assert isinstance(receipt, Receipt)
    first = await sayso.step(ctx, "note", note, order)
    second = await sayso.step(ctx, "note", note, order)  # the same name again: a step of its own
    require_approval(ctx, hint=f"Email receipt {receipt.amount} for {order}?")
    return f"emailed {receipt.order} {receipt.amount}, {first}, {second}"


class Socket:
    """Not JSON."""


async def open_socket() -> Socket:
    CHARGED["socket"] += 1
    return Socket()


async def open_untyped():  # type: ignore[no-untyped-def]  # no annotation: found out once it returned
    CHARGED["untyped"] += 1
    return Socket()


async def leaky(ctx: RunContext[RunDeps], typed: bool) -> str:
    """A tool whose step returns something that cannot be recorded."""
    await sayso.step(ctx, "connect", open_socket if typed else open_untyped)
    return "connected"


def route(said: str) -> tuple[str, dict[str, Any]]:
    if said.startswith("pay "):
        return "pay", {"order": said.removeprefix("pay ")}
    return "leaky", {"typed": said == "leak typed"}


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    CHARGED.clear()
    THREADS.clear()
    yield


def app_of(make_app: MakeApp) -> Sayso:
    return make_app({"shop": {"model": "m", "tools": [pay, leaky]}}, model=tool_model(route))


async def test_a_step_before_an_in_body_approval_runs_once_after_approve(make_app: MakeApp) -> None:
    """The body runs twice (before and after the approval); the charge and each note happen once, and the second
    run reads the first run's receipt, a model again."""
    async with app_of(make_app) as app:
        paused = await app.run("pay o1")
        [request] = paused.requests
        assert CHARGED == Counter({"o1": 1, "note o1": 2})
        done = await app.decide(request.request_id, Approve())
    assert done.run.output == "model read: emailed o1 10, note 1, note 2"
    assert CHARGED == Counter({"o1": 1, "note o1": 2})
    assert THREADS and threading.main_thread().ident not in THREADS  # a plain function runs in a worker thread


async def test_a_step_runs_once_when_another_process_resumes(make_app: MakeApp) -> None:
    """The step is recorded with the run in the store: a runtime opened afresh (a restarted process) approves,
    and the body's second run finds the charge done."""
    async with app_of(make_app) as first:
        paused = await first.run("pay o2")
    async with app_of(make_app) as second:
        done = await second.decide(paused.requests[0].request_id, Approve())
    assert done.run.output == "model read: emailed o2 10, note 1, note 2"
    assert CHARGED["o2"] == 1


async def test_two_calls_of_one_tool_take_steps_of_their_own(make_app: MakeApp) -> None:
    """Steps are keyed by the tool call: a second call of the tool in a new message charges again."""
    async with app_of(make_app) as app:
        first = await app.run("pay o3")
        await app.decide(first.requests[0].request_id, Approve())
        second = await app.run("pay o3", thread_id=first.thread_id)
        done = await app.decide(second.requests[0].request_id, Approve())
    assert done.run.output == "model read: emailed o3 20, note 3, note 4"
    assert CHARGED["o3"] == 2


async def test_a_result_that_is_not_json_is_a_clear_error(make_app: MakeApp) -> None:
    """A step whose function returns something JSON cannot hold fails the run, naming the step and the type:
    refused before it runs when its annotation says so, else once it returned."""
    async with app_of(make_app) as app:
        typed = await app.run("leak typed")
        untyped = await app.run("leak")
    assert typed.status == "failed" and typed.error is not None
    assert "UsageError: step 'connect': open_socket returns Socket, which cannot be stored as JSON" in typed.error
    assert "socket" not in CHARGED
    assert untyped.status == "failed" and untyped.error is not None
    assert "UsageError: step 'connect' returned Socket, which cannot be stored as JSON" in untyped.error
    assert CHARGED["untyped"] == 1


async def test_a_step_outside_a_tool_call_is_refused() -> None:
    """`sayso.step` needs a tool's (or a node's) context to know whose step it is."""
    with pytest.raises(UsageError, match="takes a tool's RunContext or a workflow node's WorkflowContext"):
        await sayso.step(object(), "charge", charge, "o", 1)  # type: ignore[call-overload]
