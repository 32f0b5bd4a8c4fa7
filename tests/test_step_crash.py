"""Steps across kill -9 (`sayso.step`): a step that finished before its process was killed is not done again by the
process that carries the run on; one cut off mid-way is "outcome unknown", never re-run, unless it is idempotent.

The processes are real (`sayso serve`, `sayso run`, `sayso decide`, killed with SIGKILL); the side effect is a line
appended to a file, so the test counts how many times it happened.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from .conftest import LiveServer
from .test_durability import SAYSO, sayso

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
workflows:
  booking:
    nodes:
      book: step_tools:book
    edges:
      - [START, book]
"""

STEP_SCRIPT = """
name: steps
rules:
  - {user: '^pay (?P<o>\\S+)$', call: pay, args: {order: "{o}"}}
  - {user: '^retry (?P<o>\\S+)$', call: pay, args: {order: "{o}", retry_step: true}}
  - {user: '^buy (?P<o>\\S+)$', call: buy, args: {order: "{o}"}}
  - {tool: pay, reply: "model read: {result}"}
  - {tool: buy, reply: "model read: {result}"}
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "step_tools.py").write_text(STEP_TOOLS)
    (tmp_path / "sayso.yaml").write_text(STEP_CONFIG)
    (tmp_path / "script.yaml").write_text(STEP_SCRIPT)
    return tmp_path / "sayso.yaml"


def environ(config: Path, **extra: str) -> dict[str, str]:
    charges, after = config.parent / "charges", config.parent / "after"
    return {**os.environ, "CHARGES": str(charges), "AFTER": str(after), "SAYSO_STORE": "", **extra}


def _wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), f"{path.name} never appeared"


def _killed_while(command: list[str], env: dict[str, str], marker: Path) -> None:
    """Run a sayso command and kill -9 it once `marker` appears."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(marker)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)


def _paused(config: Path, message: str) -> tuple[str, str]:
    """Start `message` on the shop agent: paused on pay's approval. Returns the run and request ids."""
    started = sayso("run", str(config), message, "--json", env=environ(config))
    assert started.returncode == 0, started.stderr
    paused = json.loads(started.stdout)
    return paused["run_id"], paused["requests"][0]["id"]


def test_a_step_finished_before_sayso_serve_was_killed_runs_once(config: Path) -> None:
    """Killed after the step finished (mid-tool), the run is carried on by the next process (`sayso recover`): the
    idempotent tool runs again, its step returns the recorded receipt, and the card was charged once."""
    run_id, request_id = _paused(config, "pay o1")
    served, process = LiveServer.process([str(config)], env=environ(config, SLOW_AFTER="1"))
    try:
        try:
            httpx.post(f"{served.base_url}/v1/requests/{request_id}/decision", json={"kind": "approve"}, timeout=0.5)
        except httpx.TransportError:
            pass  # the decision's reply waits on the tool; the tool waits on the kill
        _wait_for(config.parent / "after")
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    finally:
        process.kill()
    recovered = sayso("recover", str(config), "--json", env=environ(config))
    assert recovered.returncode == 0, recovered.stderr
    [run] = json.loads(recovered.stdout)["runs"]
    assert run["run_id"] == run_id
    assert (run["status"], run["output"]) == ("completed", "model read: receipt o1")
    assert (config.parent / "charges").read_text() == "o1\n"
    assert (config.parent / "after").read_text() == "after\nafter\n"


def test_a_step_cut_off_mid_way_is_outcome_unknown_and_not_run_again(config: Path) -> None:
    """Killed inside the step, the next process finds it started and never finished: the model reads that its
    outcome is unknown, and the card was charged once."""
    run_id, request_id = _paused(config, "pay o2")
    decide = [*SAYSO, "decide", str(config), request_id, "approve"]
    _killed_while(decide, environ(config, SLOW_STEP="1"), config.parent / "charges")
    after = sayso("resume", str(config), run_id, "--json", env=environ(config))
    assert after.returncode == 0, after.stderr
    result = json.loads(after.stdout)
    assert result["status"] == "completed"
    assert result["output"].startswith("model read: Error: the tool pay failed: StepOutcomeUnknown: step 'charge'")
    assert "outcome unknown: the process stopped while it was running, so it was not run again" in result["output"]
    assert (config.parent / "charges").read_text() == "o2\n"
    assert not (config.parent / "after").exists()


