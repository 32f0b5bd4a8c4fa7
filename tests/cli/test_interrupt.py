"""Ctrl-C while an agent works (`sayso run`, `sayso decide`): one line names the run and thread, where they stand and
how to carry on; a call that cannot be cancelled (a sync tool in its thread) and finishes after it is kept in the
ledger, so carrying on reads its result instead of "outcome unknown"; a cancelled async call stays unknown."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..process_tools import wait_for_line

SAYSO = [sys.executable, "-m", "sayso"]

TOOLS = '''
import asyncio
import os
import time
from pathlib import Path


def _started(order: str) -> None:
    with open(os.environ["STARTED"], "a") as started:
        started.write(order + "\\n")


def _did(order: str) -> str:
    with open(os.environ["DONE"], "a") as done:
        done.write(order + "\\n")
    return f"refunded {order}"


def refund(order: str) -> str:
    """A sync tool: it runs in a thread, which nothing can stop; it waits for the test's go."""
    _started(order)
    while not Path(os.environ["GO"]).exists():
        time.sleep(0.02)
    return _did(order)


async def refund_async(order: str) -> str:
    """An async tool: a cancellation stops it where it waits."""
    _started(order)
    while not Path(os.environ["GO"]).exists():
        await asyncio.sleep(0.02)
    return _did(order)


def look(order: str) -> str:
    """A tool that needs no approval, waiting for the go like `refund`."""
    _started(order)
    while not Path(os.environ["GO"]).exists():
        time.sleep(0.02)
    return f"order {order} is there"
'''

SCRIPT = """
name: refunds
rules:
  - {user: '^refund (?P<o>\\S+)$', call: refund, args: {order: "{o}"}}
  - {user: '^refund-async (?P<o>\\S+)$', call: refund_async, args: {order: "{o}"}}
  - {user: '^look (?P<o>\\S+)$', call: look, args: {order: "{o}"}}
  - {tool: refund, reply: "model read: {result}"}
  - {tool: refund_async, reply: "model read: {result}"}
  - {tool: look, reply: "model read: {result}"}
fallback: "I understand refund ORDER, refund-async ORDER and look ORDER."
"""

CONFIG = """
store: sqlite:///shop.db
models:
  main: {scripted: script.yaml}
agents:
  desk:
    model: main
    tools: [desk_tools:refund, desk_tools:refund_async, desk_tools:look]
    interrupt: {tools: [refund, refund_async]}
"""


@dataclass
class Shop:
    """A project whose tools wait for the test's go, and the files they leave."""

    folder: Path

    @property
    def config(self) -> str:
        return str(self.folder / "sayso.yaml")

    @property
    def env(self) -> dict[str, str]:
        names = {"STARTED": "started", "GO": "go", "DONE": "done"}
        env = {k: v for k, v in os.environ.items() if k != "SAYSO_STORE"}
        return env | {"COLUMNS": "400", "NO_COLOR": "1"} | {k: str(self.folder / v) for k, v in names.items()}

    def sayso(self, *args: str, given: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([*SAYSO, *args], input=given, capture_output=True, text=True, timeout=120, env=self.env)

    def interrupted(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`sayso ARGS`, sent SIGINT while its tool runs; the tool is let go on after it."""
        process = subprocess.Popen(
            [*SAYSO, *args], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        wait_for_line(self.folder / "started", seconds=60)
        process.send_signal(signal.SIGINT)
        (self.folder / "go").touch()
        out, err = process.communicate(timeout=120)
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    def done(self) -> str:
        return (self.folder / "done").read_text() if (self.folder / "done").exists() else ""


def shop(tmp_path: Path) -> Shop:
    (tmp_path / "desk_tools.py").write_text(TOOLS)
    (tmp_path / "script.yaml").write_text(SCRIPT)
    (tmp_path / "sayso.yaml").write_text(CONFIG)
    return Shop(tmp_path)


def paused(project: Shop, message: str) -> tuple[str, str, str]:
    """(request, run, thread) of a run that waits on its approval."""
    started = project.sayso("run", project.config, message, "--json")
    assert started.returncode == 0, started.stderr
    run = json.loads(started.stdout)
    return run["requests"][0]["id"], run["run_id"], run["thread_id"]


def recovered(project: Shop) -> list[str]:
    """What each run `sayso recover` carried on ended with."""
    done = project.sayso("recover", project.config, "--json")
    assert done.returncode == 0, done.stderr
    return [r["output"] for r in json.loads(done.stdout)["runs"]]


def test_ctrl_c_while_a_sync_tool_runs_keeps_its_result_and_says_how_to_carry_on(tmp_path: Path) -> None:
    """Ctrl-C during `decide approve`: the refund, already in its thread, finishes and is recorded; the command says
    which run and thread it left running and how to carry them on; a new message on the thread is refused with the
    same way out (by `run` and by `chat`); `recover` then reads the refund's real result, and the audit says it ran,
    not outcome unknown."""
    project = shop(tmp_path)
    request_id, run_id, thread_id = paused(project, "refund A-100")

    stopped = project.interrupted("decide", project.config, request_id, "approve")

    assert stopped.returncode == 130, stopped.stderr
    said = " ".join(stopped.stderr.split())
    assert f"interrupted: run {run_id} on thread {thread_id}" in said, stopped.stderr
    assert "still running" in said and f"recover {project.config}" in said, stopped.stderr
    assert "Traceback" not in stopped.stderr
    for busy in (
        project.sayso("run", project.config, "refund A-101", "--thread", thread_id),
        project.sayso("chat", project.config, "--thread", thread_id, given="refund A-101\n"),
    ):
        assert busy.returncode == 4
        hint = " ".join(busy.stderr.split())
        assert "already has a run in progress" in hint and f"recover {project.config}" in hint, busy.stderr

    assert recovered(project) == ["model read: refunded A-100"]
    assert project.done() == "A-100\n"
    audit = json.loads(project.sayso("audit", "list", project.config, "--json").stdout)["records"]
    events = [r["body"]["event"] for r in audit if r["body"].get("request_id") == request_id]
    assert "executed" in events and "outcome_unknown" not in events, events


def test_ctrl_c_while_an_async_tool_runs_leaves_its_outcome_unknown(tmp_path: Path) -> None:
    """An async call is cancelled where it waits: it may have done part of its work, so carrying on records its
    outcome as unknown, and it never runs a second time."""
    project = shop(tmp_path)
    request_id, run_id, thread_id = paused(project, "refund-async A-100")

    stopped = project.interrupted("decide", project.config, request_id, "approve")

    assert stopped.returncode == 130, stopped.stderr
    assert f"interrupted: run {run_id} on thread {thread_id}" in " ".join(stopped.stderr.split()), stopped.stderr
    [output] = recovered(project)
    assert output.startswith("model read: Outcome unknown"), output
    assert project.done() == ""


def test_ctrl_c_during_run_names_the_new_run_and_thread_as_json_too(tmp_path: Path) -> None:
    """`sayso run --json` interrupted while a tool works prints one JSON error naming the run and the thread it
    started (which nobody saw yet), and exits 130."""
    project = shop(tmp_path)

    stopped = project.interrupted("run", project.config, "look A-100", "--json")

    assert stopped.returncode == 130, stopped.stderr
    error = json.loads(stopped.stdout)["error"]
    assert error["type"] == "Interrupted"
    found = re.search(r"interrupted: run (run_\S+) on thread (thr_\S+) ", error["message"])
    assert found, error["message"]
    assert recovered(project) == ["model read: order A-100 is there"]
