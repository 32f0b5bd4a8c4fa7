"""Workflow runs (§8): a workflow runs like an agent, as a run on a thread with pauses, decisions and leases.

A workflow's run is an ordinary run whose `agent` is the workflow's name, so the verbs, the
access rule, the inbox, events, audit, expiry and lease takeover treat it as any run. Where an
agent's run pauses on tool calls, a workflow's run pauses on one of two things:

- a node's question (`RequestInput`): an `InputRequest`, answered with `Provide` (checked
  against its schema before anything is written, so a wrong answer leaves the pause open) or
  `Skip`;
- an agent node's own requests: the agent runs as a child run (`agent_path` `workflow/node`)
  and the workflow's pause holds a `DelegateRequest` on it, so the agent's approvals, questions
  and client tools are the workflow's open leaves, decided (and run at most once) exactly as a
  delegate's are. The workflow carries on once the agent's run has finished.

The stepping is `WorkflowEngine`'s; this module gives it a `WorkflowPersistence` backed by the
store and an `AgentNodeRunner` backed by the runtime's agents. What is written, and when:

- after each finished node, the state (its output appended), under the run's lease, written
  behind the node that follows (a stop that comes first carries it instead);
- at a pause, the state with the pause and its request, in one durable commit, before `run`
  or `decide` returns the request;
- at the end (completed or failed), the state with the run's end, in one durable commit.

Two saves the engine asks for are not written, because the store already holds what they say:
the state of a run that has just started (its run record holds the prompt) and the state right
after an answer (the pause's decision holds it). A process that carries the run on rebuilds
both from the store, so a crash anywhere loses no answer, and no node that finished before the
one running. The run's start, its progress and the consuming of its input pause commit without
waiting for the disk: nothing of them is told to anyone before the run's next stop, whose
durable commit makes them durable too (both databases write their log in order).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import infer_model

from .._agents import BuiltAgent
from .._config import Config
from .._core.access import LOCAL_NAME
from .._core.decisions import ClientResult, DecisionRecord, Expire, Provide, Skip
from .._core.policy import InterruptPolicy
from .._core.requests import DelegateRequest, InputRequest, Request
from .._core.resume import SKIPPED_FOR_FORCE, open_requests, plan_resume
from .._engine import audit_body
from .._gate import Gate
from .._notify import DecisionNotifier
from .._results import RunResult
from .._store import PauseState, RunRecord
from .._tools import import_spec
from ..exceptions import ConfigError, PauseConsumed, RunConflict
from ..workflows import (
    AgentFinished,
    AgentNodeCall,
    AgentOutcome,
    AgentPaused,
    Workflow,
    WorkflowEngine,
    WorkflowFailed,
    WorkflowFinished,
    WorkflowOutcome,
    WorkflowState,
    build_workflow,
)
from ._failures import root_exception
from ._leases import holding

if TYPE_CHECKING:
    from ._kernel import Kernel

InputDecision = Provide | Skip | Expire
"""What a node's question is closed with: an answer, a skip, or its expiry."""


