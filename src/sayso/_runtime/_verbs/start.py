"""The verb start: a new message on a thread runs its agent (or workflow), superseding a paused run.

A message on a thread whose run is paused skips that run's open requests, at every level of its
delegate tree, and starts a new run in the same commit that consumes the old pause, so two runs
never share a thread and nothing the old pause approved runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..._core.access import Principal
from ..._core.audit_events import audit_body
from ..._core.client_tools import check_client_tools
from ..._core.decisions import DecisionRecord, Via
from ..._core.ids import check_thread_id
from ..._core.limits import check_message
from ..._core.requests import ClientTool, DelegateRequest, Request
from ..._core.resume import SKIPPED_FOR_MESSAGE, Closer, open_requests, plan_resume
from ..._store import ThreadRecord
from ...exceptions import InvalidInput, ThreadBusy
from .. import _tree
from .._cycle import Cycle
from .._kernel import new_id
from .._results import RunResult
from .._runner import CallOptions, Start
from .rules import start_ask


async def start(
    c: Cycle,
    message: str,
    *,
    agent: str | None,
    thread_id: str | None,
    principal: Principal,
    client_tools: Sequence[ClientTool],
    options: CallOptions,
    run_id: str | None = None,
    on_start: Callable[[str, str], None] | None = None,
    via: Via | None = None,
) -> RunResult:
    """Send a user message and run the agent (or workflow) until it finishes or pauses.

    A paused run on the thread is superseded: its open requests are skipped by `principal`, through `via`.

    `on_start(run_id, thread_id)` hears that the message was taken: the run is written, every
    check passed, and what follows is the run's own outcome.

    Check (the message, the thread id the caller chose, its client tools: `check_message`, `check_thread_id`,
    `check_client_tools`) → read (the thread, in the transaction that starts the run) → check (the core's pure
    `check_thread`: who may message, which agent) → write (the run) → the runner of its kind runs it.

    Raises:
        InvalidInput: the message, the thread id or a client tool does not fit (`field` names which).
    """
    k = c.k
    check_message(message, k.limits)
    # What the caller chose is refused before anything is written: a thread stored under a name that is no id,
    # or a tool the store could not read back with its run, would break the thread for every interface.
    if thread_id is not None:
        check_thread_id(thread_id)
    check_client_tools(client_tools)
    now = k.clock()
    # An unknown agent is the client's mistake, refused before anything is written.
    entry = c.entry(agent or k.config.entry_agent)

    # One transaction reads the thread, starts the run on it and reads its history and the
    # principal's grants; a thread whose run is paused takes the longer road below.
    starting = k.run_start(
        thread_id=thread_id or new_id("thr"),
        owner=principal.name,
        agent=entry,
        prompt=message,
        now=now,
        run_id=run_id,
        client_tools=client_tools,
    )
    begun = await k.store.begin_run(
        starting,
        ask=start_ask(c, principal, agent),
        grants_of=principal.name if not options.host_keeps_grants and c.runner_named(entry).reads_grants else None,
    )
    if begun.run is not None:
        started = Start(prompt=message, history=begun.history, stored_grants=begun.grants)
        if on_start is not None:
            on_start(begun.run.run_id, begun.run.thread_id)
        return await c.runner(begun.run).start(begun.run, started, options)
    assert begun.thread is not None and begun.thread.active_run_id is not None
    return await _supersede(
        c,
        begun.thread,
        message,
        principal=principal,
        client_tools=client_tools,
        options=options,
        now=now,
        run_id=run_id,
        on_start=on_start,
        closer=Closer(principal.name, via),
    )


async def _supersede(
    c: Cycle,
    thread: ThreadRecord,
    message: str,
    *,
    principal: Principal,
    client_tools: Sequence[ClientTool],
    options: CallOptions,
    now: float,
    run_id: str | None,
    on_start: Callable[[str, str], None] | None,
    closer: Closer,
) -> RunResult:
    """A message on a thread whose run is paused: skip its open requests and start a new run in the same commit."""
    k = c.k
    runner = c.runner_named(thread.agent)
    runner.check(thread.agent)
    assert thread.active_run_id is not None
    active = await k.store.get_run(thread.active_run_id)
    if active.parent_run_id is not None:
        # Its run is a delegate's (or a workflow agent node's): superseding it would strand the run above it.
        chat = (await _tree.root(k, active)).thread_id
        raise InvalidInput(
            f"thread {thread.thread_id!r} is the thread of a delegate working for the chat {chat!r}; "
            f"send the message to {chat!r}",
            field="thread_id",
        )
    if active.status != "paused" or active.pause_id is None:
        raise ThreadBusy(active.run_id, f"thread {thread.thread_id!r} already has a run in progress")
    state = await k.store.pause_state(active.pause_id)
    requests: list[Request] = state.requests
    plan = plan_resume(
        active.run_id, requests, state.decisions, force=True, now=now, skip_reason=SKIPPED_FOR_MESSAGE, closer=closer
    )
    decisions: dict[str, DecisionRecord] = plan.decisions
    added: list[DecisionRecord] = plan.added
    for request in open_requests(requests, state.decisions):
        if isinstance(request, DelegateRequest):
            await c.remote.cancel_remote(await _tree.cancel_tree(k, request.child_run_id, SKIPPED_FOR_MESSAGE, closer))
    by_id = {r.request_id: r for r in requests}
    starting = k.run_start(
        thread_id=thread.thread_id,
        owner=principal.name,
        agent=thread.agent,
        prompt=message,
        now=now,
        run_id=run_id,
        client_tools=client_tools,
    )
    run = await k.store.start_run(
        starting,
        expect_active=thread.active_run_id,
        skips=added,
        audit=[audit_body(by_id[d.request_id], d) for d in added],
        supersede_pause=active.pause_id,
        durable=runner.durable_start,
    )
    k.events.decided(requests, added)
    if on_start is not None:
        on_start(run.run_id, run.thread_id)
    return await c.runner(run).start(run, Start(prompt=message, superseded=(requests, decisions)), options)
