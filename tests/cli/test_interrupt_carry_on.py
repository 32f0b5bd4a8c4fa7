"""Ctrl-C while `sayso resume`, `expire`, `recover` or `chat` carries a run on: exit 130 and one line naming the run and
the thread it left, where they stand and how to carry on, as for `run` and `decide` (tests/cli/test_interrupt.py)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..process_tools import wait_for_line
from .test_interrupt import CONFIG, SCRIPT, Shop, paused, recovered, shop

THEN_LOOK = """rules:
  - {user: '^then-look (?P<o>\\S+)$', call: refund, args: {order: "{o}"}}
  - {tool: refund, user: '^then-look (?P<o>\\S+)$', call: look, args: {order: "{o}"}}
"""
"""A refund that needs approval, then, whatever became of it, a `look` that waits for the test's go."""


def carrying_on(tmp_path: Path, *, ttl: bool = False) -> Shop:
    project = shop(tmp_path)
    (tmp_path / "script.yaml").write_text(SCRIPT.replace("rules:\n", THEN_LOOK, 1))
    if ttl:
        (tmp_path / "sayso.yaml").write_text(CONFIG.replace("interrupt: {", "interrupt: {ttl_seconds: 0.5, "))
    return project


def said(stopped: subprocess.CompletedProcess[str]) -> str:
    return " ".join(stopped.stderr.split())


def test_ctrl_c_during_resume_names_the_run_and_how_to_carry_it_on(tmp_path: Path) -> None:
    """`sayso resume` (its open refund counts as skipped) interrupted while the `look` after it works: exit 130, the
    run and thread named as still running, `recover` named; carried on, the look's result is read."""
    project = carrying_on(tmp_path)
    _, run_id, thread_id = paused(project, "then-look A-100")

    stopped = project.interrupted("resume", project.config, run_id)

    assert stopped.returncode == 130, stopped.stderr
    assert f"interrupted: run {run_id} on thread {thread_id}" in said(stopped), stopped.stderr
    assert "still running" in said(stopped) and f"recover {project.config}" in said(stopped), stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert recovered(project) == ["model read: order A-100 is there"]


def test_ctrl_c_during_expire_names_the_run_it_was_closing(tmp_path: Path) -> None:
    """`sayso expire --json` interrupted while the run it closes calls `look`: one JSON error naming that run and its
    thread, exit 130."""
    project = carrying_on(tmp_path, ttl=True)
    _, run_id, thread_id = paused(project, "then-look A-100")
    time.sleep(1)  # the request's half-second to live passes

    stopped = project.interrupted("expire", project.config, "--json")

    assert stopped.returncode == 130, stopped.stderr
    error = json.loads(stopped.stdout)["error"]
    assert error["type"] == "Interrupted"
    assert f"interrupted: run {run_id} on thread {thread_id} was stopped mid-step" in error["message"], error
    assert recovered(project) == ["model read: order A-100 is there"]


def left_running(project: Shop, message: str) -> tuple[str, str]:
    """(run, thread) of a run left running: its `decide approve` interrupted while the refund ran (which finished)."""
    request_id, run_id, thread_id = paused(project, message)
    assert project.interrupted("decide", project.config, request_id, "approve").returncode == 130
    for name in ("started", "go"):
        (project.folder / name).unlink()
    return run_id, thread_id


def test_ctrl_c_during_recover_names_the_run_it_left_and_the_ones_it_carried_on_before(tmp_path: Path) -> None:
    """Two runs left running; `sayso recover` carries the older on to its end, then is interrupted while the other's
    `look` works: it names that run as left still running, and the one it finished before it; a second `recover`
    finishes the other with each refund done once."""
    project = carrying_on(tmp_path)
    finished, _ = left_running(project, "refund B-1")
    run_id, thread_id = left_running(project, "then-look A-100")

    stopped = project.interrupted("recover", project.config)

    assert stopped.returncode == 130, stopped.stderr
    assert f"interrupted: run {run_id} on thread {thread_id}" in said(stopped), stopped.stderr
    assert "still running" in said(stopped) and f"recover {project.config}" in said(stopped), stopped.stderr
    assert f"before it, this command worked on 1 other run(s): {finished}" in said(stopped), stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert recovered(project) == ["model read: order A-100 is there"]
    assert sorted(project.done().split()) == ["A-100", "B-1"]


def chatted_then_interrupted(project: Shop, typed: str) -> subprocess.CompletedProcess[str]:
    """`sayso chat` given `typed` at its prompts, sent SIGINT while the tool it led to runs."""
    command = [sys.executable, "-m", "sayso", "chat", project.config]
    process = subprocess.Popen(
        command, env=project.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdin is not None
    process.stdin.write(typed)
    process.stdin.flush()
    wait_for_line(project.folder / "started", seconds=60)
    process.send_signal(signal.SIGINT)
    (project.folder / "go").touch()
    out, err = process.communicate(timeout=120)
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def test_ctrl_c_while_a_chat_message_works_names_its_run_and_thread(tmp_path: Path) -> None:
    """Ctrl-C in `sayso chat` while the agent works on a message (not at a prompt, where it leaves the chat) stops it
    as `sayso run` does: exit 130, the run and thread named as still running, `recover` carries the run on."""
    project = shop(tmp_path)

    stopped = chatted_then_interrupted(project, "look A-100\n")

    assert stopped.returncode == 130, stopped.stderr
    assert re.search(r"interrupted: run run_\S+ on thread thr_\S+ was stopped mid-step", said(stopped)), stopped.stderr
    assert f"recover {project.config}" in said(stopped) and "Traceback" not in stopped.stderr
    assert recovered(project) == ["model read: order A-100 is there"]


def test_ctrl_c_while_a_chat_decision_works_names_the_run_it_resumed(tmp_path: Path) -> None:
    """Ctrl-C in `sayso chat` while an approved refund runs: the refund finishes and is kept, the run it resumed is
    named, and `recover` reads the refund's result."""
    project = shop(tmp_path)

    stopped = chatted_then_interrupted(project, "refund A-100\na\n\n")

    assert stopped.returncode == 130, stopped.stderr
    assert re.search(r"interrupted: run run_\S+ on thread thr_\S+ was stopped mid-step", said(stopped)), stopped.stderr
    assert recovered(project) == ["model read: refunded A-100"]
    assert project.done() == "A-100\n"
