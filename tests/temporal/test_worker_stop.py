"""`sayso worker` stops gracefully on SIGTERM (how Kubernetes, systemd and docker stop it) and Ctrl-C.

It takes no more tasks, lets the activities in flight finish, closes its runtime, says it stopped
and exits 0: an approved call running on it when it is told to stop finishes there, once; an async one still
running when its grace ends is "outcome unknown", as after kill -9, and the run goes on on another worker (a sync
one's thread cannot be stopped: the worker waits for it, and its result is kept).
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from sayso import Approve, Sayso

from .. import process_tools
from .conftest import SLOW_DELETE, Project

BODY = SLOW_DELETE.replace("TTL", "")
FILES = process_tools.files("tools")


async def stopped(process: subprocess.Popen[str], *, within: float) -> str:
    """Wait (`within` seconds at most) for `process` to exit; what it printed after its first line."""
    with anyio.fail_after(within):
        while process.poll() is None:
            await anyio.sleep(0.05)
    assert process.stdout is not None
    return process.stdout.read()


def calls(marker: Path) -> list[str]:
    return marker.read_text().split() if marker.exists() else []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_an_idle_worker_stops_on_a_signal_says_so_and_exits_0(
    signum: signal.Signals, tmp_path: Path, temporal: Project
) -> None:
    """SIGTERM (or Ctrl-C) to a worker with nothing to do: it stops within seconds, says so and exits 0."""
    worker = temporal.workers(temporal.config(tmp_path, BODY, process_tools.files("tools"))).start()
    worker.send_signal(signum)
    said = await stopped(worker, within=10)
    assert worker.returncode == 0
    assert said.splitlines()[-1:] == ["sayso worker: stopped"]


async def test_an_approved_call_running_when_its_worker_is_told_to_stop_finishes_there_once(
    tmp_path: Path, temporal: Project
) -> None:
    """SIGTERM while the approved call runs (2 s): the call finishes on that worker, which hands the run back (its
    lease let go of, so a worker on any machine may take it over without waiting for it to lapse) and exits 0; a
    worker started afterwards carries the run on at once, and the model reads the call's result, run once."""
    config = temporal.config(tmp_path, BODY, process_tools.files("tools"))
    workers = temporal.workers(config, SLOW_SECONDS="2")
    first = workers.start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("delete a.txt")
        assert paused.status == "paused"
        decided = []

        async def deciding() -> None:
            decided.append(await front.decide(paused.requests[0].request_id, Approve()))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(deciding)
            with anyio.fail_after(30):
                while calls(temporal.marker) != ["a.txt"]:
                    await anyio.sleep(0.05)
            first.send_signal(signal.SIGTERM)
            said = await stopped(first, within=15)
            assert first.returncode == 0, said
            assert said.splitlines()[-1:] == ["sayso worker: stopped"]
            handed = await front.run_record(paused.run_id)
            assert handed.status == "running"
            assert handed.lease_expires_at is not None and handed.lease_expires_at < time.time()
            workers.start()
            with anyio.fail_after(20):
                while not decided:
                    await anyio.sleep(0.05)
        [done] = decided
        assert (done.run.status, done.run.output) == ("completed", "model read: deleted a.txt")
        assert "outcome_unknown" not in [r.body["event"] for r in await front.audit_log()]
    assert calls(temporal.marker) == ["a.txt"]


async def test_a_second_signal_while_the_worker_finishes_its_work_stops_it_at_once(
    tmp_path: Path, temporal: Project
) -> None:
    """SIGTERM, then SIGTERM again while a long call still runs: the worker says so and ends by the signal at once."""
    config = temporal.config(tmp_path, BODY, process_tools.files("tools"))
    worker = temporal.workers(config, SLOW_SECONDS="60").start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("delete b.txt")
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(front.decide, paused.requests[0].request_id, Approve())
            with anyio.fail_after(30):
                while calls(temporal.marker) != ["b.txt"]:
                    await anyio.sleep(0.05)
            worker.send_signal(signal.SIGTERM)
            assert worker.stdout is not None
            assert "stopping" in worker.stdout.readline()
            worker.send_signal(signal.SIGTERM)
            said = await stopped(worker, within=3)
            assert worker.returncode == -signal.SIGTERM
            assert said.splitlines() == ["sayso worker: stopping at once"]
            tasks.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("message", "read"),
    [("delete-async c.txt", "model read: Outcome unknown"), ("delete c.txt", "model read: deleted c.txt")],
    ids=["async", "sync"],
)
async def test_an_approved_call_outlasting_its_stopping_workers_grace_is_outcome_unknown_and_the_run_goes_on(
    message: str, read: str, tmp_path: Path, temporal: Project
) -> None:
    """SIGTERM while the approved call runs longer than the worker's grace: an async call is cut off where it waits
    and, as after kill -9, is "outcome unknown" (never run twice), which the model reads on a worker started
    meanwhile; a sync call's thread cannot be stopped, so the stopping worker waits for it and the model reads
    what it returned. Either way the call ran once and the run completes."""
    body = BODY.replace("[tools:slow_delete]", "[tools:slow_delete, tools:slow_delete_async]")
    config = temporal.config(tmp_path, body.replace("[slow_delete]", "[slow_delete, slow_delete_async]"), FILES)
    workers = temporal.workers(config, SLOW_SECONDS="10")
    first = workers.start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run(message)
        decided = await workers.kill_mid_call(
            first,
            lambda: calls(temporal.marker) == ["c.txt"],
            lambda: front.decide(paused.requests[0].request_id, Approve()),
            signum=signal.SIGTERM,
        )
        output = decided.run.output
        assert decided.run.status == "completed", decided.run.error
        assert output is not None and output.startswith(read), output
        unknown = [r.body["event"] for r in await front.audit_log()].count("outcome_unknown")
        assert unknown == (1 if "unknown" in read else 0)
    assert calls(temporal.marker) == ["c.txt"]
