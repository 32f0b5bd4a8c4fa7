"""One engine step, from store to store: run an agent segment, then persist its pause or its end.

A segment starts from what the store says (history, the pause's requests and decisions) and
ends in one write: the pause with its new requests, or the finished run. Nothing about a paused
run stays in memory. The ledger marks of approved calls were written when the pause was consumed
(`consume`), so an approved call is durable before it runs and never runs twice.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
from pydantic_ai import DeferredToolRequests, RunContext
from pydantic_ai.messages import (
    AgentStreamEvent,
    ModelMessage,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    repair_messages,
)

from .._core.access import may_decide
from .._core.audit_events import AuditEvent, ServiceNotifiedEvent, audit_body
from .._core.decisions import DecisionRecord
from .._core.grants import Grant
from .._core.requests import ApprovalRequest, ClientTool, ElicitationRequest, Request
from .._core.resume import ResumePlan
from .._core.service import service_notice
from .._engine.agents import BuiltAgent
from .._engine.deferred import annotate, closing_results, deferred_results, requests_from
from .._engine.deps import RunDeps
from .._engine.replies import ReplayedModel, Replies
from .._store import Claim, RunRecord
from . import _tree
from ._failures import report_failure
from ._kernel import Kernel, new_id
from ._leases import holding, resolve_stuck
from ._results import RunResult
from ._runner import CallOptions, LoopCall, LoopResult, Runs, TextSink


class _Services:
    """The runtime's services to one run's tools (`RunDeps.services`): its delegates, and whose grants count."""

    def __init__(self, k: Kernel, runs: Runs, run: RunRecord | str, options: CallOptions) -> None:
        self._k = k
        self._runs = runs
        self._run = run
        self._options = options

    async def delegate(self, target: str, task: str, call_id: str, *, run_step: int) -> str:
        run = self._run if isinstance(self._run, RunRecord) else await self._k.store.get_run(self._run)
        return await self._runs.delegate(run, target, task, call_id, self._options, run_step=run_step)

    def giver_may_decide(self, grant: Grant) -> bool:
        if grant.agent is None:
            return False
        return may_decide(self._k.principal(grant.giver), owner=grant.principal, agent_path=grant.agent)


def tool_deps(
    k: Kernel,
    runs: Runs,
    *,
    run_id: str,
    thread_id: str,
    agent_path: str,
    principal: str | None,
    options: CallOptions,
    stored_grants: Sequence[Grant] | None,
    marked: frozenset[str],
    client_tools: Sequence[ClientTool],
    chat_thread_id: str | None,
) -> RunDeps:
    """The deps a segment's tools run with in a process of an executor (a Temporal worker's tool activity).

    The same runtime services as `execute` gives them, over this process's store; no model replies
    are kept for a redo (the executor keeps the loop's replies itself).
    """
    return RunDeps(
        run_id=run_id,
        thread_id=thread_id,
        agent_path=agent_path,
        principal=principal,
        ledger=k.store,
        clock=k.clock,
        grants=options.grants,
        widest_scope=options.widest,
        stored_grants=stored_grants,
        services=_Services(k, runs, run_id, options),
        marked=marked,
        client_tools=client_tools,
        chat_thread_id=chat_thread_id,
        journal=k.journal,
    )


async def execute(
    k: Kernel,
    runs: Runs,
    built: BuiltAgent,
    run: RunRecord,
    *,
    options: CallOptions,
    prompt: str | None,
    requests: Sequence[Request],
    decisions: Mapping[str, DecisionRecord],
    marked: frozenset[str] = frozenset(),
    history: list[ModelMessage] | None = None,
    stored_grants: Sequence[Grant] | None = None,
    redo: bool = False,
) -> RunResult:
    """Run one segment of `run` on `built` and persist where it ended: paused, completed or failed.

    `redo`: the segment is done again after its process died (a take-over); the model's replies
    its tools' steps kept come back from the journal (`ReplayedModel`), and it is not streamed.

    `history` and `stored_grants` come from the segment's first read when it made one (the run's
    start or the pause's consumption); the gate then needs no store read of its own. `options` hold
    for the whole call: the host's grants and widest scope, and (for a top-level run) the text sink.
    """
    if history is None:
        history = await k.store.load_messages(run.thread_id)
    if prompt is not None and not requests and history and isinstance(history[-1], ModelResponse):
        # A thread an earlier version left ending in unanswered calls still takes a new message.
        if history[-1].tool_calls:
            history = repair_messages(history)
    # A delegate's run has a thread of its own; "allow for this chat" means the person's chat above it.
    chat_thread_id = None if run.parent_run_id is None else (await _tree.root(k, run)).thread_id
    replies = Replies(run_id=run.run_id, journal=k.journal.store, history=history)
    deps = RunDeps(
        run_id=run.run_id,
        thread_id=run.thread_id,
        agent_path=run.path,
        principal=run.principal,
        ledger=k.store,
        clock=k.clock,
        grants=options.grants,
        widest_scope=options.widest,
        stored_grants=stored_grants,
        services=_Services(k, runs, run, options),
        marked=marked,
        client_tools=[t for t in run.client_tools if t.name in built.client_tools],
        chat_thread_id=chat_thread_id,
        journal=k.journal,
        replies=replies,
    )
    allowed = deps.client_tools
    # A client tool's context reaches only the agents allowed to call that tool.
    context = "\n".join(f"Context from the client for the tool {t.name!r}: {t.context}" for t in allowed if t.context)
    # Only a top-level run's text reaches the caller. A redo streams none in this process (its
    # replies are replayed); an executor's loop (`k.loop`) is run once per segment however often the
    # segment is redone, and a run its front handed over to it is carried on as a redo, so it streams.
    top_sink = options.on_text if run.parent_run_id is None else None
    sink = None if redo else top_sink
    working = k.start_working(run.run_id)
    try:
        with working.scope:
            try:
                with holding(k, run):
                    deferred = (
                        deferred_results(requests, decisions, rejection=built.policy.rejection) if requests else None
                    )
                    if k.loop is not None and k.loop.covers(built.name):
                        call = LoopCall(
                            prompt=prompt,
                            history=history,
                            deferred=deferred,
                            deps=deps,
                            instructions=context or None,
                            on_text=top_sink,
                        )
                        result = await k.loop.run(run, call)
                    else:
                        ran = await built.agent.run(
                            prompt,
                            message_history=history,
                            deferred_tool_results=deferred,
                            deps=deps,
                            instructions=context or None,
                            event_stream_handler=text_handler(sink) if sink is not None else None,
                            model=ReplayedModel(built.model, replies) if redo else None,
                        )
                        result = LoopResult(
                            new_messages=ran.new_messages(), all_messages=ran.all_messages(), output=ran.output
                        )
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    if await _cancel_asked(k, run):
                        await _finish_cancelled(
                            k, run, deps, _closing(history, requests, decisions, deps, error="the run was cancelled")
                        )
                    else:
                        await _keep_finished(k, deps)
                raise
            except Exception as exc:
                # The boundary of a run: whatever the model or a tool raised, the run is recorded as
                # failed (its pause is already consumed), and the caller gets a result saying why.
                error = report_failure(run.run_id, exc)
                await k.store.finish_run(
                    run,
                    holder=k.holder,
                    new_messages=_closing(history, requests, decisions, deps, error=error),
                    status="failed",
                    output=None,
                    error=error,
                    now=k.clock(),
                    executions=deps.executed,
                )
                # Approved calls the failed segment marked but did not finish may or may not have run.
                await resolve_stuck(k, run_id=run.run_id)
                k.events.touched()
                return RunResult(
                    run_id=run.run_id, thread_id=run.thread_id, agent=run.agent, status="failed", error=error
                )
    finally:
        k.stop_working(run.run_id)
    if working.scope.cancelled_caught:
        return RunResult(run_id=run.run_id, thread_id=run.thread_id, agent=run.agent, status="cancelled")
    new = annotate(result.new_messages, requests, decisions)
    now = k.clock()
    output = result.output
    if isinstance(output, DeferredToolRequests):
        raised = requests_from(
            output,
            result.all_messages,
            run_id=run.run_id,
            thread_id=run.thread_id,
            agent_path=run.path,
            now=now,
            new_id=lambda: new_id("req"),
            principal=run.principal,
            redact=built.redact,
            parent_call_id=run.parent_call_id,
            chat_thread_id=chat_thread_id,
        )
        pause_id = new_id("pau")
        # A form only the process holding its call can hand back (its call parked in that runtime's MCP host:
        # this one, or the Temporal worker whose tool activity asked) keeps the run held by that process,
        # renewed while the call waits (`_live`), so others know whether it still can.
        holders = [r.holder or k.holder for r in raised if isinstance(r, ElicitationRequest) and r.needs_holder]
        held = bool(holders)
        await k.store.save_pause(
            run,
            holder=k.holder,
            pause_id=pause_id,
            new_messages=new,
            requests=raised,
            now=now,
            executions=deps.executed,
            hold_until=now + k.lease_seconds if held else None,
            keeper=holders[0] if held else None,
        )
        if held and holders[0] == k.holder:
            k.held[run.run_id] = pause_id  # else its keeper's runtime finds it held and holds it (`_live`)
        k.events.opened(raised)
        return RunResult(
            run_id=run.run_id,
            thread_id=run.thread_id,
            agent=run.agent,
            status="paused",
            requests=tuple(await _tree.leaves_in(k, raised, {})),
        )
    await k.store.finish_run(
        run,
        holder=k.holder,
        new_messages=new,
        status="completed",
        output=output,
        error=None,
        now=now,
        executions=deps.executed,
    )
    k.events.touched()
    return RunResult(run_id=run.run_id, thread_id=run.thread_id, agent=run.agent, status="completed", output=output)


def text_handler(sink: TextSink) -> Callable[[RunContext[Any], AsyncIterable[AgentStreamEvent]], Awaitable[None]]:
    """A pydantic-ai event handler that hands each piece of text to `sink` as the model writes it.

    Also what a Temporal worker's model-request activity streams a front's text with (`_temporal/_text.py`).
    """

    async def handle(_: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
        async for event in events:
            if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart) and event.part.content:
                await sink(event.part.content)
            elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                if event.delta.content_delta:
                    await sink(event.delta.content_delta)

    return handle


async def _cancel_asked(k: Kernel, run: RunRecord) -> bool:
    """Whether the run's top-level run was cancelled (`Sayso.cancel`), not just left by its caller."""
    return (await _tree.root(k, run)).run_id in k.cancelling


async def _keep_finished(k: Kernel, deps: RunDeps) -> None:
    """Record in the ledger the approved calls that finished before the segment was left (Ctrl-C, a client gone).

    The run stays running, to be carried on elsewhere (`recover`); without this a call that ran to its
    end (a sync tool, whose thread a cancellation waits for) would read as cut off there: outcome unknown.
    Only an entry still `executing` is written, so a take-over that resolved it first keeps its word.
    """
    for done in deps.executed:
        await k.store.finish_execution(done.request_id, done.result, k.clock(), audit=[done.audit], status=done.status)


def _closing(
    history: Sequence[ModelMessage],
    requests: Sequence[Request],
    decisions: Mapping[str, DecisionRecord],
    deps: RunDeps,
    *,
    error: str,
) -> list[ModelMessage]:
    """What a segment that ended early stores: a result for every call it leaves unanswered, so the thread goes on."""
    ran = {e.request_id: json.loads(e.result) for e in deps.executed}
    return closing_results(history, requests, decisions, ran, error=error)


async def _finish_cancelled(k: Kernel, run: RunRecord, deps: RunDeps, closing: Sequence[ModelMessage]) -> None:
    """Record a working run as cancelled: nothing more runs, what already ran is kept."""
    await k.store.finish_run(
        run,
        holder=k.holder,
        new_messages=closing,
        status="cancelled",
        output=None,
        error=None,
        now=k.clock(),
        executions=deps.executed,
    )
    k.events.touched()


async def consume(
    k: Kernel,
    run: RunRecord,
    requests: Sequence[Request],
    plan: ResumePlan,
    *,
    now: float,
    executing: Sequence[str],
    load_history: bool,
    grants_of: str | None = None,
) -> Claim:
    """Consume a run's pause for this runtime, recording and announcing the skips the resume adds.

    Raises:
        PauseConsumed: another process consumed the pause first.
    """
    assert run.pause_id is not None
    by_id = {r.request_id: r for r in requests}
    claim = await k.store.consume_pause(
        run,
        pause_id=run.pause_id,
        holder=k.holder,
        until=now + k.lease_seconds,
        now=now,
        added=plan.added,
        audit=[audit_body(by_id[d.request_id], d) for d in plan.added],
        executing=executing,
        load_history=load_history,
        grants_of=grants_of,
    )
    k.events.decided(requests, plan.added)
    return claim


async def tell_services(
    k: Kernel, built: BuiltAgent, requests: Sequence[Request], decisions: Mapping[str, DecisionRecord]
) -> None:
    """Tell each service how its own approval request was decided, before the run continues.

    See docs/concepts/pauses.md#tools-whose-service-asks.
    """
    notices = [
        service_notice(r, decisions[r.request_id].decision, principal=decisions[r.request_id].principal, at=k.clock())
        for r in requests
        if isinstance(r, ApprovalRequest) and r.service_request is not None and r.request_id in decisions
    ]
    if not notices or not built.notifier.configured:
        return
    audit: list[AuditEvent] = []
    for notice in notices:
        problem = await built.notifier.notify(notice)
        audit.append(
            ServiceNotifiedEvent(event="service_notified", **notice, delivered=problem is None, problem=problem)
        )
    await k.store.append_audit(audit)
