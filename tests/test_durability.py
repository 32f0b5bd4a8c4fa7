"""Durability (docs/concepts/durability.md): pauses outlive the process, a pause is consumed once, approved calls run
at most once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)

from sayso import Approve, Sayso

from .conftest import EXAMPLE, MakeApp, resume_at_once
from .models import commands
from .process_tools import write_beside

SAYSO = [sys.executable, "-m", "sayso"]


def sayso(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SAYSO, *args], capture_output=True, text=True, timeout=timeout, env=env)


def test_a_pause_is_resumed_by_another_process(tmp_path: Path) -> None:
    """One process pauses and exits; a second decides from the store alone and the agent carries on."""
    first = sayso("run", str(EXAMPLE), "delete notes", "--json")
    assert first.returncode == 0, first.stderr
    paused = json.loads(first.stdout)
    assert paused["status"] == "paused"
    [request] = paused["requests"]
    assert (request["kind"], request["tool_name"], request["args"]) == (
        "approval",
        "delete_file",
        {"name": "notes.txt"},
    )
    assert (tmp_path / "sandbox" / "notes.txt").exists()

    second = sayso("decide", str(EXAMPLE), request["id"], "approve", "--json")
    assert second.returncode == 0, second.stderr
    done = json.loads(second.stdout)
    assert (done["status"], done["output"], done["run_id"]) == ("completed", "Deleted notes.txt.", paused["run_id"])
    assert not (tmp_path / "sandbox" / "notes.txt").exists()


async def test_two_concurrent_resumes_of_one_pause_run_it_once(make_app: MakeApp) -> None:
    """Two runtimes (separate connections) resume the same pause at once: one runs it, the other is refused."""
    ran: list[str] = []
    refused_one = anyio.Event()

    async def delete_file(name: str) -> str:
        ran.append(name)
        with anyio.fail_after(10):
            await refused_one.wait()  # the call is still running when the other resume is turned away
        return f"deleted {name}"

    agents = {"files": {"model": "m", "tools": [delete_file], "interrupt": {"tools": ["delete_file"]}}}
    model = commands(delete="delete_file")
    async with make_app(agents, model=model) as a, make_app(agents, model=model) as b:
        paused = await a.run("delete x")
        await a.decide(paused.requests[0].request_id, Approve(), resume=False)
        outcomes = await resume_at_once([a, b], paused.run_id, on_refused=refused_one.set)
    completed = [o for o in outcomes if not isinstance(o, Exception)]
    refused = [o for o in outcomes if isinstance(o, Exception)]
    assert len(completed) == 1 and completed[0].output == "deleted x"
    assert len(refused) == 1
    assert "already resumed" in str(refused[0]) or "another live process" in str(refused[0])
    assert ran == ["x"]


CRASH_CONFIG = """
store: sqlite:///crash.db
models:
  demo: {scripted: script.yaml}
agents:
  files:
    model: demo
    tools: [crash_tools:slow_delete]
    interrupt: {tools: [slow_delete]}
"""


def test_a_crash_while_an_approved_call_runs_never_runs_it_twice(tmp_path: Path) -> None:
    """Killed mid-call, the call is recorded with an unknown outcome; after restart the model reads that."""
    write_beside(tmp_path, "crash_tools")
    (tmp_path / "sayso.yaml").write_text(CRASH_CONFIG)
    marker = tmp_path / "marker"
    env = {**os.environ, "MARKER": str(marker), "SAYSO_STORE": ""}
    config = str(tmp_path / "sayso.yaml")

    paused = json.loads(sayso("run", config, "delete a.txt", "--json", env=env).stdout)
    request_id = paused["requests"][0]["id"]
    slow = subprocess.Popen(
        [*SAYSO, "decide", config, request_id, "approve"],
        env={**env, "SLOW_SECONDS": "60"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the approved call never started"
    slow.send_signal(signal.SIGKILL)
    slow.wait(10)

    after = sayso("resume", config, paused["run_id"], "--json", env=env)
    assert after.returncode == 0, after.stderr
    result = json.loads(after.stdout)
    assert result["status"] == "completed"
    assert result["output"].startswith(
        "model read: Outcome unknown: the process stopped after this call was approved and before its result was "
        "recorded"
    )
    assert marker.read_text() == "a.txt\n"


def _seed(db: Path, thread_id: str, pairs: int) -> None:
    """Put `pairs` earlier user/assistant exchanges on a thread, as an old conversation would have."""
    history: list[ModelMessage] = []
    for i in range(pairs):
        history.append(ModelRequest(parts=[UserPromptPart(content=f"earlier question {i} " * 5)]))
        history.append(ModelResponse(parts=[TextPart(content=f"earlier answer {i} " * 15)]))
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO messages (thread_id, seq, run_id, count, body) VALUES (?, 0, 'seed', ?, ?)",
            (thread_id, len(history), ModelMessagesTypeAdapter.dump_json(history)),
        )


def _empty_wal(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


async def bytes_per_pause(tmp_path: Path, prior_messages: int) -> int:
    """Bytes SQLite appends to its write-ahead log while one run pauses on a thread of that length."""
    db = tmp_path / f"bytes-{prior_messages}.db"
    os.environ["SAYSO_STORE"] = f"sqlite:///{db}"
    async with Sayso.from_yaml(EXAMPLE) as app:
        first = await app.run("list")
        _seed(db, first.thread_id, prior_messages // 2)
        assert len(await app.store.load_messages(first.thread_id)) == prior_messages + 4
        _empty_wal(db)
        paused = await app.run("delete notes", thread_id=first.thread_id)
        assert paused.status == "paused"
        return Path(f"{db}-wal").stat().st_size


async def test_bytes_written_per_pause_do_not_grow_with_the_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """History is append-only: a pause on a 500-message thread writes no more than on a 10-message one."""
    short = await bytes_per_pause(tmp_path, 10)
    long = await bytes_per_pause(tmp_path, 500)
    with capsys.disabled():
        print(f"\nbytes written per pause: {short} at 10 prior messages, {long} at 500")
    assert 0 < long <= short + 4096, (short, long)
