"""Delegates on Temporal: the team example's two specialists run as child workflows of the coordinator's.

Each delegate's run is a child workflow `sayso-<agent>-<run id>` under its parent's; its pause is in
the parent's request list as without Temporal, and its decisions go through the top-level
workflow's `decide` Update (docs/guides/temporal.md#what-runs-where).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from sayso import Answer, Approve, InvalidDecision, Sayso

from .conftest import Project, workflows_on

TEAM = Path(__file__).resolve().parents[2] / "examples" / "team"


async def test_the_team_examples_delegates_pause_and_finish_the_report_on_temporal(
    tmp_path: Path, temporal: Project
) -> None:
    """Two delegates ask (a question, an approval) from child workflows; a wrong answer is refused; the worker
    is killed with the children paused; the answers finish the report on another worker."""
    config = temporal.example(TEAM, tmp_path / "team")
    pool = temporal.workers(config)
    first = pool.start()
    client = await Client.connect(temporal.address)
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("report")
        kinds = {r.agent_path: r for r in paused.requests}
        assert {p: r.kind for p, r in kinds.items()} == {
            "coordinator/analyst": "question",
            "coordinator/ops": "approval",
        }
        children = {r.agent_path: f"sayso-{r.agent_path.split('/')[1]}-{r.run_id}" for r in paused.requests}
        for child in children.values():
            described = await client.get_workflow_handle(child).describe()
            assert described.status == WorkflowExecutionStatus.RUNNING
            assert described.parent_id == f"sayso-coordinator-{paused.run_id}"
        pool.kill(first)  # the children's workflows (and their parent's) move to the next worker
        pool.start()
        with pytest.raises(InvalidDecision):
            await front.decide(kinds["coordinator/ops"].request_id, Answer(answers=(("Q2",),)))
        await front.decide(kinds["coordinator/analyst"].request_id, Answer(answers=(("Q2",),)))
        done = (await front.decide(kinds["coordinator/ops"].request_id, Approve())).run
        for workflow_id in (f"sayso-coordinator-{paused.run_id}", *children.values()):
            with anyio.fail_after(30):  # each workflow ends once its run has
                assert await client.get_workflow_handle(workflow_id).result() == "completed"
    assert done.status == "completed" and done.output is not None
    assert "Revenue in Q2 grew 5%." in done.output and "Archived the logs of 2026-10." in done.output
    assert await workflows_on(temporal.address, temporal.task_queue) == {
        f"sayso-coordinator-{paused.run_id}": "COMPLETED",
        **{child: "COMPLETED" for child in children.values()},
    }


SLOW_TOOLS = '''
import os, time

def slow_archive(month: str) -> str:
    """Archive a month's logs (slowly, when SLOW_SECONDS says so)."""
    with open(os.environ["MARKER"], "a") as marker:
        marker.write(month + "\\n")
    time.sleep(float(os.environ.get("SLOW_SECONDS", "0")))
    return f"archived {month}"
