"""Workflow runs: a workflow runs like an agent, as a run on a thread with pauses, decisions and leases.

See docs/guides/workflows.md.

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

The stepping is `WorkflowEngine`'s; `_workflow_host.Workflows` gives it a `WorkflowPersistence`
backed by the store and an `AgentNodeRunner` backed by the cycle's runs below; this module holds
`WorkflowRunner`, the `Runner` of a workflow's run. What is written, and when:

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

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence

import anyio
from pydantic_ai.messages import ModelMessage

from .._core.audit_events import audit_body
from .._core.decisions import ClientResult, DecisionRecord, Expired, Provide, Skip
from .._core.requests import DelegateRequest, InputRequest, Request
from .._engine.deferred import answer_messages
from .._store import Decided, RunRecord
from ..exceptions import RunConflict
from ..workflows import (
    WorkflowEngine,
    WorkflowFailed,
    WorkflowFinished,
    WorkflowOutcome,
    WorkflowState,
)
from ._failures import root_exception
from ._kernel import Kernel
from ._leases import holding
from ._results import RunResult
from ._runner import CallOptions, Resume, Runs, Start
from ._workflow_host import Flight, Workflows, build_workflows, output_text

InputDecision = Provide | Skip | Expired
"""What a node's question is closed with: an answer, a skip, or its expiry."""


def workflow_runner(k: Kernel, runs: Runs) -> WorkflowRunner:
    """The runner of the workflows of `k`'s config, built (what the package root hands the cycle).

    Raises:
        ConfigError: a workflow's node cannot be imported, or its graph is wrong.
    """
    return WorkflowRunner(k, Workflows(k, build_workflows(k.config), runs))