def test_an_idempotent_step_cut_off_mid_way_runs_again(config: Path) -> None:
    """`idempotent=True`: the step cut off by the kill runs again in the next process, and the tool finishes."""
    run_id, request_id = _paused(config, "retry o3")
    decide = [*SAYSO, "decide", str(config), request_id, "approve"]
    _killed_while(decide, environ(config, SLOW_STEP="1"), config.parent / "charges")
    after = sayso("resume", str(config), run_id, "--json", env=environ(config))
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["output"] == "model read: receipt o3"
    assert (config.parent / "charges").read_text() == "o3\no3\n"


def test_a_step_in_a_run_killed_before_its_first_pause_runs_once(config: Path) -> None:
    """`sayso run` killed after a tool's step finished, before the run ever paused: the model's reply holding the
    call was kept with the step, so the recovered run meets the same call again and its step returns the receipt."""
    run = [*SAYSO, "run", str(config), "buy o5", "--json"]
    _killed_while(run, environ(config, SLOW_AFTER="1"), config.parent / "after")
    recovered = sayso("recover", str(config), "--json", env=environ(config))
    assert recovered.returncode == 0, recovered.stderr
    [done] = json.loads(recovered.stdout)["runs"]
    assert (done["status"], done["output"]) == ("completed", "model read: receipt o5")
    assert (config.parent / "charges").read_text() == "o5\n"


def test_a_step_cut_off_before_the_runs_first_pause_is_outcome_unknown(config: Path) -> None:
    """`sayso run` killed inside a tool's step before the run ever paused: the recovered run reads the step's outcome
    as unknown, and the card was charged once."""
    run = [*SAYSO, "run", str(config), "buy o6", "--json"]
    _killed_while(run, environ(config, SLOW_STEP="1"), config.parent / "charges")
    recovered = sayso("recover", str(config), "--json", env=environ(config))
    assert recovered.returncode == 0, recovered.stderr
    [done] = json.loads(recovered.stdout)["runs"]
    assert done["status"] == "completed"
    assert done["output"].startswith("model read: Error: the tool buy failed: StepOutcomeUnknown: step 'charge'")
    assert (config.parent / "charges").read_text() == "o6\n"


def test_a_workflow_nodes_step_survives_kill_9_of_sayso_run(config: Path) -> None:
    """`sayso run` of a workflow killed after its node's step finished: `sayso recover` carries the run on, the node
    runs again, and its step returns the recorded receipt instead of charging again."""
    run = [*SAYSO, "run", str(config), "w1", "--agent", "booking", "--json"]
    _killed_while(run, environ(config, SLOW_AFTER="1"), config.parent / "after")
    recovered = sayso("recover", str(config), "--json", env=environ(config))
    assert recovered.returncode == 0, recovered.stderr
    [done] = json.loads(recovered.stdout)["runs"]
    assert (done["status"], done["output"]) == ("completed", "receipt w1")
    assert (config.parent / "charges").read_text() == "w1\n"


def test_a_workflow_nodes_step_cut_off_by_kill_9_fails_the_node_as_outcome_unknown(config: Path) -> None:
    """Killed inside the node's step: the recovered run's node reads the step's outcome as unknown (uncaught, it
    fails the node, naming the step), and the card was charged once."""
    run = [*SAYSO, "run", str(config), "w2", "--agent", "booking", "--json"]
    _killed_while(run, environ(config, SLOW_STEP="1"), config.parent / "charges")
    recovered = sayso("recover", str(config), "--json", env=environ(config))
    assert recovered.returncode == 0, recovered.stderr
    [failed] = json.loads(recovered.stdout)["runs"]
    assert failed["status"] == "failed"
    assert "node 'book' failed: StepOutcomeUnknown: step 'charge'" in failed["error"]
    assert (config.parent / "charges").read_text() == "w2\n"
