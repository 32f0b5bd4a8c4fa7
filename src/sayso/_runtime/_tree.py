"""The delegate tree: runs below runs, read and closed as one; where a run stands, and what its parent reads.

See docs/concepts/pauses.md#nested-agents.

A delegate's run hangs under its parent's tool call (a `DelegateRequest` in the parent's pause).
A pause anywhere below pauses the top run; the requests a person sees are the open *leaves*.
Carrying a tree on (runs below first, each answering its parent's call) is the cycle's
(`_cycle.Cycle.advance`); this module reads the tree, starts a run below, and closes a tree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace

from .._core import access
from .._core.access import LOCAL_NAME, Principal
from .._core.audit_events import audit_body
from .._core.decisions import Accept, Answer, ClientResult, Decision, DecisionRecord, Provide
from .._core.model_text import model_text
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
from .._core.resume import Closer, open_requests, plan_resume
from .._store import RunRecord, RunRequests
from ._kernel import Kernel, new_id
from ._results import RunResult


async def result(k: Kernel, run_id: str) -> RunResult:
    """Where a run stands now, with the leaf requests it still waits on."""
    run = await k.store.get_run(run_id)
    waiting = await open_leaves(k, run) if run.status == "paused" else []
    routed = [r.request_id for r in waiting if r.routing is not None]
    found = standing(run, waiting)
    return replace(found, votes=await k.store.votes(routed)) if routed else found


def shown_to(result: RunResult, who: Principal) -> RunResult:
    """`result` as `who` sees it: only the open requests they may read (`access.seen_by`), and their votes."""
    shown = tuple(access.seen_by(who, result.requests))
    if len(shown) == len(result.requests):
        return result
    ids = {r.request_id for r in shown}
    return replace(result, requests=shown, votes={r: v for r, v in result.votes.items() if r in ids})


def standing(run: RunRecord, waiting: Sequence[Request] = ()) -> RunResult:
    """Where `run` stands as its record says, waiting on the leaf requests `waiting`."""
    return RunResult(
        run_id=run.run_id,
        thread_id=run.thread_id,
        agent=run.agent,
        status=run.status,
        output=run.output,
        requests=tuple(waiting),
        error=run.error,
    )


async def start_child(
    k: Kernel,
    parent: RunRecord,
    agent: str,
    task: str,
    *,
    call_id: str,
    agent_path: str,
    client_tools: Sequence[ClientTool],
    run_id: str | None = None,
) -> RunRecord:
    """A run below `parent` (a delegate's, an agent node's) on a thread of its own, tied to the call that asked."""
    start = k.run_start(
        thread_id=new_id("thr"),
        owner=parent.principal or LOCAL_NAME,
        agent=agent,
        prompt=task,
        now=k.clock(),
        run_id=run_id,
        client_tools=client_tools,
        below=(parent, call_id, agent_path),
    )
    return await k.store.start_run(start, expect_active=None)


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


async def cancel_tree(k: Kernel, run_id: str, reason: str, closer: Closer | None) -> list[RunRecord]:
    """Close a paused run and everything below it: every open request there is skipped with `reason`, by `closer`.

    The runs closed, as they were before (a remote delegate's proxy among them is its caller's to tell its
    remote agent: `RemoteRunner.cancel_remote`).
    """
    run = await k.store.get_run(run_id)
    if run.status != "paused" or run.pause_id is None:
        return []
    state = await k.store.pause_state(run.pause_id)
    skips = plan_resume(
        run.run_id, state.requests, state.decisions, force=True, now=k.clock(), skip_reason=reason, closer=closer
    )
    closed = [run]
    for request in open_requests(state.requests, state.decisions):
        if isinstance(request, DelegateRequest):
            closed.extend(await cancel_tree(k, request.child_run_id, reason, closer))
    by_id = {r.request_id: r for r in state.requests}
    await k.store.cancel_run(
        run, now=k.clock(), skips=skips.added, audit=[audit_body(by_id[d.request_id], d) for d in skips.added]
    )
    k.events.decided(state.requests, skips.added)
    return closed
