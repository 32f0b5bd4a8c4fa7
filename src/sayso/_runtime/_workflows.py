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
backed by the store and an `AgentNodeRunner` backed by the runtime's agents; this module holds the
run verbs that step a workflow's run. What is written, and when:

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

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
from pydantic_ai.messages import ModelMessage

from .._core.decisions import ClientResult, DecisionRecord, Expire, Provide, Skip
from .._core.requests import DelegateRequest, InputRequest, Request
from .._core.resume import SKIPPED_FOR_FORCE, open_requests, plan_resume
from .._engine.deferred import answer_messages, audit_body
from .._store import PauseState, RunRecord
from ..exceptions import PauseConsumed, RunConflict
from ..workflows import (
    WorkflowEngine,
    WorkflowFailed,
    WorkflowFinished,
    WorkflowOutcome,
    WorkflowState,
)
from ._failures import root_exception
from ._leases import holding
from ._results import RunResult
from ._workflow_host import Flight, output_text

if TYPE_CHECKING:
    from ._kernel import Kernel

InputDecision = Provide | Skip | Expire
"""What a node's question is closed with: an answer, a skip, or its expiry."""


def hosts(k: Kernel, name: str) -> bool:
    """Whether `name` is one of the runtime's workflows (rather than an agent)."""
    return k.workflows is not None and name in k.workflows.engines


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
    return await _carry_on(k, claim.run, _input_answer(pause.requests, plan.decisions), raw=claim.workflow_state)


async def carry_on(k: Kernel, run: RunRecord) -> RunResult:
    """Carry on a workflow run whose process died (its lease is ours now), from the stored state."""
    answer: tuple[InputRequest, DecisionRecord] | None = None
    if run.resume_pause_id is not None:
        pause = await k.store.pause_state(run.resume_pause_id)
        if pause.run_id == run.run_id:
            answer = _input_answer(pause.requests, pause.decisions)
    return await _carry_on(k, run, answer)


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
    k: Kernel, run: RunRecord, answered: tuple[InputRequest, DecisionRecord] | None, *, raw: bytes | None = None
) -> RunResult:
    """Step a run on from its stored state (`raw`, when already read).

    A paused state takes the decision that closed its question, and the run's next write puts
    that answer in the thread's history (a state that moved on already wrote it).
    """
    raw = raw if raw is not None else await k.store.workflow_state(run.run_id)
    if raw is None:  # the process died before the run's first write: start it again
        return await _step_run(
            k, run, None, lambda engine: engine.start(run.run_id, run.prompt, principal=run.principal)
        )
    stored = WorkflowState.from_json(raw)
    applies = answered is not None and stored.status == "paused" and stored.pending is not None
    answer = _as_input_decision(answered[1]) if answered is not None and applies else None
    said = answer_messages(*answered) if answered is not None and applies else []
    return await _step_run(k, run, stored, lambda engine: engine.resume(stored, answer), answers=said)


async def _step_run(
    k: Kernel,
    run: RunRecord,
    stored: WorkflowState | None,
    step: Callable[[WorkflowEngine], Awaitable[WorkflowOutcome]],
    *,
    answers: Sequence[ModelMessage] = (),
) -> RunResult:
    """Let the engine step `run` (holding its lease) and say where the run stands afterwards."""
    workflows = k.workflows
    assert workflows is not None
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
    common: dict[str, Any] = {"run_id": run.run_id, "thread_id": run.thread_id, "agent": run.agent}
    if working.scope.cancelled_caught:
        return RunResult(**common, status="cancelled")
    if isinstance(outcome, WorkflowFinished):
        return RunResult(**common, status="completed", output=output_text(outcome.output))
    if isinstance(outcome, WorkflowFailed):
        return RunResult(**common, status="failed", error=outcome.error)
    if outcome.agent is not None:
        return RunResult(**common, status="paused", requests=outcome.agent.requests)
    return RunResult(**common, status="paused", requests=flight.requests)


async def _finish_cancelled(k: Kernel, run: RunRecord) -> None:
    """Record a working workflow run as cancelled: no node runs any more; the finished nodes' outputs are kept."""
    await k.store.finish_run(
        run, owner=k.owner, new_messages=(), status="cancelled", output=None, error=None, now=k.clock()
    )
    k.events.touched()


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
    assert isinstance(decision, Provide | Skip | Expire), "an input request takes provide or skip"
    return decision
