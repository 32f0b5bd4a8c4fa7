"""The step journal on Temporal: each step an activity of the run's workflow, its side effect done once.

A step (`sayso.step`, a node's `ctx.step`) runs as the activity `sayso.step` on the worker whose
body took it, and is recorded in sayso's store as in one process: a body run again after an
approval or an answer (here on another worker, the first killed with -9) gets the recorded result
back, and a step cut off by kill -9 is "outcome unknown", never run again
(docs/guides/temporal.md#what-runs-where).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from sayso import Approve, InputRequest, Provide, Sayso

from .conftest import Project, Workers

TOOLS = '''
import os
import time

import sayso
from pydantic_ai import RunContext
from sayso import RequestInput, RunDeps, require_approval


def charge_card(order: str) -> str:
    with open(os.environ["MARKER"], "a") as marker:
        marker.write(order + "\\n")
    if order.startswith("slow"):
        time.sleep(600)  # killed in here: mid-step
    return f"receipt-{order}"


async def refund(ctx: RunContext[RunDeps], order: str) -> str:
    """Charge, then ask before telling the customer."""
    receipt = await sayso.step(ctx, "charge", charge_card, order)
    require_approval(ctx, hint=f"Email the customer about {receipt}?")
    return f"emailed about {receipt}"


@sayso.tool(idempotent=True)
async def pay(ctx: RunContext[RunDeps], order: str) -> str:
    """Charge an order (the tool may run again; its step may not)."""
    return await sayso.step(ctx, "charge", charge_card, order)


async def book(node_input, ctx):
    receipt = await ctx.step("charge", charge_card, node_input)
    nights = yield RequestInput(f"How many nights for {receipt}?", response_schema=int)
    yield f"{receipt}: {nights} nights"
'''

SCRIPT = """
name: refunds
rules:
  - {user: '^refund (?P<o>\\S+)$', call: refund, args: {order: "{o}"}}
  - {user: '^pay (?P<o>\\S+)$', call: pay, args: {order: "{o}"}}
  - {tool: refund, reply: "model read: {result}"}
  - {tool: pay, reply: "model read: {result}"}
"""

BODY = """
models:
  demo: {scripted: script.yaml}
agents:
  refunds:
    model: demo
    tools: [journal_tools:refund, journal_tools:pay]
workflows:
  booking:
    nodes:
      book: journal_tools:book
    edges:
      - [START, book]
"""


@pytest.fixture
def config(tmp_path: Path, temporal: Project) -> Path:
    return temporal.config(tmp_path, BODY, {"journal_tools.py": TOOLS, "script.yaml": SCRIPT})


@pytest.fixture
def pool(config: Path, temporal: Project) -> Workers:
    return temporal.workers(config)


async def steps_in(address: str, workflow: str) -> list[str]:
    """The ids of the step activities the run's workflow scheduled (`step-<name>-<occurrence>-…`), in order."""
    client = await Client.connect(address)
    found: list[str] = []
    async for event in client.get_workflow_handle(workflow).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name == "sayso.step":
                found.append(scheduled.activity_id)
    return found


async def assert_charged_once(temporal: Project, key: str, workflow: str) -> None:
    """The card was charged for `key` once, and each of the two runs of the body's step was a `sayso.step`
    activity in `workflow`'s history (the second returning the recorded receipt)."""
    assert temporal.marker.read_text().split() == [key]
    steps = await steps_in(temporal.address, workflow)
    assert len(steps) == 2 and all(s.startswith("step-charge-1-") for s in steps), steps


async def test_a_step_before_an_in_body_approval_is_an_activity_and_runs_once_across_workers(
    config: Path, pool: Workers, temporal: Project
) -> None:
    """Charge, pause for approval, kill -9 the worker, approve: another worker finishes; the card was charged once,
    and each run of the body's step is a `sayso.step` activity in the run's history."""
    first = pool.start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("refund o1")
        assert paused.status == "paused", paused
        pool.kill(first)
        pool.start()
        done = (await front.decide(paused.requests[0].request_id, Approve())).run
    assert (done.status, done.output) == ("completed", "model read: emailed about receipt-o1")
    await assert_charged_once(temporal, "o1", f"sayso-refunds-{done.run_id}")


async def test_a_nodes_step_before_a_request_input_runs_once_across_workers(
    config: Path, pool: Workers, temporal: Project
) -> None:
    """A graph's node charges, then asks how many nights; its worker is killed; the answer replays the node on
    another worker, whose step returns the recorded receipt."""
    first = pool.start()
    async with Sayso.from_yaml(config) as front:
        asked = await front.run("w1", agent="booking")
        [question] = asked.requests
        assert isinstance(question, InputRequest) and question.node == "book"
        pool.kill(first)
        pool.start()
        done = (await front.decide(question.request_id, Provide(value=2))).run
    assert (done.status, done.output) == ("completed", "receipt-w1: 2 nights")
    await assert_charged_once(temporal, "w1", f"sayso-booking-{done.run_id}")


async def test_a_step_cut_off_by_kill_9_is_outcome_unknown_and_never_runs_again(
    config: Path, pool: Workers, temporal: Project
) -> None:
    """kill -9 inside the step: the idempotent tool runs again on another worker, its step finds itself cut off and
    the model reads "outcome unknown"; the card was charged once."""
    first = pool.start()
    marker = temporal.marker
    async with Sayso.from_yaml(config) as front:
        done = await pool.kill_mid_call(first, marker.exists, lambda: front.run("pay slow1"))
    assert done.status == "completed" and done.output is not None, done
    assert done.output.startswith("model read: Error: the tool pay failed: StepOutcomeUnknown: step 'charge'"), (
        done.output
    )
    assert marker.read_text().split() == ["slow1"]
