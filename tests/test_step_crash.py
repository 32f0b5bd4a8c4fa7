"""Steps across kill -9 (`sayso.step`): a step that finished before its process was killed is not done again by the
process that carries the run on; one cut off mid-way is "outcome unknown", never re-run, unless it is idempotent.

The killed processes are real (`sayso serve`, `sayso run`, `sayso decide`, killed with SIGKILL); the pause before
and the recovery after run in this process over the same SQLite file, as the next process would. The side effect
is a line appended to a file, so the test counts how many times it happened.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import httpx
import pytest

from sayso import RunResult, Sayso

from .conftest import LiveServer
from .process_tools import wait_for_line
from .test_durability import SAYSO

STEP_TOOLS = '''
import os, time
import anyio
from pydantic_ai import RunContext

import sayso


def charge(order: str) -> str:
    with open(os.environ["CHARGES"], "a") as charges:
        charges.write(order + "\\n")
    if os.environ.get("SLOW_STEP"):
        time.sleep(60)  # killed in here: mid-step
    return f"receipt {order}"


async def _after() -> None:
    with open(os.environ["AFTER"], "a") as after:
        after.write("after\\n")
    if os.environ.get("SLOW_AFTER"):
        await anyio.sleep(60)  # killed in here: the step has finished


@sayso.tool(idempotent=True)
async def pay(ctx: RunContext, order: str, retry_step: bool = False) -> str:
    """Charge an order."""
    receipt = await sayso.step(ctx, "charge", charge, order, idempotent=retry_step)
    await _after()
    return receipt


async def buy(ctx: RunContext, order: str) -> str:
    """Charge an order; no approval asked."""
    receipt = await sayso.step(ctx, "charge", charge, order)
    await _after()
    return receipt


async def book(node_input, ctx):
    receipt = await ctx.step("charge", charge, node_input)
    await _after()
    return receipt
'''

STEP_CONFIG = """
store: sqlite:///steps.db
models:
  demo: {scripted: script.yaml}
agents:
  shop:
    model: demo
    tools: [step_tools:pay, step_tools:buy]
    interrupt: {tools: [pay]}
  boss:
    model: demo
    delegates: [{agent: shop}]
workflows:
  booking:
    nodes:
      book: step_tools:book
    edges:
      - [START, book]
  shopping:
    nodes:
      cart: {agent: shop}
    edges:
      - [START, cart]
"""

STEP_SCRIPT = """
name: steps
rules:
  - {user: '^pay (?P<o>\\S+)$', call: pay, args: {order: "{o}"}}
  - {user: '^retry (?P<o>\\S+)$', call: pay, args: {order: "{o}", retry_step: true}}
  - {user: '^buy (?P<o>\\S+)$', call: buy, args: {order: "{o}"}}
  - {user: '^have the shop buy (?P<o>\\S+)$', call: shop, args: {task: "buy {o}"}}
  - {tool: pay, reply: "model read: {result}"}
  - {tool: buy, reply: "model read: {result}"}
  - {tool: shop, reply: "boss read: {result}"}
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "step_tools.py").write_text(STEP_TOOLS)
    (tmp_path / "sayso.yaml").write_text(STEP_CONFIG)
    (tmp_path / "script.yaml").write_text(STEP_SCRIPT)
    for name, value in environ(tmp_path / "sayso.yaml").items():
        monkeypatch.setenv(name, value)  # the tools run in this process too: before the kill and after it
    return tmp_path / "sayso.yaml"


def environ(config: Path, **extra: str) -> dict[str, str]:
    charges, after = config.parent / "charges", config.parent / "after"
    return {"CHARGES": str(charges), "AFTER": str(after), "SAYSO_STORE": "", **extra}


