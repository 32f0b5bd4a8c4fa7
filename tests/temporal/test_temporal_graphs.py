"""Workflow graphs (docs/guides/workflows.md) on Temporal: each run a workflow worked on by a worker, each agent
node's run a child workflow.

An agent node's run is a child workflow `sayso-<agent>-<run id>` of its graph's, as a delegate's is;
its requests are decided through the graph's workflow's `decide` Update
(docs/guides/temporal.md#what-runs-where).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel
from temporalio.client import Client, WorkflowExecutionStatus

from sayso import ApprovalRequest, Approve, Config, ConfigError, InputRequest, InvalidDecision, Provide, Sayso
from sayso.workflows import START, Workflow

from .. import process_tools
from .conftest import Project, workflows_on

CONCIERGE = Path(__file__).resolve().parents[2] / "examples" / "concierge"


async def test_the_concierge_graph_pauses_refuses_and_finishes_on_temporal(tmp_path: Path, temporal: Project) -> None:
    """A graph's form refuses a wrong answer (the pause stays), then the loop runs to the plan, all on a worker."""
    config = temporal.example(CONCIERGE, tmp_path / "concierge")
    temporal.workers(config).start()
    async with Sayso.from_yaml(config) as front:
        ask = await front.run("Plan my day")
        [form] = ask.requests
        assert isinstance(form, InputRequest) and form.node == "ask_preferences"
        with pytest.raises(InvalidDecision, match="city: field required"):
            await front.decide(form.request_id, Provide(value={"hobby": "fado"}))
        review = (await front.decide(form.request_id, Provide(value={"city": "Lisbon", "hobby": "fado"}))).run
        [feedback] = review.requests
        assert isinstance(feedback, InputRequest) and feedback.node == "get_user_feedback"
        done = (await front.decide(feedback.request_id, Provide(value={"user_response": "perfect", "done": True}))).run
    assert done.status == "completed"
    assert done.output is not None and done.output.startswith("Your day in Lisbon")
    found = await workflows_on(temporal.address, temporal.task_queue)
    assert found.pop(f"sayso-concierge-{ask.run_id}") == "COMPLETED"
    [(planner, status)] = found.items()  # the one pass of the agent node `propose`: a child workflow
    assert planner.startswith("sayso-planner-") and status == "COMPLETED"


BODY = """
models:
  demo: {scripted: script.yaml}
agents:
  clerk:
    model: demo
    tools: [graph_tools:slow_delete]
    interrupt: {tools: [slow_delete]}
workflows:
  chores:
    nodes:
      tidy: {agent: clerk}
    edges:
      - [START, tidy]
"""


@pytest.fixture
def chores(tmp_path: Path, temporal: Project) -> Path:
    """A graph whose one node is an agent deleting files after approval (tests/process_tools.py's tool)."""
    return temporal.config(tmp_path, BODY, process_tools.files("graph_tools"))


async def test_an_agent_nodes_run_is_a_child_workflow_decided_through_the_graphs(
    chores: Path, temporal: Project
) -> None:
    """The node's agent asks for approval from its own child workflow, under the graph's; the worker is killed
    while it waits; the approval, given to the graph's run, finishes both on another worker."""
    pool = temporal.workers(chores)
    first = pool.start()
    client = await Client.connect(temporal.address)
    async with Sayso.from_yaml(chores) as front:
        paused = await front.run("delete a.txt", agent="chores")
        [request] = paused.requests
        assert isinstance(request, ApprovalRequest) and request.agent_path == "chores/tidy"
        graph, node = f"sayso-chores-{paused.run_id}", f"sayso-clerk-{request.run_id}"
        described = await client.get_workflow_handle(node).describe()
        assert (described.status, described.parent_id) == (WorkflowExecutionStatus.RUNNING, graph)
        pool.kill(first)
        pool.start()
        done = (await front.decide(request.request_id, Approve())).run
        for workflow_id in (graph, node):
            with anyio.fail_after(30):  # each workflow ends once its run has
                assert await client.get_workflow_handle(workflow_id).result() == "completed"
    assert (done.status, done.output) == ("completed", "model read: deleted a.txt")
    assert temporal.marker.read_text().split() == ["a.txt"]
    assert await workflows_on(temporal.address, temporal.task_queue) == {graph: "COMPLETED", node: "COMPLETED"}


