"""One engine step, from store to store: run an agent segment, then persist its pause or its end.

A segment starts from what the store says (history, the pause's requests and decisions) and
ends in one write: the pause with its new requests, or the finished run. Nothing about a paused
run stays in memory. The ledger marks of approved calls were written when the pause was consumed
(`consume`), so an approved call is durable before it runs and never runs twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic_ai import DeferredToolRequests
from pydantic_ai.messages import ModelMessage

from .._agents import BuiltAgent
from .._core.decisions import DecisionRecord
from .._core.grants import Grant
from .._core.requests import ApprovalRequest, Request
from .._core.resume import ResumePlan
from .._core.service import service_notice
from .._engine import annotate, audit_body, deferred_results, requests_from
from .._gate import RunDeps
from .._results import RunResult
from .._store import Claim, RunRecord
from ._failures import report_failure
from ._leases import holding

if TYPE_CHECKING:
    from ._kernel import Kernel


async def execute(
    k: Kernel,
    built: BuiltAgent,
    run: RunRecord,
    *,
    prompt: str | None,
    requests: Sequence[Request],
    decisions: Mapping[str, DecisionRecord],
    external_grants: Sequence[Grant] | None = None,
    marked: frozenset[str] = frozenset(),
    history: list[ModelMessage] | None = None,
    stored_grants: Sequence[Grant] | None = None,
) -> RunResult:
    """Run one segment of `run` on `built` and persist where it ended: paused, completed or failed.

    `history` and `stored_grants` come from the segment's first read when it made one (the run's
    start or the pause's consumption); the gate then needs no store read of its own.
    """
    from . import _tree
    from ._kernel import new_id

    if history is None:
        history = await k.store.load_messages(run.thread_id)
    deps = RunDeps(
        run_id=run.run_id,
        thread_id=run.thread_id,
        agent_path=run.path,
        principal=run.principal,
        ledger=k.store,
        clock=k.clock,
        grants=external_grants,
        stored_grants=stored_grants,
        delegate=lambda target, task, call_id: _tree.delegate(k, run, target, task, call_id),
        marked=marked,
        client_tools=[t for t in run.client_tools if t.name in built.client_tools],
    )
    allowed = deps.client_tools
    # A client tool's context reaches only the agents allowed to call that tool.
    context = "\n".join(f"Context from the client for the tool {t.name!r}: {t.context}" for t in allowed if t.context)
    try:
        with holding(k, run):
            result = await built.agent.run(
                prompt,
                message_history=history,
                deferred_tool_results=deferred_results(requests, decisions) if requests else None,
                deps=deps,
                instructions=context or None,
            )
    except Exception as exc:
        # The boundary of a run: whatever the model or a tool raised, the run is recorded as
        # failed (its pause is already consumed), and the caller gets a result saying why.
        error = report_failure(run.run_id, exc)
        await k.store.finish_run(
            run,
            owner=k.owner,
            new_messages=(),
            status="failed",
            output=None,
            error=error,
            now=k.clock(),
            executions=deps.executed,
        )
        return RunResult(run_id=run.run_id, thread_id=run.thread_id, agent=run.agent, status="failed", error=error)
    new = annotate(result.new_messages(), requests, decisions)
    now = k.clock()
    output = result.output
    if isinstance(output, DeferredToolRequests):
        raised = requests_from(
            output,
            result.all_messages(),
            run_id=run.run_id,
            thread_id=run.thread_id,
            agent_path=run.path,
            now=now,
            new_id=lambda: new_id("req"),
            principal=run.principal,
            redact=built.redact,
            parent_call_id=run.parent_call_id,
        )
        await k.store.save_pause(
            run,
            owner=k.owner,
            pause_id=new_id("pau"),
            new_messages=new,
            requests=raised,
            now=now,
            executions=deps.executed,
        )
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
        owner=k.owner,
        new_messages=new,
        status="completed",
        output=output,
        error=None,
        now=now,
        executions=deps.executed,
    )
    return RunResult(run_id=run.run_id, thread_id=run.thread_id, agent=run.agent, status="completed", output=output)


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
        owner=k.owner,
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
    """Tell each service how its own approval request was decided, before the run continues (§2.4)."""
    notices = [
        service_notice(r, decisions[r.request_id].decision, principal=decisions[r.request_id].principal, at=k.clock())
        for r in requests
        if isinstance(r, ApprovalRequest) and r.service_request is not None and r.request_id in decisions
    ]
    if not notices or not built.notifier.configured:
        return
    audit = []
    for notice in notices:
        problem = await built.notifier.notify(notice)
        audit.append({"event": "service_notified", **notice, "delivered": problem is None, "problem": problem})
    await k.store.append_audit(audit)


def resume_plan_executing(requests: Sequence[Request], plan: ResumePlan) -> list[str]:
    """The approved requests of a pause: their calls run in the segment that consumes it."""
    from .._core.decisions import Approve

    return [
        r.request_id
        for r in requests
        if isinstance(r, ApprovalRequest) and isinstance(plan.decisions[r.request_id].decision, Approve)
    ]