def _killed_while(command: list[str], config: Path, marker: Path, **env: str) -> None:
    """Run a sayso command and kill -9 it once `marker` appears."""
    process = subprocess.Popen(
        command, env={**os.environ, **environ(config, **env)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_line(marker)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)


async def _paused(config: Path, message: str) -> tuple[str, str]:
    """Start `message` on the shop agent: paused on pay's approval. Returns the run and request ids."""
    async with Sayso.from_yaml(config) as app:
        paused = await app.run(message)
    assert paused.status == "paused", paused
    return paused.run_id, paused.requests[0].request_id


async def _recovered(config: Path) -> RunResult:
    """What the next process does: carry on the run whose process died (`Sayso.recover`, as `sayso serve` does)."""
    async with Sayso.from_yaml(config) as app:
        [run] = await app.recover()
        assert await app.recover() == []
    return run


def _audit(config: Path) -> list[dict[str, object]]:
    with sqlite3.connect(config.parent / "steps.db") as conn:
        return [json.loads(body) for (body,) in conn.execute("SELECT body FROM audit ORDER BY seq")]


async def test_a_step_finished_before_sayso_serve_was_killed_runs_once(config: Path) -> None:
    """`sayso serve` killed after the step finished (mid-tool): the next process carries the run on, the idempotent
    tool runs again, its step returns the recorded receipt, and the card was charged once."""
    run_id, request_id = await _paused(config, "pay o1")
    served, process = LiveServer.process([str(config)], env={**os.environ, **environ(config, SLOW_AFTER="1")})
    try:
        try:
            httpx.post(f"{served.base_url}/v1/requests/{request_id}/decision", json={"kind": "approve"}, timeout=0.5)
        except httpx.TransportError:
            pass  # the decision's reply waits on the tool; the tool waits on the kill
        wait_for_line(config.parent / "after")
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    finally:
        process.kill()
    run = await _recovered(config)
    assert (run.run_id, run.status, run.output) == (run_id, "completed", "model read: receipt o1")
    assert (config.parent / "charges").read_text() == "o1\n"
    assert (config.parent / "after").read_text() == "after\nafter\n"


async def test_a_step_cut_off_mid_way_is_outcome_unknown_and_not_run_again(config: Path) -> None:
    """`sayso decide` killed inside the step: the next process finds it started and never finished, the model reads
    that its outcome is unknown, the audit log says so once, and the card was charged once."""
    run_id, request_id = await _paused(config, "pay o2")
    _killed_while(
        [*SAYSO, "decide", str(config), request_id, "approve"], config, config.parent / "charges", SLOW_STEP="1"
    )
    run = await _recovered(config)
    assert run.status == "completed" and run.output is not None
    assert run.output.startswith("model read: Error: the tool pay failed: StepOutcomeUnknown: step 'charge'")
    assert "outcome unknown: the process stopped while it was running, so it was not run again" in run.output
    assert (config.parent / "charges").read_text() == "o2\n"
    assert not (config.parent / "after").exists()
    [unknown] = [e for e in _audit(config) if e["event"] == "step_unknown"]
    assert (unknown["run_id"], unknown["step"], unknown["occurrence"]) == (run_id, "charge", 1)


async def test_an_idempotent_step_cut_off_mid_way_runs_again(config: Path) -> None:
    """`idempotent=True`: the step cut off by the kill runs again in the next process, and the tool finishes."""
    _, request_id = await _paused(config, "retry o3")
    _killed_while(
        [*SAYSO, "decide", str(config), request_id, "approve"], config, config.parent / "charges", SLOW_STEP="1"
    )
    run = await _recovered(config)
    assert run.output == "model read: receipt o3"
    assert (config.parent / "charges").read_text() == "o3\no3\n"


async def test_a_step_in_a_run_killed_before_its_first_pause_runs_once(config: Path) -> None:
    """`sayso run` killed after a tool's step finished, before the run ever paused: the model's reply holding the
    call was kept with the step, so the recovered run meets the same call again and its step returns the receipt."""
    _killed_while([*SAYSO, "run", str(config), "buy o5"], config, config.parent / "after", SLOW_AFTER="1")
    run = await _recovered(config)
    assert (run.status, run.output) == ("completed", "model read: receipt o5")
    assert (config.parent / "charges").read_text() == "o5\n"


async def test_a_step_cut_off_before_the_runs_first_pause_is_outcome_unknown(config: Path) -> None:
    """`sayso run` killed inside a tool's step before the run ever paused: the recovered run reads the step's outcome
    as unknown, and the card was charged once."""
    _killed_while([*SAYSO, "run", str(config), "buy o6"], config, config.parent / "charges", SLOW_STEP="1")
    run = await _recovered(config)
    assert run.status == "completed" and run.output is not None
    assert run.output.startswith("model read: Error: the tool buy failed: StepOutcomeUnknown: step 'charge'")
    assert (config.parent / "charges").read_text() == "o6\n"


async def test_a_workflow_nodes_step_survives_kill_9_of_sayso_run(config: Path) -> None:
    """`sayso run` of a workflow killed after its node's step finished: the recovered run's node runs again, and its
    step returns the recorded receipt instead of charging again."""
    command = [*SAYSO, "run", str(config), "w1", "--agent", "booking"]
    _killed_while(command, config, config.parent / "after", SLOW_AFTER="1")
    run = await _recovered(config)
    assert (run.status, run.output) == ("completed", "receipt w1")
    assert (config.parent / "charges").read_text() == "w1\n"


async def test_a_workflow_nodes_step_cut_off_by_kill_9_fails_the_node_as_outcome_unknown(config: Path) -> None:
    """Killed inside the node's step: the recovered run's node reads the step's outcome as unknown (uncaught, it
    fails the node, naming the step), and the card was charged once."""
    command = [*SAYSO, "run", str(config), "w2", "--agent", "booking"]
    _killed_while(command, config, config.parent / "charges", SLOW_STEP="1")
    run = await _recovered(config)
    assert run.status == "failed" and run.error is not None
    assert "node 'book' failed: StepOutcomeUnknown: step 'charge'" in run.error
    assert (config.parent / "charges").read_text() == "w2\n"


async def test_an_agent_nodes_run_cut_off_by_kill_9_is_carried_on_not_started_again(config: Path) -> None:
    """`sayso run` of a graph killed while its agent node's tool runs (its step finished), before the graph wrote its
    pause or progress: the recovered graph carries the node's run on instead of starting the agent again, so the
    step returns the recorded receipt and the card was charged once."""
    command = [*SAYSO, "run", str(config), "buy o7", "--agent", "shopping"]
    _killed_while(command, config, config.parent / "after", SLOW_AFTER="1")
    run = await _recovered(config)
    assert (run.status, run.output) == ("completed", "model read: receipt o7")
    assert (config.parent / "charges").read_text() == "o7\n"


async def test_a_delegates_run_cut_off_by_kill_9_is_carried_on_not_started_again(config: Path) -> None:
    """`sayso run` killed while the delegate's tool runs (its step finished), before the delegate or its parent wrote
    where it stands: the recovered parent meets its delegate call again and carries the delegate's run on instead of
    starting the delegate a second time, so the card was charged once and there is one run of the delegate."""
    command = [*SAYSO, "run", str(config), "have the shop buy o9", "--agent", "boss"]
    _killed_while(command, config, config.parent / "after", SLOW_AFTER="1")
    run = await _recovered(config)
    assert (run.status, run.output) == ("completed", "boss read: model read: receipt o9")
    assert (config.parent / "charges").read_text() == "o9\n"
    with sqlite3.connect(config.parent / "steps.db") as db:  # what an operator's query of the store shows
        delegate_runs = db.execute("SELECT status FROM runs WHERE agent = 'shop'").fetchall()
    assert delegate_runs == [("completed",)]