class AgentRunFailed(RuntimeError):
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
class _Flight:
    """A workflow run this runtime is stepping right now: what the store writes need to know about it."""

    run: RunRecord
    tasks: TaskGroup
    """Where the run's progress is written behind the nodes that follow."""
    saved_nodes: int
    """How many finished nodes the store holds (or is about to); a running state with no more is not written."""
    prompt_written: bool = False
    """Whether the run's prompt is in its thread's history yet (it goes with the run's first write)."""
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

    def __init__(self, k: Kernel, workflows: Mapping[str, Workflow]) -> None:
        self._k = k
        self.flights: dict[str, _Flight] = {}
        self.engines = {name: WorkflowEngine(w, persistence=self, agents=self) for name, w in workflows.items()}
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

    async def _write_progress(self, flight: _Flight) -> None:
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
                            owner=k.owner,
                            state=state.to_json(),
                            now=k.clock(),
                            new_messages=_prompt(flight),
                        )
                        flight.prompt_written = True
        finally:
            flight.writing = False

    async def _write_stop(self, flight: _Flight, state: WorkflowState) -> None:
        """Write a pause (with its request) or an end, with the state, in one commit."""
        from ._kernel import new_id

        k = self._k
        run = flight.run
        now = k.clock()
        messages = _prompt(flight)
        if state.status == "paused":
            request = self._request(state, run, request_id=new_id("req"), now=now)
            await k.store.save_pause(
                run,
                owner=k.owner,
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
                owner=k.owner,
                new_messages=messages,
                status=state.status,
                output=output,
                error=state.error,
                now=now,
                workflow_state=state.to_json(),
            )
        flight.prompt_written = True

    def _request(self, state: WorkflowState, run: RunRecord, *, request_id: str, now: float) -> Request:
        """What a person answers for a paused state: the node's question, or the agent node's run."""
        if state.pending is not None:
            ttl = self.engines[state.workflow].workflow.ttl_seconds
            return state.pending.to_request(
                request_id=request_id,
                run_id=run.run_id,
                thread_id=run.thread_id,
                agent_path=run.path,
                created_at=now,
                expires_at=now + ttl if ttl is not None else None,
                principal=run.principal,
            )
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
        """Run the node's agent as a child run of the workflow's, on a thread of its own."""
        from . import _step
        from ._kernel import new_id

        k = self._k
        parent = self.flights[call.run_id].run
        built = k.built(call.agent if isinstance(call.agent, str) else _plain_agent_name(call.workflow, call.node))
        now = k.clock()
        child = await k.store.start_run(
            thread_id=new_id("thr"),
            owner=parent.principal or LOCAL_NAME,
            agent=built.name,
            run_id=new_id("run"),
            prompt=call.prompt,
            client_tools=parent.client_tools,
            lease_owner=k.owner,
            lease_expires_at=now + k.lease_seconds,
            now=now,
            expect_active=None,
            parent_run_id=call.run_id,
            parent_call_id=_agent_call_id(call.node, call.visit),
            agent_path=f"{call.workflow}/{call.node}",
        )
        result = await _step.execute(k, built, child, prompt=call.prompt, requests=[], decisions={}, history=[])
        return _agent_outcome(result)

    async def resume(self, call: AgentNodeCall, handle: str) -> AgentOutcome:
        """Where the node's agent run stands now: its answer, its open requests, or carried on if it can be."""
        from . import _leases, _tree

        k = self._k
        child = await k.store.get_run(handle)
        if child.status == "completed":
            return AgentFinished(output=child.output)
        if child.status == "paused":
            waiting = await _tree.open_leaves(k, child)
            if waiting:
                return AgentPaused(handle=handle, requests=tuple(waiting))
            return _agent_outcome(await _tree.advance(k, child, force=False))
        if child.status == "running":
            return _agent_outcome(await _leases.carry_on(k, child))
        raise AgentRunFailed(child.run_id, f"{child.status}: {child.error or 'no answer'}")


def hosts(k: Kernel, name: str) -> bool:
    """Whether `name` is one of the runtime's workflows (rather than an agent)."""
    return k.workflows is not None and name in k.workflows.engines


