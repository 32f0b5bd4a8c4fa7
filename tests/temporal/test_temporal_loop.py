"""The agent loop on Temporal: it runs in the run's workflow, its model requests and tool calls activities.

The run's workflow history (`sayso-<agent>-<run id>`) is what the Temporal UI shows: a model
request is an activity retried without limit (it has no side effect); the approved call is an
activity with one attempt, never retried once started.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from sayso import Approve, Sayso

from .conftest import Project, Workers, workflows_on

TOOLS = '''
import os
import sayso

def delete(name: str) -> str:
    """Delete a file."""
    with open(os.environ["MARKER"], "a") as marker:
        marker.write(name + "\\n")
    return f"deleted {name}"


@sayso.tool(read_only=True)
def look(name: str) -> str:
    """Look at a file (changes nothing)."""
    return f"{name} is there"
'''

SCRIPT = """
name: files
rules:
  - {user: '^delete (?P<n>\\S+)$', call: look, args: {name: "{n}"}}
  - {tool: look, call: delete, args: {name: "a.txt"}}
  - {tool: delete, reply: "model read: {result}"}
"""

BODY = """
models:
  demo: {scripted: script.yaml}
agents:
  files:
    model: demo
    tools: [loop_tools:delete, loop_tools:look]
    interrupt: {tools: [delete]}
"""


@pytest.fixture
def config(tmp_path: Path, temporal: Project) -> Path:
    return temporal.config(tmp_path, BODY, {"loop_tools.py": TOOLS, "script.yaml": SCRIPT})


@pytest.fixture
def workers(config: Path, temporal: Project) -> Workers:
    return temporal.workers(config)


async def attempts(client: Client, workflow: str) -> list[tuple[str, int]]:
    """Each activity the workflow scheduled, in order: its type and its most attempts (0: no limit)."""
    found: list[tuple[str, int]] = []
    async for event in client.get_workflow_handle(workflow).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled = event.activity_task_scheduled_event_attributes
            found.append((scheduled.activity_type.name, scheduled.retry_policy.maximum_attempts))
    return found


async def test_model_requests_retry_and_the_approved_call_is_one_attempt(
    config: Path, workers: Workers, temporal: Project
) -> None:
    """Both segments' loops of an approve cycle run in the run's workflow; its activities say how often each may run."""
    workers.start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("delete a.txt")
        assert paused.status == "paused"
        [request] = paused.requests
        done = await front.decide(request.request_id, Approve())
        assert (done.run.status, done.run.output) == ("completed", "model read: deleted a.txt")
        transcript = await front.transcript(paused.thread_id)  # the store stays the system of record
        assert [e.decision["decision"] for e in transcript if e.decision is not None] == ["approve"]
    client = await Client.connect(temporal.address)
    assert await workflows_on(temporal.address, temporal.task_queue) == {f"sayso-files-{paused.run_id}": "COMPLETED"}
    found = await attempts(client, f"sayso-files-{paused.run_id}")
    models = [most for name, most in found if name == "agent__files__model_request"]
    assert len(models) == 3 and set(models) == {0}  # a model request is asked again until a worker answers
    # The first segment: `look` (read-only) may run again; `delete` is stopped by the gate, in one attempt.
    # The resumed segment: the approved `delete` is one attempt, never retried once started.
    calls = [most for name, most in found if name == "agent__files__dynamic_toolset__sayso__call_tool"]
    assert calls == [0, 1, 1]
    segments = [name for name, _ in found if name in ("sayso.segment", "sayso.advance")]
    assert segments == ["sayso.segment", "sayso.advance"]  # the runtime around each loop: one activity each
    assert temporal.marker.read_text().split() == ["a.txt"]


CUT_TOOLS = '''
import os, time
import sayso

def _slow(name: str) -> str:
    with open(os.environ["MARKER"], "a") as marker:
        marker.write(name + "\\n")
    time.sleep(float(os.environ.get("SLOW_SECONDS", "0")))
    return f"done {name}"


def send(name: str) -> str:
    """Send a message (not safe to send twice)."""
    return _slow(name)


@sayso.tool(idempotent=True)
def sync(name: str) -> str:
    """Sync a folder (safe to run again)."""
    return _slow(name)
'''

CUT_SCRIPT = """
name: cut
rules:
  - {user: '^send (?P<n>\\S+)$', call: send, args: {name: "{n}"}}
  - {user: '^sync (?P<n>\\S+)$', call: sync, args: {name: "{n}"}}
  - {tool: send, reply: "model read: {result}"}
  - {tool: sync, reply: "model read: {result}"}
