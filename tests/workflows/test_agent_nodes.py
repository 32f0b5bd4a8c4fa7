"""Agent nodes: run through the runtime's `AgentNodeRunner`, they pause the workflow with their own requests."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TypeVar

import pytest
from pydantic import BaseModel

from sayso import ApprovalRequest, ConfigError, Provide, RunConflict, Workflow
from sayso.workflows import (
    START,
    AgentFinished,
    AgentNode,
    AgentNodeCall,
    AgentOutcome,
    AgentPaused,
    MemoryWorkflowPersistence,
    WorkflowEngine,
    WorkflowFailed,
    WorkflowFinished,
    WorkflowOutcome,
    WorkflowPaused,
)


class Preferences(BaseModel):
    city: str
    likes: list[str] = []


class Activities(BaseModel):
    itinerary: list[dict[str, str]]


def preferences(node_input: str) -> Preferences:
    return Preferences(city=node_input, likes=["food"])


def count(node_input: Activities) -> int:
    return len(node_input.itinerary)


@dataclass
class FakeAgents:
    """A runner that pauses each agent run once (an approval) and then answers with a JSON itinerary."""

    pauses: bool = True
    fail_first: bool = False
    log: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    prompts: list[str] = field(default_factory=list[str])

    async def start(self, call: AgentNodeCall) -> AgentOutcome:
        self.log.append(("start", call.node))
        self.prompts.append(call.prompt)
        if self.fail_first:
            self.fail_first = False
            raise RuntimeError("the model provider is down")
        if self.pauses:
            handle = f"run_{call.node}_{call.visit}"
            return AgentPaused(handle=handle, requests=(self.approval(call, handle),))
        return self.answer(call)

    async def resume(self, call: AgentNodeCall, handle: str) -> AgentOutcome:
        self.log.append(("resume", handle))
        return self.answer(call)

    def answer(self, call: AgentNodeCall) -> AgentFinished:
        city = json.loads(call.prompt)["city"]
        return AgentFinished(output=json.dumps({"itinerary": [{"name": f"Walk in {city}"}, {"name": "Dinner"}]}))

    @staticmethod
    def approval(call: AgentNodeCall, handle: str) -> ApprovalRequest:
        return ApprovalRequest(
            request_id="req_1",
            run_id=handle,
            thread_id="thr_1",
            agent_path=f"{call.workflow}/{call.node}",
            tool_call_id="call_1",
            tool_name="book_table",
            created_at=1.0,
            hint="Book a table?",
        )


def planner_workflow() -> Workflow:
    planner = AgentNode("planner", output_type=Activities)
    return Workflow("trip", edges=[(START, preferences, planner, count)])


T = TypeVar("T")


def outcome_of(kind: type[T], outcome: WorkflowOutcome) -> T:
    assert isinstance(outcome, kind), outcome
    return outcome


async def test_an_agent_node_pauses_the_workflow_with_its_requests_labelled_with_the_node() -> None:
    """The agent's approval surfaces as the workflow's pause, at the agent node, under `workflow/node`."""
    agents = FakeAgents()
    wf = WorkflowEngine(planner_workflow(), persistence=MemoryWorkflowPersistence(), agents=agents)
    pause = outcome_of(WorkflowPaused, await wf.start("run_1", "Lisbon"))
    assert pause.node == "planner" and pause.input is None
    assert pause.agent is not None and pause.agent.handle == "run_planner_1"
    assert [r.agent_path for r in pause.agent.requests] == ["trip/planner"]
    assert pause.state.agent_handle == "run_planner_1"
    assert agents.prompts == ['{"city": "Lisbon", "likes": ["food"]}']


async def test_a_fresh_engine_carries_the_agent_run_on_by_its_handle() -> None:
    """Resuming calls the runner's `resume` with the stored handle; the agent's text answer is parsed into its type."""
    persistence = MemoryWorkflowPersistence()
    first = FakeAgents()
    await WorkflowEngine(planner_workflow(), persistence=persistence, agents=first).start("run_1", "Lisbon")
    second = FakeAgents()
    fresh = WorkflowEngine(planner_workflow(), persistence=persistence, agents=second)
    done = outcome_of(WorkflowFinished, await fresh.resume(await persistence.load("run_1")))
    assert done.output == 2
    assert second.log == [("resume", "run_planner_1")]
    assert done.state.finished[1].output == {"itinerary": [{"name": "Walk in Lisbon"}, {"name": "Dinner"}]}


async def test_an_agent_pause_takes_no_input_decision() -> None:
    """An agent node's requests are decided on the agent's run, never as workflow input."""
    wf = WorkflowEngine(planner_workflow(), persistence=MemoryWorkflowPersistence(), agents=FakeAgents())
    pause = outcome_of(WorkflowPaused, await wf.start("run_1", "Lisbon"))
    with pytest.raises(RunConflict, match="an agent node's requests"):
        await wf.resume(pause.state, Provide(value="yes"))


async def test_a_failing_agent_fails_the_node_and_a_retry_starts_it_again() -> None:
    """A runner that raises fails the run at the agent node; `resume` starts the agent afresh."""
    agents = FakeAgents(pauses=False, fail_first=True)
    wf = WorkflowEngine(planner_workflow(), persistence=MemoryWorkflowPersistence(), agents=agents)
    outcome = outcome_of(WorkflowFailed, await wf.start("run_1", "Lisbon"))
    assert outcome.error == "node 'planner' failed: RuntimeError: the model provider is down"
    assert outcome_of(WorkflowFinished, await wf.resume(outcome.state)).output == 2
    assert agents.log == [("start", "planner"), ("start", "planner")]


async def test_an_agent_answer_that_does_not_fit_its_output_type_fails_the_node() -> None:
    """Text that is not the declared output type fails the agent node, naming it."""

    class Chatty(FakeAgents):
        def answer(self, call: AgentNodeCall) -> AgentFinished:
            return AgentFinished(output="Sure! Here are some ideas.")

    wf = WorkflowEngine(planner_workflow(), persistence=MemoryWorkflowPersistence(), agents=Chatty(pauses=False))
    outcome = outcome_of(WorkflowFailed, await wf.start("run_1", "Lisbon"))
    assert outcome.node == "planner"
    assert "ValidationError" in outcome.error


def test_a_workflow_with_agent_nodes_needs_a_runner() -> None:
    """Building an engine for agent nodes without a runner is refused up front."""
    with pytest.raises(ConfigError, match="agent node\\(s\\) planner; the engine needs an AgentNodeRunner"):
        WorkflowEngine(planner_workflow(), persistence=MemoryWorkflowPersistence())
