"""The runtime's workflows: a `WorkflowEngine` each, over the store and over the runtime's agents.

`Workflows` is both what the engines persist through (`WorkflowPersistence`: a finished node's
progress written behind the next node, a pause or an end in one durable commit) and what runs
their agent nodes (`AgentNodeRunner`: a run below the workflow's per node, run and carried on by
the cycle through its `Runs` port, as delegates are). The `Runner` of a workflow's run is
`_workflows.WorkflowRunner`, with what is written when.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
from anyio.abc import TaskGroup
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import infer_model

from .._config.file import Config
from .._config.preview import config_groups
from .._core.conditions import call_variables
from .._core.decisions import Expired, Provide, Skip
from .._core.policy import InterruptPolicy, judge_call
from .._core.requests import DelegateRequest, InputRequest, Request
from .._engine.agents import BuiltAgent
from .._engine.gate import Gate
from .._engine.imports import import_spec
from .._engine.notify import DecisionNotifier
from .._store import RunRecord
from ..exceptions import ConfigError, RunNotFound
from ..workflows import (
    AgentFinished,
    AgentNodeCall,
    AgentOutcome,
    AgentPaused,
    NodeFailed,
    Workflow,
    WorkflowConfig,
    WorkflowEngine,
    WorkflowState,
    build_workflow,
)
from . import _tree
from ._kernel import Kernel, derived_id, new_id
from ._results import RunResult
from ._runner import CallOptions, Runs

InputDecision = Provide | Skip | Expired
"""What a node's question is closed with: an answer, a skip, or its expiry."""