"""

CUT_BODY = """
models:
  demo: {scripted: script.yaml}
agents:
  cut:
    model: demo
    tools: [cut_tools:send, cut_tools:sync]
"""


@pytest.mark.parametrize(
    ("tool", "output", "runs", "signum"),
    [
        pytest.param("send", "model read: Outcome unknown", 1, signal.SIGKILL, id="not-idempotent-is-unknown"),
        pytest.param("sync", "model read: done x", 2, signal.SIGKILL, id="idempotent-runs-again"),
        # A graceful stop whose grace ends first: the same (tests/temporal/test_worker_stop.py has the unknown case).
        pytest.param("sync", "model read: done x", 2, signal.SIGTERM, id="idempotent-runs-again-after-a-stop"),
    ],
)
async def test_a_call_nobody_approved_cut_off_with_its_worker_is_unknown_unless_its_tool_is_idempotent(
    tool: str,
    output: str,
    runs: int,
    signum: signal.Signals,
    tmp_path: Path,
    temporal: Project,
) -> None:
    """A plain call is one attempt too: cut off (kill -9, or a graceful stop whose grace ran out before the call
    ended), it is "outcome unknown" (audited), never sent twice; a call of a tool declared idempotent is tried again
    on the next worker."""
    config = temporal.config(tmp_path, CUT_BODY, {"cut_tools.py": CUT_TOOLS, "script.yaml": CUT_SCRIPT})
    marker = temporal.marker
    pool = temporal.workers(config, SLOW_SECONDS="10" if signum == signal.SIGTERM else "60")
    first = pool.start()
    async with Sayso.from_yaml(config) as front:
        done = await pool.kill_mid_call(first, marker.exists, lambda: front.run(f"{tool} x"), signum=signum)
        said = done.output
        assert done.status == "completed", done.error
        log = [r.body for r in await front.audit_log()]
    assert said is not None and said.startswith(output)
    assert [b["event"] for b in log].count("outcome_unknown") == (1 if runs == 1 else 0)
    assert marker.read_text().split() == ["x"] * runs


FLAKY_WORKER = """
\"\"\"`python -m flaky_worker worker CONFIG`: sayso's CLI, whose client loses the cluster for a while (as while it
restarts) as the resumed segment waits for its loop: the answer is lost once the loop ran, then two asks never reach
the cluster. Each fault is a line in the file `$FAULTS` names.\"\"\"

import os

from temporalio.client import Client, Interceptor, OutboundInterceptor, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError, RPCStatusCode

from sayso.cli import main


def fault(what):
    with open(os.environ["FAULTS"], "a") as faults:
        faults.write(what + "\\n")


class _Flaky(OutboundInterceptor):
    asked = 0

    async def start_workflow_update(self, input):
        if input.update != "loop" or input.update_id.endswith("-start"):
            return await super().start_workflow_update(input)
        _Flaky.asked += 1
        if _Flaky.asked == 1:
            await super().start_workflow_update(input)
            fault("lost")
            raise WorkflowUpdateRPCTimeoutOrCancelledError()
        if _Flaky.asked <= 3:
            fault("unavailable")
            raise RPCError("tcp connect error", RPCStatusCode.UNAVAILABLE, b"")
        return await super().start_workflow_update(input)


class _Unreachable(Interceptor):
    def intercept_client(self, next):
        return _Flaky(next)


_connect = Client.connect


async def _connecting(*args, **kwargs):
    return await _connect(*args, **kwargs, interceptors=[_Unreachable()])


Client.connect = _connecting
main()
"""


async def test_a_segment_whose_loop_the_cluster_cannot_answer_for_a_while_asks_again_and_the_run_goes_on(
    config: Path, workers: Workers
) -> None:
    """The cluster out of reach (restarting) while the resumed segment waits for its loop, which runs the approved
    call: the segment asks for the same loop again until the cluster answers, and the model reads the call's result
    (run once), where the run used to fail with "RPCError: tcp connect error"."""
    (config.parent / "flaky_worker.py").write_text(FLAKY_WORKER)
    faults = config.parent / "faults"
    workers.env["FAULTS"] = str(faults)
    workers.start(via="flaky_worker")
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("delete a.txt")
        done = await front.decide(paused.requests[0].request_id, Approve())
        assert (done.run.status, done.run.error) == ("completed", None)
        assert done.run.output == "model read: deleted a.txt"
        assert "outcome_unknown" not in [r.body["event"] for r in await front.audit_log()]
    assert faults.read_text().split() == ["lost", "unavailable", "unavailable"]
    assert Path(workers.env["MARKER"]).read_text().split() == ["a.txt"]