def output_text(value: Any) -> str | None:
    """A workflow's output as a run's output: text as is, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


# the run verbs, for a workflow's run


async def started(k: Kernel, run: RunRecord) -> RunResult:
    """Run a workflow's new run (the message is the first node's input) until it finishes or pauses."""
    return await _step_run(k, run, None, lambda engine: engine.start(run.run_id, run.prompt, principal=run.principal))


async def advance(k: Kernel, run: RunRecord, *, force: bool, state: PauseState | None = None) -> RunResult:
    """Carry a paused workflow run on once what it waits on is decided (an agent node's run first).

    Raises:
        PauseConsumed: another process resumed this pause first.
    """
    from . import _tree

    assert run.pause_id is not None
    pause = state or await k.store.pause_state(run.pause_id)
    decided = dict(pause.decisions)
    settled: list[DecisionRecord] = []
    for request in open_requests(pause.requests, decided):
        if isinstance(request, DelegateRequest):
            record = await _agent_settled(k, request, force=force)
            if record is not None:
                decided[request.request_id] = record
                settled.append(record)
    if open_requests(pause.requests, decided) and not force:
        return await _tree.result(k, run.run_id)
    now = k.clock()
    plan = plan_resume(run.run_id, pause.requests, decided, force=force, now=now)
    for skipped in plan.added:
        request = next(r for r in pause.requests if r.request_id == skipped.request_id)
        if isinstance(request, DelegateRequest):
            await _tree.cancel_tree(k, request.child_run_id, SKIPPED_FOR_FORCE)
    added = [*settled, *plan.added]
    by_id = {r.request_id: r for r in pause.requests}
    claim = await k.store.consume_pause(
        run,
        pause_id=run.pause_id,
        owner=k.owner,
        until=now + k.lease_seconds,
        now=now,
        added=added,
        audit=[audit_body(by_id[d.request_id], d) for d in added],
        load_history=False,
        # No call runs at most once here; the run's next stop is a durable write and carries this one.
        durable=False,
        load_workflow_state=True,
    )
    k.events.decided(pause.requests, plan.added)
    return await _carry_on(k, claim.run, _input_decision(pause.requests, plan.decisions), raw=claim.workflow_state)


async def carry_on(k: Kernel, run: RunRecord) -> RunResult:
    """Carry on a workflow run whose process died (its lease is ours now), from the stored state."""
    decision: InputDecision | None = None
    if run.resume_pause_id is not None:
        pause = await k.store.pause_state(run.resume_pause_id)
        if pause.run_id == run.run_id:
            decision = _input_decision(pause.requests, pause.decisions)
    return await _carry_on(k, run, decision)


async def retry(k: Kernel, run: RunRecord) -> RunResult:
    """Run a failed workflow run's failed node again, with the answers it already had.

    Raises:
        RunConflict: another process took the run up first.
        ThreadBusy: a new run has started on the thread since.
    """
    now = k.clock()
    run = await k.store.reopen_run(run, owner=k.owner, until=now + k.lease_seconds, now=now)
    return await _carry_on(k, run, None)


async def _carry_on(
    k: Kernel, run: RunRecord, decision: InputDecision | None, *, raw: bytes | None = None
) -> RunResult:
    """Step a run on from its stored state (`raw`, when already read).

    A paused state takes the decision that closed its question.
    """
    raw = raw if raw is not None else await k.store.workflow_state(run.run_id)
    if raw is None:  # the process died before the run's first write: start it again
        return await _step_run(
            k, run, None, lambda engine: engine.start(run.run_id, run.prompt, principal=run.principal)
        )
    stored = WorkflowState.from_json(raw)
    answer = decision if stored.status == "paused" and stored.pending is not None else None
    return await _step_run(k, run, stored, lambda engine: engine.resume(stored, answer))


async def _step_run(
    k: Kernel,
    run: RunRecord,
    stored: WorkflowState | None,
    step: Callable[[WorkflowEngine], Awaitable[WorkflowOutcome]],
) -> RunResult:
    """Let the engine step `run` (holding its lease) and say where the run stands afterwards."""
    workflows = k.workflows
    assert workflows is not None
    engine = workflows.engines.get(run.agent)
    if engine is None:
        raise RunConflict(run.run_id, f"workflow {run.agent!r} is not configured in this runtime")
    try:
        with holding(k, run):
            async with anyio.create_task_group() as tasks:
                flight = _Flight(
                    run=run,
                    tasks=tasks,
                    saved_nodes=len(stored.finished) if stored is not None else 0,
                    prompt_written=stored is not None,
                )
                workflows.flights[run.run_id] = flight
                try:
                    outcome = await step(engine)
                finally:
                    del workflows.flights[run.run_id]
    except BaseExceptionGroup as group:
        # The task group (the progress writer) wraps what the step raised.
        raise root_exception(group) from None
    common: dict[str, Any] = {"run_id": run.run_id, "thread_id": run.thread_id, "agent": run.agent}
    if isinstance(outcome, WorkflowFinished):
        return RunResult(**common, status="completed", output=output_text(outcome.output))
    if isinstance(outcome, WorkflowFailed):
        return RunResult(**common, status="failed", error=outcome.error)
    if outcome.agent is not None:
        return RunResult(**common, status="paused", requests=outcome.agent.requests)
    return RunResult(**common, status="paused", requests=flight.requests)


async def _agent_settled(k: Kernel, request: DelegateRequest, *, force: bool) -> DecisionRecord | None:
    """Carry an agent node's run on; once it has ended, the record that closes the workflow's wait on it."""
    from . import _tree

    child = await k.store.get_run(request.child_run_id)
    if child.status == "running":
        return None
    if child.status == "paused":
        if not force and await _tree.open_leaves(k, child):
            return None
        try:
            outcome = await _tree.advance(k, child, force=force)
        except PauseConsumed:
            return None
        if outcome.status in ("paused", "running"):
            return None
        child = await k.store.get_run(child.run_id)
    said = child.output if child.status == "completed" else f"Error: the agent's run {child.status}: {child.error}"
    return DecisionRecord(
        request_id=request.request_id,
        decision=ClientResult(value=said),
        by="system",
        principal=None,
        decided_at=k.clock(),
    )


def _input_decision(requests: Sequence[Request], decisions: Mapping[str, DecisionRecord]) -> InputDecision | None:
    """The decision that closed the node's question of a pause, if the pause held one."""
    for request in requests:
        if isinstance(request, InputRequest) and request.request_id in decisions:
            decision = decisions[request.request_id].decision
            assert isinstance(decision, Provide | Skip | Expire), "an input request takes provide or skip"
            return decision
    return None


def _prompt(flight: _Flight) -> list[ModelMessage]:
    """The run's prompt as the first message of its thread, when the run's first write is still to come."""
    if flight.prompt_written:
        return []
    return [ModelRequest(parts=[UserPromptPart(content=flight.run.prompt or "")])]


def _agent_outcome(result: RunResult) -> AgentOutcome:
    if result.status == "completed":
        return AgentFinished(output=result.output)
    if result.status in ("paused", "running"):
        return AgentPaused(handle=result.run_id, requests=result.requests)
    raise AgentRunFailed(result.run_id, f"{result.status}: {result.error or 'no answer'}")


def _agent_call_id(node: str, visit: int) -> str:
    """The id the workflow's wait on an agent node's run goes by: the node and its pass."""
    return f"{node}:{visit}"


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
