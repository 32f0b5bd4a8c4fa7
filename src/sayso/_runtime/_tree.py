"""The delegate tree: runs below runs, advanced leaves first, paused and resumed as one.

See docs/concepts/pauses.md#nested-agents.

A delegate's run hangs under its parent's tool call (a `DelegateRequest` in the parent's pause).
A pause anywhere below pauses the top run; the requests a person sees are the open *leaves*.
Advancing a paused run advances every waiting delegate first; a delegate that finishes answers
its parent's call, and the parent resumes only when every call it waits on is answered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic_ai.exceptions import CallDeferred

from .._core.decisions import Accept, Answer, ClientResult, Decision, DecisionRecord, Provide, model_text
from .._core.requests import (
    ApprovalRequest,
    ClientTool,
    DelegateRequest,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    Request,
    shown_args,
)
from .._core.resume import SKIPPED_FOR_FORCE, open_requests, plan_resume
from .._engine.calls import Deferral
from .._engine.deferred import audit_body
from .._store import PauseState, RunRecord, RunRequests
from ..exceptions import PauseConsumed, RunConflict
from ._results import RunResult

if TYPE_CHECKING:
    from ._kernel import Kernel


async def result(k: Kernel, run_id: str) -> RunResult:
    """Where a run stands now, with the leaf requests it still waits on."""
    run = await k.store.get_run(run_id)
    waiting = await open_leaves(k, run) if run.status == "paused" else []
    return RunResult(
        run_id=run.run_id,
        thread_id=run.thread_id,
        agent=run.agent,
        status=run.status,
        output=run.output,
        requests=tuple(waiting),
        error=run.error,
    )


async def advance(
    k: Kernel, run: RunRecord, *, force: bool, state: PauseState | None = None, attempts: int = 3
) -> RunResult:
    """Carry a paused run on as far as its decisions allow, delegates first.

    A run resumes only when every call it waits on is answered (or `force` skips the rest);
    a delegate that paused again keeps its parent paused, without a model call. When a person
    decides a request while a forced resume was about to skip it, the resume starts over from
    the store (their decision counts), up to `attempts` times.

    Raises:
        PauseConsumed: another process resumed this pause first.
        RunConflict: decisions kept arriving while the resume was prepared.
    """
    from . import _remote, _step, _workflows

    assert run.pause_id is not None
    if run.parent_run_id is not None and run.agent in k.remote_urls:
        return await _remote.advance_remote(k, run, force=force)
    if _workflows.hosts(k, run.agent):
        return await _workflows.advance(k, run, force=force, state=state)
    state = state or await k.store.pause_state(run.pause_id)
    requests = state.requests
    decided = dict(state.decisions)
    for request in open_requests(requests, decided):
        if isinstance(request, DelegateRequest):
            answer = await _delegate_progress(k, request, force=force)
            if answer is not None:
                decided[request.request_id] = answer
    if open_requests(requests, decided) and not force:
        return await result(k, run.run_id)
    now = k.clock()
    plan = plan_resume(run.run_id, requests, decided, force=force, now=now)
    for skipped in plan.added:
        request = next(r for r in requests if r.request_id == skipped.request_id)
        if isinstance(request, DelegateRequest):
            await cancel_tree(k, request.child_run_id, SKIPPED_FOR_FORCE)
    approved = _step.resume_plan_executing(requests, plan)
    try:
        claim = await _step.consume(
            k, run, requests, plan, now=now, executing=approved, load_history=True, grants_of=run.principal or ""
        )
    except PauseConsumed:
        raise
    except RunConflict:
        fresh = await k.store.get_run(run.run_id)
        if attempts <= 1 or fresh.pause_id != run.pause_id:
            raise
        return await advance(k, fresh, force=force, attempts=attempts - 1)
    built = k.built(claim.run.agent)
    await _step.tell_services(k, built, requests, plan.decisions)
    return await _step.execute(
        k,
        built,
        claim.run,
        prompt=None,
        requests=requests,
        decisions=plan.decisions,
        marked=frozenset(approved),
        history=claim.history,
        stored_grants=claim.grants,
    )


async def _delegate_progress(k: Kernel, request: DelegateRequest, *, force: bool) -> DecisionRecord | None:
    """Advance a delegate's run; once it has finished, record its answer on the parent's call."""
    child = await k.store.get_run(request.child_run_id)
    if child.status == "paused":
        if await open_leaves(k, child) and not force:
            return None
        try:
            outcome = await advance(k, child, force=force)
        except PauseConsumed:
            return None
        if outcome.status in ("paused", "running"):
            return None
    else:
        outcome = await result(k, child.run_id)
    if outcome.status == "running":
        return None
    record = DecisionRecord(
        request_id=request.request_id,
        decision=ClientResult(value=await delegate_answer(k, outcome)),
        by="system",
        principal=None,
        decided_at=k.clock(),
    )
    await k.store.add_decisions([record])
    return record


async def delegate(k: Kernel, parent: RunRecord, target: str, task: str, call_id: str) -> str:
    """Run a delegate for a parent's tool call; if it pauses, the parent's call waits on it."""
    from . import _remote, _step

    if target in k.remote_urls:
        return await _remote.delegate_remote(k, parent, target, task, call_id)
    child = await start_child(k, parent, target, task, call_id, client_tools=parent.client_tools)
    outcome = await _step.execute(k, k.built(target), child, prompt=task, requests=[], decisions={}, history=[])
    if outcome.status == "paused":
        raise CallDeferred(metadata=Deferral(kind="delegate", child_run_id=child.run_id).as_metadata())
    return await delegate_answer(k, outcome)


async def start_child(
    k: Kernel, parent: RunRecord, target: str, task: str, call_id: str, *, client_tools: Sequence[ClientTool]
) -> RunRecord:
    """A delegate's run on a thread of its own, tied to the parent's call that handed it the work."""
    from ._kernel import new_id

    now = k.clock()
    return await k.store.start_run(
        thread_id=new_id("thr"),
        owner=parent.principal or "local",
        agent=target,
        run_id=new_id("run"),
        prompt=task,
        client_tools=client_tools,
        lease_owner=k.owner,
        lease_expires_at=now + k.lease_seconds,
        now=now,
        expect_active=None,
        parent_run_id=parent.run_id,
        parent_call_id=call_id,
        agent_path=f"{parent.path}/{target}",
    )


async def delegate_answer(k: Kernel, outcome: RunResult) -> str:
    """What the parent reads from a finished delegate: its answer, plus every answer it was given.

    See docs/concepts/pauses.md#nested-agents.

    The one place a coordinator hears what its delegate asked for (a question, a browser tool, a
    workflow input or an MCP form) and what came back, so it does not ask again. Approvals are left
    out: what an approved call did is in the delegate's own answer.
    """
    if outcome.status != "completed":
        return f"Error: the delegate {outcome.agent} {outcome.status}: {outcome.error or 'no answer'}"
    asked = await k.store.run_requests(outcome.run_id)
    notes = [
        note
        for r in asked.requests
        if (record := asked.decisions.get(r.request_id)) is not None
        and (note := answer_note(r, record.decision)) is not None
    ]
    if not notes:
        return outcome.output or ""
    return f"{outcome.output or ''}\n\n(Note: {outcome.agent} asked {'; '.join(notes)}.)"


def answer_note(request: Request, decision: Decision) -> str | None:
    """One answer a delegate received, in plain words; `None` for an approval or a delegate's call."""
    if isinstance(request, DelegateRequest | ApprovalRequest):
        return None
    if isinstance(request, QuestionRequest):
        if isinstance(decision, Answer):
            return "the person " + "; ".join(
                f"{q.question!r} → {', '.join(a for a in answer if a.strip())}"
                for q, answer in zip(request.questions, decision.answers, strict=True)
            )
        return f"the person {'; '.join(q.question for q in request.questions)!r} → {model_text(decision)}"
    if isinstance(request, InputRequest):
        asked = f"the person {request.message!r}"
    elif isinstance(request, ElicitationRequest):
        asked = f"the person, for the MCP server {request.server!r}, {request.message!r}"
    else:
        asked = f"the client to run {request.tool_name} {_compact(shown_args(request))}"
    return f"{asked} → {_outcome(decision)}"