async def test_a_worker_killed_mid_call_in_an_agent_nodes_child_workflow_leaves_it_outcome_unknown_once(
    chores: Path, temporal: Project
) -> None:
    """kill -9 while the node's approved call runs: another worker records it "outcome unknown" (never run twice),
    the node's agent answers, and the graph finishes with it."""
    marker = temporal.marker
    pool = temporal.workers(chores, SLOW_SECONDS="60")
    first = pool.start()
    async with Sayso.from_yaml(chores) as front:
        paused = await front.run("delete b.txt", agent="chores")
        [request] = paused.requests
        decided = await pool.kill_mid_call(first, marker.exists, lambda: front.decide(request.request_id, Approve()))
        output = decided.run.output
        log = await front.audit_log()
    assert output is not None and output.startswith("model read: Outcome unknown"), output
    assert [r.body["event"] for r in log].count("outcome_unknown") == 1
    assert marker.read_text().split() == ["b.txt"]


def test_a_pydantic_ai_agent_given_to_a_graph_node_is_refused_on_temporal_before_anything_runs(tmp_path: Path) -> None:
    """Workers build each agent's durable loop from `agents:`; an `Agent` object handed to a node is refused by the
    front when it is made (naming the node), not left to hang on workers that cannot run it."""
    graph = Workflow("tidy_up", edges=[(START, Agent(TestModel(), name="sweeper"))])
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "agents": {"clerk": {"model": "test"}},
            "engine": {"temporal": {"address": "127.0.0.1:1", "task_queue": "never-polled"}},
            "workflows": {"tidy_up": graph},
        }
    )
    with pytest.raises(ConfigError, match="workflow 'tidy_up': node 'sweeper' runs a pydantic-ai Agent object"):
        Sayso(config)


DYING_WORKER = """
\"\"\"`python -m dying_worker worker CONFIG`: sayso's CLI, whose worker SIGKILLs itself just before it writes a graph's
pause on an agent node's run, once that run is started in the store.\"\"\"

import os
import signal

from sayso._core.requests import DelegateRequest
from sayso._store._verbs._runs import RunVerbs
from sayso.cli import main

_save_pause = RunVerbs.save_pause


async def _dying(self, run, **kwargs):
    if run.parent_run_id is None and any(isinstance(r, DelegateRequest) for r in kwargs["requests"]):
        os.kill(os.getpid(), signal.SIGKILL)
    return await _save_pause(self, run, **kwargs)


RunVerbs.save_pause = _dying
main()
"""


async def test_a_graph_segment_killed_between_starting_its_agent_nodes_run_and_its_pause_starts_that_run_once(
    tmp_path: Path, temporal: Project
) -> None:
    """kill -9 after the node's run is written and before the graph's pause is: the segment's retry on another worker
    carries that run on (it does not start the agent again); the approval runs the node's call once."""
    files = {**process_tools.files("graph_tools"), "dying_worker.py": DYING_WORKER}
    config = temporal.config(tmp_path, BODY, files)
    pool = temporal.workers(config)
    async with Sayso.from_yaml(config) as front:
        paused = await pool.dies_at_its_point(lambda: front.run("delete c.txt", agent="chores"))
        [request] = paused.requests
        assert isinstance(request, ApprovalRequest) and request.agent_path == "chores/tidy"
        done = (await front.decide(request.request_id, Approve())).run
    assert (done.status, done.output) == ("completed", "model read: deleted c.txt")
    assert temporal.marker.read_text().split() == ["c.txt"]
    with sqlite3.connect(tmp_path / "sayso.db") as db:  # what an operator's query of the store shows
        node_runs = db.execute("SELECT status FROM runs WHERE agent = 'clerk'").fetchall()
    assert node_runs == [("completed",)]
