"""Automatic recovery (docs/guides/operations.md#recovery): a run whose process died is carried on by the next runtime,
nobody resumes it by hand.

`sayso serve` is killed (SIGKILL) while an approved call runs; the restarted server finds the run
at start, records the cut-off call as `outcome unknown` (ledger and audit) instead of running it
again, lets the model read that, and the thread takes new messages. The same holds through the
Python API (`Sayso.recover`) and the CLI (`sayso recover`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import anyio
import httpx
import pytest

from sayso import Approve, Sayso
from sayso._core.audit_events import AUDIT_EVENT_ADAPTER
from sayso._store import RunStart, new_holder

from .conftest import LiveServer, MakeApp
from .models import answer, calls_then_reply
from .process_tools import wait_for_line, write_beside
from .test_durability import CRASH_CONFIG, SAYSO, sayso
from .tools import explode

UNKNOWN = (
    "model read: Outcome unknown: the process stopped after this call was approved and before its result was recorded"
)


@pytest.fixture
def crash_config(tmp_path: Path) -> Path:
    """A config whose approved call writes a marker line and then sleeps `SLOW_SECONDS`."""
    write_beside(tmp_path, "crash_tools")
    (tmp_path / "sayso.yaml").write_text(CRASH_CONFIG)
    return tmp_path / "sayso.yaml"


def _events(db: Path) -> list[dict[str, object]]:
    with sqlite3.connect(db) as conn:
        return [json.loads(body) for (body,) in conn.execute("SELECT body FROM audit ORDER BY seq")]


def test_a_server_killed_mid_call_carries_the_run_on_when_it_restarts(crash_config: Path) -> None:
    """After kill -9 of `sayso serve` mid-call, the restarted server completes the run by itself: the call is
    recorded as outcome unknown (never run twice), and the thread takes messages again."""
    marker = crash_config.parent / "marker"
    env = {**os.environ, "MARKER": str(marker), "SAYSO_STORE": "", "SLOW_SECONDS": "60"}
    served, process = LiveServer.process([str(crash_config)], env=env)
    try:
        with served.client() as client:
            paused = client.post("/v1/runs", json={"message": "delete a.txt"}).json()
        request_id = paused["requests"][0]["id"]

        def approve() -> None:
            try:
                httpx.post(f"{served.base_url}/v1/requests/{request_id}/decision", json={"kind": "approve"}, timeout=60)
            except httpx.TransportError:
                pass  # the server is killed under this request

        deciding = threading.Thread(target=approve, daemon=True)
        deciding.start()
        wait_for_line(marker)
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        deciding.join(10)
    finally:
        process.kill()

    restarted, second = LiveServer.process([str(crash_config)], env={**env, "SLOW_SECONDS": "0"})
    try:
        with restarted.client() as client:
            deadline = time.monotonic() + 30
            run = client.get(f"/v1/runs/{paused['run_id']}").json()
            while run["status"] == "running" and time.monotonic() < deadline:
                time.sleep(0.1)
                run = client.get(f"/v1/runs/{paused['run_id']}").json()
            assert (run["status"], run["output"][: len(UNKNOWN)]) == ("completed", UNKNOWN)
            follow_up = client.post("/v1/runs", json={"message": "delete b.txt", "thread_id": paused["thread_id"]})
            assert follow_up.status_code == 200 and follow_up.json()["status"] == "paused"
            assert client.get("/v1/audit/verify").json()["intact"] is True
    finally:
        restarted.stop()
        second.kill()
    assert marker.read_text() == "a.txt\n"
    unknown = [e for e in _events(crash_config.parent / "crash.db") if e["event"] == "outcome_unknown"]
    assert [(e["request_id"], e["tool_name"]) for e in unknown] == [(request_id, "slow_delete")]


def test_sayso_recover_carries_on_a_run_whose_process_died(crash_config: Path) -> None:
    """`sayso recover` finds a run whose deciding process was killed and completes it with the outcome unknown."""
    marker = crash_config.parent / "marker"
    env = {**os.environ, "MARKER": str(marker), "SAYSO_STORE": ""}
    config = str(crash_config)
    paused = json.loads(sayso("run", config, "delete a.txt", "--json", env=env).stdout)
    slow = subprocess.Popen(
        [*SAYSO, "decide", config, paused["requests"][0]["id"], "approve"],
        env={**env, "SLOW_SECONDS": "60"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_line(marker)
    slow.send_signal(signal.SIGKILL)
    slow.wait(10)
    recovered = sayso("recover", config, "--json", env=env)
    assert recovered.returncode == 0, recovered.stderr
    [run] = json.loads(recovered.stdout)["runs"]
    assert (run["run_id"], run["status"], run["output"][: len(UNKNOWN)]) == (paused["run_id"], "completed", UNKNOWN)
    assert json.loads(sayso("recover", config, "--json", env=env).stdout)["runs"] == []
    assert marker.read_text() == "a.txt\n"
    with sqlite3.connect(crash_config.parent / "crash.db") as conn:
        assert conn.execute("SELECT status FROM executions").fetchall() == [("unknown",)]


async def test_a_failed_segment_leaves_no_call_executing(make_app: MakeApp) -> None:
    """When the segment that runs an approved call fails, the call's ledger entry is resolved as unknown and
    audited, never left `executing`. (A tool's own error is read by the model; sayso's store failing is not.)"""
    agents = {"files": {"model": "m", "tools": [explode], "interrupt": {"tools": ["explode"]}}}
    async with make_app(agents, model=calls_then_reply(("explode", {}), reply="unread")) as app:
        paused = await app.run("go")
        done = await app.decide(paused.requests[0].request_id, Approve())
        assert done.run.status == "failed"
        assert await app.store.stuck_executions(run_id=paused.run_id) == []
        bodies = [r.body for r in await app.audit_log()]
    assert [b["event"] for b in bodies] == ["decision", "outcome_unknown"]
    assert [AUDIT_EVENT_ADAPTER.validate_python(b) for b in bodies] == bodies


async def test_recover_leaves_a_run_of_a_live_process_alone(make_app: MakeApp) -> None:
    """A run another live runtime is working on (lease held, process alive) is not taken over by `recover`."""
    release = anyio.Event()

    async def wait(name: str) -> str:
        """Wait until released."""
        await release.wait()
        return "done"

    agents = {"files": {"model": "m", "tools": [wait]}}
    model = calls_then_reply(("wait", {"name": "x"}), reply="waited")
    async with make_app(agents, model=model) as a, make_app(agents, model=model) as b:
        outcome: list[str] = []

        async def go() -> None:
            outcome.append((await a.run("go")).status)

        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            while not await a.store.lapsed_runs(now=0, host=socket.gethostname()):
                await anyio.sleep(0.01)
            assert await b.recover() == []
            release.set()
    assert outcome == ["completed"]


ABSENT_PID = 4_194_305
"""A pid no process has (Linux's largest is 2**22): its holder, taken for one of this PID namespace, is dead."""


async def _held_by(app: Sayso, holder: str, *, now: float) -> str:
    """A running run of `files` held by `holder` under a lease live until `now + 30`: its id."""
    start = RunStart(
        thread_id="thr_held",
        owner="local",
        agent="files",
        run_id="run_held",
        prompt="go",
        lease_holder=holder,
        lease_expires_at=now + 30,
        now=now,
    )
    await app.store.start_run(start, expect_active=None, durable=False)
    return start.run_id


@pytest.mark.parametrize(
    "holder",
    [
        f"{socket.gethostname()}:{ABSENT_PID}:feedface:4026531999",  # another PID namespace (docker --network host)
        f"{socket.gethostname()}:{ABSENT_PID}:feedface",  # an older sayso's name, saying no namespace
    ],
    ids=["other-pid-namespace", "no-namespace"],
)
async def test_a_run_held_from_another_pid_namespace_of_this_host_waits_for_its_lease(
    make_app: MakeApp, holder: str
) -> None:
    """Replicas sharing a hostname but not a PID namespace: a pid the holder's namespace has and this one lacks
    does not make it dead. Its run is carried on once its lease lapsed, never while it is live."""
    now = [1_000_000.0]
    agents = {"files": {"model": "m", "tools": []}}
    async with make_app(agents, model=answer("carried on"), clock=lambda: now[0]) as app:
        run_id = await _held_by(app, holder, now=now[0])
        assert await app.recover() == []
        assert (await app.run_record(run_id)).status == "running"
        now[0] += 31
        [carried] = await app.recover()
        assert (carried.run_id, carried.status, carried.output) == (run_id, "completed", "carried on")


async def test_a_run_held_by_a_gone_process_of_this_pid_namespace_is_carried_on_at_once(make_app: MakeApp) -> None:
    """A holder of this host and this PID namespace whose process is gone let go at once, before its lease lapses."""
    now = [1_000_000.0]
    host, _, rest = new_holder().split(":", 2)
    holder = f"{host}:{ABSENT_PID}:{rest}"  # this runtime's nonce and PID namespace, another (gone) pid
    agents = {"files": {"model": "m", "tools": []}}
    async with make_app(agents, model=answer("carried on"), clock=lambda: now[0]) as app:
        run_id = await _held_by(app, holder, now=now[0])
        [carried] = await app.recover()
        assert (carried.run_id, carried.status) == (run_id, "completed")