class AgentRunFailed(NodeFailed):
    """An agent node's run failed or was cancelled; the node fails with it, and a retry starts the agent again."""

    def __init__(self, run_id: str, problem: str) -> None:
        self.run_id = run_id
        self.problem = problem
        super().__init__(f"its agent's run {run_id!r} {problem}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return self.__class__, (self.run_id, self.problem)


def build_workflows(config: Config) -> dict[str, Workflow]:
    """Every workflow of `config`, built: import specs resolved and graphs checked.

    Raises:
        ConfigError: a workflow's node cannot be imported, or its graph is wrong.
    """
    return {
        name: spec
        if isinstance(spec, Workflow)
        else build_workflow(name, spec, import_spec=import_spec, base_dir=config.base_dir)
        for name, spec in config.workflows.items()
    }


@dataclass(kw_only=True)
class Flight:
    """A workflow run this runtime is stepping right now: what the store writes need to know about it."""

    run: RunRecord
    tasks: TaskGroup
    """Where the run's progress is written behind the nodes that follow."""
    options: CallOptions
    """The options of the call stepping the run, for its agent nodes' runs."""
    saved_nodes: int
    """How many finished nodes the store holds (or is about to); a running state with no more is not written."""
    prompt_written: bool = False
    """Whether the run's prompt is in its thread's history yet (it goes with the run's first write)."""
    answers: list[ModelMessage] = field(default_factory=list[ModelMessage])
    """The answer this step resumed with, for the thread's history: it goes with the step's first write."""
    progress: WorkflowState | None = None
    """A running state waiting to be written; the run's next write takes it over."""
    writing: bool = False
    """Whether a writer of `progress` has been started and has not finished."""
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    """One write of the run at a time, in the order the engine asked for them."""
    requests: tuple[Request, ...] = field(default_factory=tuple[Request, ...])
    """The requests of the pause this step ended on, as a person answers them."""


class Workflows:
    """The runtime's workflows: one `WorkflowEngine` each, over the store and the runtime's agents.

    It is both the engines' `WorkflowPersistence` and their `AgentNodeRunner`; `flights` holds
    the runs being stepped right now, so their writes go under the right run and lease.
    """

    def __init__(self, k: Kernel, workflows: Mapping[str, Workflow], runs: Runs) -> None:
        self._k = k
        self._runs = runs
        self.flights: dict[str, Flight] = {}
        self.engines = {  # the nodes' steps, recorded with their runs
            name: WorkflowEngine(w, persistence=self, agents=self, journal=k.journal) for name, w in workflows.items()
        }
        for workflow in workflows.values():
            for name in workflow.agent_nodes:
                node = workflow.nodes[name].agent
                assert node is not None
                if not isinstance(node.agent, str):
                    k.agents[_plain_agent_name(workflow.name, name)] = _plain_agent(workflow.name, name, node.agent)

    # WorkflowPersistence

    async def save(self, state: WorkflowState) -> None:
        """Write `state` where the store needs it: with the run's progress, its pause, or its end.

        A finished node's progress is written behind the node that follows, as soon as the
        event loop is free (LangGraph's "async" durability): the next node does not wait for
        the disk, and when the run stops before that write has started (the next node asked a
        question, say), the stop's own write carries the progress instead of a second one. A
        stop is written before `run`/`decide` return it, after any progress write under way.
        """
        flight = self.flights[state.run_id]
        if state.status == "running":
            if len(state.finished) == flight.saved_nodes:
                return  # the store can rebuild it: a fresh start, or an answer that is in the pause's decision
            flight.saved_nodes = len(state.finished)
            flight.progress = state
            if not flight.writing:
                flight.writing = True
                flight.tasks.start_soon(self._write_progress, flight)
            return
        flight.progress = None  # this write carries everything the run has done
        async with flight.lock:
            await self._write_stop(flight, state)
        flight.saved_nodes = len(state.finished)

    async def _write_progress(self, flight: Flight) -> None:
        """Write the latest progress of a run, unless a stop has taken it over meanwhile.

        Shielded: a run cancelled while its next node runs (a client gone, a server stopping)
        still keeps what its finished nodes did.
        """
        try:
            with anyio.CancelScope(shield=True):
                async with flight.lock:
                    while flight.progress is not None:
                        state, flight.progress = flight.progress, None
                        k = self._k
                        await k.store.save_workflow_state(
                            flight.run,
                            holder=k.holder,
                            state=state.to_json(),
                            now=k.clock(),
                            new_messages=_prompt(flight),
                        )
                        flight.prompt_written = True
        finally:
            flight.writing = False

    async def _write_stop(self, flight: Flight, state: WorkflowState) -> None:
        """Write a pause (with its request) or an end, with the state, in one commit."""
        k = self._k
        run = flight.run
        now = k.clock()
        messages = _prompt(flight)
        if state.status == "paused":
            request = self._request(state, run, request_id=new_id("req"), now=now)
            await k.store.save_pause(
                run,
                holder=k.holder,
                pause_id=new_id("pau"),
                new_messages=messages,
                requests=[request],
                now=now,
                workflow_state=state.to_json(),
            )
            k.events.opened([request])
            flight.requests = (request,)
        else:
            output = output_text(state.output) if state.status == "completed" else None
            if output:
                messages.append(ModelResponse(parts=[TextPart(content=output)]))
            await k.store.finish_run(
                run,
                holder=k.holder,
                new_messages=messages,
                status=state.status,
                output=output,
                error=state.error,
                now=now,
                workflow_state=state.to_json(),
            )
        flight.prompt_written = True

    def _judged(self, workflow: str, request: InputRequest, now: float) -> InputRequest:
        """The input as its workflow's rule has it (docs/guides/routing.md#routed-workflow-inputs).

        The rule is judged by the policy's own function over `args.node` and `args.payload`: when it applies, the
        input is routed to its approvers, says why it asked, escalates and times out as the rule says; when its
        `when` does not hold, the run's owner answers it as without a rule.
        """
        spec = self._k.config.workflows.get(workflow)
        rule = spec.input_rule(workflow, self._k.config.groups) if isinstance(spec, WorkflowConfig) else None
        if rule is None:
            return request
        policy = InterruptPolicy(tools=(rule,), ttl_seconds=rule.ttl_seconds, groups=config_groups(self._k.config))
        variables = call_variables(
            {"node": request.node, "payload": request.payload},
            principal=request.principal,
            groups=policy.groups_of(request.principal),
            thread_id=request.chat_thread_id or request.thread_id,
            agent=request.agent_path,
        )
        verdict = judge_call(policy, request.node, variables, declared=False, read_only=False)
        terms = verdict.terms
        if terms is None:
            return request
        return replace(
            request,
            routing=rule.routing,
            asked_because=terms.asked_because if rule.when is not None or rule.reason is not None else None,
            rule=verdict.rule,
            escalation=terms.escalate,
            on_timeout=terms.on_timeout,
            expires_at=now + terms.ttl_seconds if terms.ttl_seconds is not None else None,
        )

    def _request(self, state: WorkflowState, run: RunRecord, *, request_id: str, now: float) -> Request:
        """What a person answers for a paused state: the node's question, or the agent node's run."""
        if state.pending is not None:
            ttl = self.engines[state.workflow].workflow.ttl_seconds
            asked = state.pending.to_request(
                request_id=request_id,
                run_id=run.run_id,
                thread_id=run.thread_id,
                agent_path=run.path,
                created_at=now,
                expires_at=now + ttl if ttl is not None else None,
                principal=run.principal,
            )
            return self._judged(state.workflow, asked, now)
        assert state.node is not None and state.agent_handle is not None, "a paused state waits on input or an agent"
        return DelegateRequest(
            request_id=request_id,
            run_id=run.run_id,
            thread_id=run.thread_id,
            agent_path=run.path,
            tool_call_id=_agent_call_id(state.node, state.visits(state.node) + 1),
            tool_name=state.node,
            created_at=now,
            principal=run.principal,
            child_run_id=state.agent_handle,
        )

    # AgentNodeRunner

    async def start(self, call: AgentNodeCall) -> AgentOutcome:
        """Run the node's agent as a run below the workflow's, on a thread of its own: once per pass of the node.

        The pass's run has an id derived from the workflow's run and the pass (`_node_run_id`), so a step
        cut off after it started that run and before the workflow's pause or progress was written (a
        process killed, a Temporal worker's segment retried) finds the run and carries it on instead of
        starting the agent a second time. A run of the pass that failed or was cancelled stays as it
        is: the node runs again (a failed workflow resumed) under the next id.
        """
        flight = self.flights[call.run_id]
        for attempt in itertools.count(1):
            run_id = _node_run_id(call, attempt)
            try:
                earlier = await self._k.store.get_run(run_id)
            except RunNotFound:
                break
            if earlier.status not in ("failed", "cancelled"):
                return await self.resume(call, run_id)
        built = self._k.built(
            call.agent if isinstance(call.agent, str) else _plain_agent_name(call.workflow, call.node)
        )
        result = await self._runs.run_below(
            flight.run,
            built.name,
            call.prompt,
            call_id=_agent_call_id(call.node, call.visit),
            agent_path=f"{call.workflow}/{call.node}",
            options=flight.options,
            run_id=run_id,
        )
        return _agent_outcome(result)

    async def resume(self, call: AgentNodeCall, handle: str) -> AgentOutcome:
        """Where the node's agent run stands now: its answer, its open requests, or carried on if it can be."""
        k = self._k
        options = self.flights[call.run_id].options
        child = await k.store.get_run(handle)
        if child.status == "completed":
            return AgentFinished(output=child.output)
        if child.status == "paused":
            waiting = await _tree.open_leaves(k, child)
            if waiting:
                return AgentPaused(handle=handle, requests=tuple(waiting))
            return _agent_outcome(await self._runs.advance(child, force=False, options=options))
        if child.status == "running":
            return _agent_outcome(await self._runs.carry_on(child, options))
        raise AgentRunFailed(child.run_id, f"{child.status}: {child.error or 'no answer'}")


def output_text(value: Any) -> str | None:
    """A workflow's output as a run's output: text as is, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _prompt(flight: Flight) -> list[ModelMessage]:
    """What the next write adds to the thread's history, taken once: the caller writes them.

    The run's prompt goes with the run's first write, the answer a step resumed with with the step's.
    """
    said: list[ModelMessage] = (
        [] if flight.prompt_written else [ModelRequest(parts=[UserPromptPart(content=flight.run.prompt or "")])]
    )
    said += flight.answers
    flight.answers = []
    return said


def _agent_outcome(result: RunResult) -> AgentOutcome:
    if result.status == "completed":
        return AgentFinished(output=result.output)
    if result.status in ("paused", "running"):
        return AgentPaused(handle=result.run_id, requests=result.requests)
    raise AgentRunFailed(result.run_id, f"{result.status}: {result.error or 'no answer'}")


def _agent_call_id(node: str, visit: int) -> str:
    """The id the workflow's wait on an agent node's run goes by: the node and its pass."""
    return f"{node}:{visit}"


def _node_run_id(call: AgentNodeCall, attempt: int) -> str:
    """The id of a node pass's `attempt`-th run: as unguessable as the workflow's run id it is derived from."""
    return derived_id("run", f"{call.run_id}/{_agent_call_id(call.node, call.visit)}/{attempt}")


def _plain_agent_name(workflow: str, node: str) -> str:
    return f"{workflow}/{node}"


def _plain_agent(workflow: str, node: str, agent: object) -> BuiltAgent:
    """A pydantic-ai agent given as a node, as the runtime runs it: no approval rules of sayso's own.

    Its deferred tools (`requires_approval`, `CallDeferred`) pause the workflow when its
    `output_type` includes `DeferredToolRequests`, as pydantic-ai requires.
    """
    if not isinstance(agent, Agent) or agent.model is None:
        raise ConfigError(
            f"workflow {workflow!r}: node {node!r} runs {agent!r}; a pydantic-ai agent node must be an "
            "`Agent` with a model (or name a configured agent instead)"
        )
    return BuiltAgent(
        name=_plain_agent_name(workflow, node),
        agent=agent,
        policy=InterruptPolicy(),
        client_tools=frozenset(),
        model=infer_model(agent.model),
        gate=Gate(),
        redact=(),
        notifier=DecisionNotifier(),
    )