class WorkflowRunner:
    """The `Runner` of a workflow's run: its engine steps it, from the state the store holds."""

    local = True
    reads_grants = False  # its agent nodes read their own
    durable_start = False  # told to no one before its first stop, whose durable write carries the start
    claims_with_decision = False  # its resume reads the workflow's state with the claim, after the decision

    def __init__(self, k: Kernel, host: Workflows) -> None:
        self._k = k
        self.host = host

    def check(self, name: str) -> None:
        pass  # a workflow's engine was built with the runtime; its agent nodes are checked as they run

    def hosts(self, name: str) -> bool:
        """Whether `name` is one of the runtime's workflows (rather than an agent)."""
        return name in self.host.engines

    @property
    def names(self) -> frozenset[str]:
        """The runtime's workflows by name."""
        return frozenset(self.host.engines)

    async def start(self, run: RunRecord, start: Start, options: CallOptions) -> RunResult:
        # The message is the first node's input; a superseded pause's skips are already written.
        return await self._step_run(
            run, None, lambda engine: engine.start(run.run_id, run.prompt, principal=run.principal), options
        )

    async def resume(self, run: RunRecord, resume: Resume, options: CallOptions) -> RunResult:
        # The agent nodes' answers go with the consumption; no call runs at most once here, and the
        # run's next stop is a durable write that carries this one.
        k = self._k
        assert run.pause_id is not None
        pause, plan = resume.pause, resume.plan
        added = [*resume.settled, *plan.resume.added]
        by_id = {r.request_id: r for r in pause.requests}
        claim = await k.store.consume_pause(
            run,
            pause_id=run.pause_id,
            holder=k.holder,
            until=plan.now + k.lease_seconds,
            now=plan.now,
            added=added,
            audit=[audit_body(by_id[d.request_id], d) for d in added],
            load_history=False,
            durable=False,
            load_workflow_state=True,
        )
        k.events.decided(pause.requests, plan.resume.added)
        answered = _input_answer(pause.requests, plan.resume.decisions)
        return await self._carry_on(claim.run, answered, options, raw=claim.workflow_state)

    async def carry_on(self, run: RunRecord, options: CallOptions) -> RunResult:
        answered: tuple[InputRequest, DecisionRecord] | None = None
        if run.resume_pause_id is not None:
            pause = await self._k.store.pause_state(run.resume_pause_id)
            if pause.run_id == run.run_id:
                answered = _input_answer(pause.requests, pause.decisions)
        return await self._carry_on(run, answered, options)

    async def resume_decided(self, decided: Decided, options: CallOptions) -> RunResult:
        raise AssertionError("a workflow's run is resumed after the decision's commit, never claimed by it")

    async def answer_below(self, request: DelegateRequest, outcome: RunResult) -> DecisionRecord:
        # Not written here: it goes with the resume's consumption of the pause.
        said = (
            outcome.output
            if outcome.status == "completed"
            else f"Error: the agent's run {outcome.status}: {outcome.error}"
        )
        return DecisionRecord(
            request_id=request.request_id,
            decision=ClientResult(value=said),
            by="system",
            principal=None,
            decided_at=self._k.clock(),
        )

    async def retry(self, run: RunRecord, options: CallOptions) -> RunResult:
        """Run a failed workflow run's failed node again, with the answers it already had.

        Raises:
            RunConflict: another process took the run up first.
            ThreadBusy: a new run has started on the thread since.
        """
        k = self._k
        now = k.clock()
        run = await k.store.reopen_run(run, holder=k.holder, until=now + k.lease_seconds, now=now)
        return await self._carry_on(run, None, options)

    async def _carry_on(
        self,
        run: RunRecord,
        answered: tuple[InputRequest, DecisionRecord] | None,
        options: CallOptions,
        *,
        raw: bytes | None = None,
    ) -> RunResult:
        """Step a run on from its stored state (`raw`, when already read).

        A paused state takes the decision that closed its question, and the run's next write puts
        that answer in the thread's history (a state that moved on already wrote it).
        """
        raw = raw if raw is not None else await self._k.store.workflow_state(run.run_id)
        if raw is None:  # the process died before the run's first write: start it again
            return await self._step_run(
                run, None, lambda engine: engine.start(run.run_id, run.prompt, principal=run.principal), options
            )
        stored = WorkflowState.from_json(raw)
        applies = answered is not None and stored.status == "paused" and stored.pending is not None
        answer = _as_input_decision(answered[1]) if answered is not None and applies else None
        said = answer_messages(*answered) if answered is not None and applies else []
        return await self._step_run(run, stored, lambda engine: engine.resume(stored, answer), options, answers=said)

    async def _step_run(
        self,
        run: RunRecord,
        stored: WorkflowState | None,
        step: Callable[[WorkflowEngine], Awaitable[WorkflowOutcome]],
        options: CallOptions,
        *,
        answers: Sequence[ModelMessage] = (),
    ) -> RunResult:
        """Let the engine step `run` (holding its lease) and say where the run stands afterwards."""
        k = self._k
        workflows = self.host
        engine = workflows.engines.get(run.agent)
        if engine is None:
            raise RunConflict(run.run_id, f"workflow {run.agent!r} is not configured in this runtime")
        working = k.start_working(run.run_id)  # `Sayso.cancel` stops the run where it is, as an agent's
        try:
            with working.scope:
                try:
                    with holding(k, run):
                        async with anyio.create_task_group() as tasks:
                            flight = Flight(
                                run=run,
                                tasks=tasks,
                                options=options,
                                saved_nodes=len(stored.finished) if stored is not None else 0,
                                prompt_written=stored is not None,
                                answers=list(answers),
                            )
                            workflows.flights[run.run_id] = flight
                            try:
                                outcome = await step(engine)
                            finally:
                                del workflows.flights[run.run_id]
                except BaseExceptionGroup as group:
                    # The task group (the progress writer) wraps what the step raised.
                    raise root_exception(group) from None
                except anyio.get_cancelled_exc_class():
                    with anyio.CancelScope(shield=True):
                        if run.run_id in k.cancelling:
                            await _finish_cancelled(k, run)
                    raise
        finally:
            k.stop_working(run.run_id)
        result = functools.partial(RunResult, run_id=run.run_id, thread_id=run.thread_id, agent=run.agent)
        if working.scope.cancelled_caught:
            return result(status="cancelled")
        if isinstance(outcome, WorkflowFinished):
            return result(status="completed", output=output_text(outcome.output))
        if isinstance(outcome, WorkflowFailed):
            return result(status="failed", error=outcome.error)
        if outcome.agent is not None:
            return result(status="paused", requests=outcome.agent.requests)
        return result(status="paused", requests=flight.requests)


async def _finish_cancelled(k: Kernel, run: RunRecord) -> None:
    """Record a working workflow run as cancelled: no node runs any more; the finished nodes' outputs are kept."""
    await k.store.finish_run(
        run, holder=k.holder, new_messages=(), status="cancelled", output=None, error=None, now=k.clock()
    )
    k.events.touched()


def _input_answer(
    requests: Sequence[Request], decisions: Mapping[str, DecisionRecord]
) -> tuple[InputRequest, DecisionRecord] | None:
    """The node's question of a pause and the decision that closed it, if the pause held one."""
    for request in requests:
        if isinstance(request, InputRequest) and request.request_id in decisions:
            return request, decisions[request.request_id]
    return None


def _as_input_decision(record: DecisionRecord) -> InputDecision:
    decision = record.decision
    assert isinstance(decision, Provide | Skip | Expired), "an input request takes provide or skip"
    return decision
