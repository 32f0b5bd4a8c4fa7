"""Runs on Temporal (issue 26): pauses outlive workers, approved calls run at most once, expiry is a workflow timer.

Every test runs against the session's real dev server with real `sayso worker` processes; this
process is the front (a `Sayso` whose config says `engine: temporal`), as `sayso serve` would be.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus

from sayso import Approve, InvalidDecision, Sayso

from .. import process_tools
from .conftest import SLOW_DELETE, Project, Workers, workflows_on

FILES = process_tools.files("tools")
"""The agent's tool (tests/process_tools.py, as the module `tools`) and its script, beside the config."""

BODY = SLOW_DELETE


@pytest.fixture
def files(tmp_path: Path, temporal: Project) -> Path:
    """A Temporal-backed config whose agent deletes files after approval (its tool writes the marker)."""
    return temporal.config(tmp_path, BODY.replace("TTL", ""), FILES)


@pytest.fixture
def workers(files: Path, temporal: Project) -> Workers:
    return temporal.workers(files)


def calls(tmp_path: Path) -> list[str]:
    marker = tmp_path / "marker"
    return marker.read_text().split() if marker.exists() else []


async def test_a_pause_outlives_its_worker_and_another_worker_finishes_the_run(
    files: Path, workers: Workers, temporal: Project, tmp_path: Path
) -> None:
    """Pause on one worker, kill -9 it, decide: a second worker carries the run on; its workflow bears its name."""
    first = workers.start()
    async with Sayso.from_yaml(files) as front:
        paused = await front.run("delete a.txt")
        assert paused.status == "paused"
        [request] = paused.requests
        handle = (await Client.connect(temporal.address)).get_workflow_handle(f"sayso-files-{paused.run_id}")
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        workers.kill(first)
        workers.start()
        # A wrong answer is refused by the workflow's Update validator: the pause stays open.
        with pytest.raises(InvalidDecision, match="not offered"):
            await front.decide(request.request_id, Approve(scope="always"))
        assert (await front.result(paused.run_id)).status == "paused"
        done = await front.decide(request.request_id, Approve())
        assert (done.run.status, done.run.output) == ("completed", "model read: deleted a.txt")
        assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
        transcript = await front.transcript(paused.thread_id)
        assert [e.decision["decision"] for e in transcript if e.decision is not None] == ["approve"]
    assert calls(tmp_path) == ["a.txt"]


async def test_a_worker_killed_mid_call_leaves_outcome_unknown_and_never_runs_it_twice(
    files: Path, workers: Workers, temporal: Project, tmp_path: Path
) -> None:
    """kill -9 while the approved call runs: its one-attempt activity fails with its worker, the run's workflow
    records "outcome unknown" (`sayso.unknown`) on the next worker instead of calling again; the model reads that."""
    workers.env["SLOW_SECONDS"] = "60"
    first = workers.start()
    async with Sayso.from_yaml(files) as front:
        paused = await front.run("delete b.txt")
        decided = await workers.kill_mid_call(
            first, lambda: calls(tmp_path) == ["b.txt"], lambda: front.decide(paused.requests[0].request_id, Approve())
        )
        output = decided.run.output
        assert output is not None and output.startswith("model read: Outcome unknown")
        log = await front.audit_log()
        assert [r.body["event"] for r in log].count("outcome_unknown") == 1
    assert calls(tmp_path) == ["b.txt"]
    client = await Client.connect(temporal.address)
    assert await workflows_on(temporal.address, temporal.task_queue) == {f"sayso-files-{paused.run_id}": "COMPLETED"}
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        async for e in client.get_workflow_handle(f"sayso-files-{paused.run_id}").fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    # The first segment's call (stopped by the gate), the approved call cut off, then "outcome unknown".
    assert [n for n in scheduled if n.endswith("__call_tool") or n == "sayso.unknown"] == [
        "agent__files__dynamic_toolset__sayso__call_tool",
        "agent__files__dynamic_toolset__sayso__call_tool",
        "sayso.unknown",
    ]


async def test_expiry_fires_as_the_workflows_timer_with_no_front_sweeping(tmp_path: Path, temporal: Project) -> None:
    """A request with a TTL expires on its own: the run's workflow timer fires on a worker; no `sayso serve` runs."""
    body = BODY.replace("TTL", ", ttl_seconds: 1")
    config = temporal.config(tmp_path, body, FILES)
    temporal.workers(config).start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("delete c.txt")
        assert paused.status == "paused" and paused.requests[0].expires_at is not None
        with anyio.fail_after(30):
            while (now := await front.result(paused.run_id)).status in ("paused", "running"):
                await anyio.sleep(0.1)
        assert now.status == "completed"
        [state] = [await front.request(paused.requests[0].request_id)]
        assert state is not None and state.decision is not None and state.decision.by == "expiry"
    assert calls(tmp_path) == []


async def test_a_superseding_message_and_a_cancel_end_the_paused_runs_workflows(
    files: Path, workers: Workers, temporal: Project, tmp_path: Path
) -> None:
    """A new message on a paused thread closes the old run's pause (its workflow ends), a cancel ends the new one's,
    and a forced resume skips a third run's open request: each workflow ends with its run's status, and each request
    closed so is a skip by who closed it (the worker's resume too), never sayso's."""
    workers.start()
    async with Sayso.from_yaml(files) as front:
        first = await front.run("delete a.txt")
        second = await front.run("delete b.txt", thread_id=first.thread_id)
        assert second.status == "paused" and second.run_id != first.run_id
        cancelled = await front.cancel(second.run_id)
        assert cancelled.status == "cancelled"
        third = await front.run("delete c.txt")
        forced = await front.resume(third.run_id, force=True)  # the open request counts as skipped
        assert forced.status == "completed" and forced.output is not None and "Skipped" in forced.output
        client = await Client.connect(temporal.address)
        for run_id in (first.run_id, second.run_id, third.run_id):
            handle = client.get_workflow_handle(f"sayso-files-{run_id}")
            with anyio.fail_after(30):
                ended = await handle.result()
            assert ended == (await front.result(run_id)).status and ended != "paused"
        for run in (first, second, third):
            state = await front.request(run.requests[0].request_id)
            assert state.decision is not None
            assert (state.decision.by, state.decision.principal, state.decision.via) == ("person", "local", "python")
    assert calls(tmp_path) == []


def test_the_cli_runs_and_decides_against_a_temporal_config(
    files: Path, workers: Workers, workers_env: dict[str, str], tmp_path: Path
) -> None:
    """`sayso run` and `sayso decide` are fronts too: a refused answer exits 4, the approval finishes the run."""
    workers.start()

    def sayso(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "sayso", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, env=workers_env, cwd=tmp_path)

    paused = json.loads(sayso("run", str(files), "delete d.txt", "--json").stdout)
    assert paused["status"] == "paused"
    request_id = paused["requests"][0]["id"]
    refused = sayso("decide", str(files), request_id, "approve", "--scope", "always", "--json")
    assert refused.returncode == 4 and "not offered" in refused.stdout
    done = sayso("decide", str(files), request_id, "approve", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == "model read: deleted d.txt"
    assert calls(tmp_path) == ["d.txt"]