def _outcome(decision: Decision) -> str:
    """What came back for one request, in a few words."""
    match decision:
        case ClientResult(value=value) | Provide(value=value):
            return _compact(value)
        case Accept(content=content):
            return "accepted" if content is None else f"accepted {_compact(content)}"
        case _:
            return model_text(decision) or decision.kind


def _compact(value: object, limit: int = 300) -> str:
    """A value as short JSON, cut at `limit` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


async def tree_requests(k: Kernel, run_id: str) -> RunRequests:
    """Every request a run and its delegates raised, oldest first, with the decisions taken."""
    own = await k.store.run_requests(run_id)
    requests = list(own.requests)
    decisions = dict(own.decisions)
    for request in own.requests:
        if isinstance(request, DelegateRequest):
            below = await tree_requests(k, request.child_run_id)
            requests.extend(below.requests)
            decisions.update(below.decisions)
    requests.sort(key=lambda r: r.created_at)
    return RunRequests(requests=requests, decisions=decisions)


async def root(k: Kernel, run: RunRecord) -> RunRecord:
    """The top-level run a (delegate) run belongs to."""
    while run.parent_run_id is not None:
        run = await k.store.get_run(run.parent_run_id)
    return run


async def open_leaves(k: Kernel, run: RunRecord) -> list[Request]:
    """The requests a person can answer anywhere below a paused run, delegates included."""
    if run.status != "paused" or run.pause_id is None:
        return []
    state = await k.store.pause_state(run.pause_id)
    return await leaves_in(k, state.requests, state.decisions)


async def leaves_in(k: Kernel, requests: Sequence[Request], decided: Mapping[str, DecisionRecord]) -> list[Request]:
    """The open leaves of one pause's requests, following delegates down."""
    leaves: list[Request] = []
    for request in open_requests(requests, decided):
        if isinstance(request, DelegateRequest):
            leaves.extend(await open_leaves(k, await k.store.get_run(request.child_run_id)))
        else:
            leaves.append(request)
    return leaves


async def cancel_tree(k: Kernel, run_id: str, reason: str) -> None:
    """Close a paused run and everything below it: every open request there is skipped with `reason`."""
    run = await k.store.get_run(run_id)
    if run.status != "paused" or run.pause_id is None:
        return
    state = await k.store.pause_state(run.pause_id)
    skips = plan_resume(run.run_id, state.requests, state.decisions, force=True, now=k.clock(), skip_reason=reason)
    for request in open_requests(state.requests, state.decisions):
        if isinstance(request, DelegateRequest):
            await cancel_tree(k, request.child_run_id, reason)
    by_id = {r.request_id: r for r in state.requests}
    await k.store.cancel_run(
        run, now=k.clock(), skips=skips.added, audit=[audit_body(by_id[d.request_id], d) for d in skips.added]
    )
    k.events.decided(state.requests, skips.added)
