"""A workflow whose process is killed (kill -9) while a node works: the nodes that finished before are not run again.

The killed process is a real `sayso run`; the recovery runs in this process over the same SQLite file, as the next
process would. Each node appends a line to a file, so the test counts how often it ran.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sayso import Sayso

from ..process_tools import wait_for_line

NODES = """
import os, time

from sayso.workflows import RequestInput


def _note(line: str) -> None:
    with open(os.environ["NODES_LOG"], "a") as log:
        log.write(line + "\\n")


def ask(node_input: str):
    days = yield RequestInput("How many days?", response_schema=int)
    _note(f"ask {days}")
    return days


def plan(node_input: int) -> str:
    _note(f"plan {node_input}")
    if os.environ.get("SLOW_PLAN"):
        with open(os.environ["PLANNING"], "w") as planning:
            planning.write("planning\\n")
        time.sleep(60)  # a plain function that takes its time: killed in here
    return f"{node_input} days"
"""

CONFIG = """
store: sqlite:///nodes.db
agents: {idle: {model: test}}
workflows:
  trip:
    nodes: {ask: 'killed_nodes:ask', plan: 'killed_nodes:plan'}
    edges: [[START, ask, plan]]
entry: trip
"""


def _log(config: Path) -> list[str]:
    return (config.parent / "nodes.log").read_text().splitlines()


async def test_a_node_finished_before_a_plain_node_was_killed_is_not_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sayso decide` killed while a plain (not `async`) node works: the node before it had finished, so the process
    that carries the run on starts at the plain node, and the answered node's code after its question runs once."""
    (tmp_path / "killed_nodes.py").write_text(NODES)
    config = tmp_path / "sayso.yaml"
    config.write_text(CONFIG)
    monkeypatch.setenv("NODES_LOG", str(tmp_path / "nodes.log"))  # the nodes run in this process too
    monkeypatch.setenv("PLANNING", str(tmp_path / "planning"))
    monkeypatch.setenv("SAYSO_STORE", "")
    async with Sayso.from_yaml(config) as app:
        paused = await app.run("a trip", agent="trip")
    [ask] = paused.requests
    seq_at_pause = await _last_seq(config, paused.thread_id)
    decide = [sys.executable, "-m", "sayso", "decide", str(config), ask.request_id, "answer", "3"]
    process = subprocess.Popen(
        decide, env={**os.environ, "SLOW_PLAN": "1"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_line(tmp_path / "planning")
        # The answered node's end is written behind the node that follows: wait for that write, then kill.
        deadline = time.monotonic() + 30
        while await _last_seq(config, paused.thread_id) == seq_at_pause and time.monotonic() < deadline:
            time.sleep(0.05)
        assert await _last_seq(config, paused.thread_id) > seq_at_pause, "ask's end was not stored while plan worked"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    async with Sayso.from_yaml(config) as app:
        [run] = await app.recover()
    assert (run.status, run.output) == ("completed", "3 days")
    assert _log(config) == ["ask 3", "plan 3", "plan 3"]


async def _last_seq(config: Path, thread_id: str) -> int:
    """The position of the thread's newest stored message batch, read as another process would."""
    async with Sayso.from_yaml(config) as app:
        return await app.last_seq(thread_id)