'''

SLOW_TEAM = """
models:
  lead: {scripted: lead.script.yaml}
  ops: {scripted: ops.script.yaml}
agents:
  lead: {model: lead}
  ops:
    model: ops
    internal: true
    tools: [slow_team_tools:slow_archive]
    interrupt: {tools: [slow_archive]}
orchestrations:
  team:
    mode: delegate
    entry_name: lead
    connections: [{agent: ops, description: Runs operations}]
entry: team
"""

LEAD = """
name: lead
rules:
  - {user: '^archive (?P<m>\\S+)$', call: ops, args: {task: "archive {m}"}}
  - {tool: ops, reply: "lead read: {result}"}
"""

OPS = """
name: ops
rules:
  - {user: '^archive (?P<m>\\S+)$', call: slow_archive, args: {month: "{m}"}}
  - {tool: slow_archive, reply: "{result}"}
"""


async def test_a_worker_killed_mid_call_in_a_delegates_child_workflow_finishes_on_another_worker(
    tmp_path: Path, temporal: Project
) -> None:
    """kill -9 while the delegate's approved call runs in its child workflow: another worker records it
    "outcome unknown" (never run twice), the delegate answers and its parent finishes."""
    files = {"slow_team_tools.py": SLOW_TOOLS, "lead.script.yaml": LEAD, "ops.script.yaml": OPS}
    config = temporal.config(tmp_path, SLOW_TEAM, files)
    marker = temporal.marker
    pool = temporal.workers(config, SLOW_SECONDS="60")
    first = pool.start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("archive 2026-10")
        [request] = paused.requests
        assert (request.kind, request.agent_path) == ("approval", "lead/ops")
        child = (
            await (await Client.connect(temporal.address)).get_workflow_handle(f"sayso-ops-{request.run_id}").describe()
        )
        assert child.parent_id == f"sayso-lead-{paused.run_id}"
        decided = await pool.kill_mid_call(first, marker.exists, lambda: front.decide(request.request_id, Approve()))
        output = decided.run.output
        log = await front.audit_log()
    assert output is not None and output.startswith("lead read: Outcome unknown")
    assert [r.body["event"] for r in log].count("outcome_unknown") == 1
    assert marker.read_text().split() == ["2026-10"]


DYING_WORKER = """
\"\"\"`python -m dying_worker worker CONFIG`: sayso's CLI, whose worker SIGKILLs itself the moment a delegate's run is
started in the store, before the parent's delegate call returns.\"\"\"

import os
import signal

from sayso._runtime import _tree
from sayso.cli import main

_start_child = _tree.start_child


async def _dying(k, parent, agent, *args, **kwargs):
    child = await _start_child(k, parent, agent, *args, **kwargs)
    if agent == "ops":
        os.kill(os.getpid(), signal.SIGKILL)
    return child


_tree.start_child = _dying
main()
"""


async def test_a_delegate_call_retried_after_its_worker_died_having_started_the_delegates_run_starts_it_once(
    tmp_path: Path, temporal: Project
) -> None:
    """kill -9 right after the delegate's run is written, before its parent's call returned: the call's retry on
    another worker finds that run and waits on it (no second run left stuck "running"); the approval finishes it."""
    files = {"slow_team_tools.py": SLOW_TOOLS, "lead.script.yaml": LEAD, "ops.script.yaml": OPS}
    files["dying_worker.py"] = DYING_WORKER
    config = temporal.config(tmp_path, SLOW_TEAM, files)
    pool = temporal.workers(config)
    async with Sayso.from_yaml(config) as front:
        paused = await pool.dies_at_its_point(lambda: front.run("archive 2026-11", agent="lead"))
        [request] = paused.requests
        assert (request.kind, request.agent_path) == ("approval", "lead/ops")
        done = (await front.decide(request.request_id, Approve())).run
    assert (done.status, done.output) == ("completed", "lead read: archived 2026-11")
    assert temporal.marker.read_text().split() == ["2026-11"]
    with sqlite3.connect(tmp_path / "sayso.db") as db:  # what an operator's query of the store shows
        delegate_runs = db.execute("SELECT status FROM runs WHERE agent = 'ops'").fetchall()
    assert delegate_runs == [("completed",)]


async def test_cancelling_a_paused_team_run_ends_its_delegates_child_workflows(
    tmp_path: Path, temporal: Project
) -> None:
    """A cancel closes the whole tree in the store; the parent's workflow tells its children, and all three end."""
    config = temporal.example(TEAM, tmp_path / "team")
    temporal.workers(config).start()
    client = await Client.connect(temporal.address)
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("report")
        children = [f"sayso-{r.agent_path.split('/')[1]}-{r.run_id}" for r in paused.requests]
        assert len(children) == 2
        assert (await front.cancel(paused.run_id)).status == "cancelled"
        for workflow_id in (f"sayso-coordinator-{paused.run_id}", *children):
            with anyio.fail_after(30):
                assert await client.get_workflow_handle(workflow_id).result() == "cancelled"
