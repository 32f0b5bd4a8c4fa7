"""Watching what changes for one principal: requests opened, voted on and closed, runs advancing, threads started.

A paused run holds nothing in memory, and a decision may come from another process on the same
store (the CLI, a second server): what changed is known only to the store. Every such change
writes an event to the store's outbox in its own commit, so a watch remembers where it stopped
there and at each look reads only the events since (`RunStore.events_after`), with the requests
whose time ran out since its last look (`requests_expired`: nothing is written when that
happens). A look so costs the same however many requests are open. Which of those events concern
the principal it asks the runtime's own reading verb `request`: a request opened, voted on or
closed reaches whoever may see it (its thread's owner too, when a routed rule leaves the deciding to
others), by the one access rule that applies everywhere. Their threads and the
thread they look at are read again at each look and compared with the one before. Grants write no
outbox event, but every grant given or revoked is audited in its own commit: when the audit log's
head moved, the grants the principal sees (by `access.sees_grant`) are read again and compared. It
looks every `every` seconds, and at once when this process announces a change itself.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

import anyio

from .._core.access import Principal
from .._core.audit import AuditHead
from .._core.requests import DelegateRequest, Request, RuleTerms
from .._store import FEED_PAGE, FeedEvent, RequestState, RunStatus
from ..exceptions import RequestNotFound, RunNotFound, ThreadNotFound
from ._feed import Feed
from ._kernel import Kernel
from ._reading import Reading
from ._results import request_status

_STILL_OPEN = ("request.opened", "request.escalated", "request.voted")
"""The events about a request that leave it open: said to whoever may see it while it is open."""

START_WINDOW = 100
"""Positions below the head a watch starts from, so that a change committing as it starts (its position
taken before the head was read, on PostgreSQL) is still heard of."""

WATCHED_THREADS = 50
"""How many of the principal's newest threads a watch follows for new threads and runs starting or ending."""


@dataclass(frozen=True, kw_only=True)
class RequestOpened:
    """A request the principal may see was opened (for them to decide, or to follow on their own thread)."""

    kind: Literal["request.opened"] = "request.opened"
    request: Request


@dataclass(frozen=True, kw_only=True)
class RequestClosed:
    """A request stopped waiting: decided (by whom, through which interface), expired, or closed with its run."""

    kind: Literal["request.closed"] = "request.closed"
    state: RequestState


@dataclass(frozen=True, kw_only=True)
class RequestVoted:
    """A vote was cast on an open request the principal may see: where its quorum stands now (`state.votes`)."""

    kind: Literal["request.voted"] = "request.voted"
    state: RequestState


@dataclass(frozen=True, kw_only=True)
class RunChanged:
    """The watched thread moved on: a run started, paused, resumed or ended, or its history grew."""

    kind: Literal["run.changed"] = "run.changed"
    thread_id: str
    run_id: str | None
    """The thread's active run (running or paused); `None` once it ended."""
    status: RunStatus | None
    """Where the active run stands; `None` when none is active."""
    last_seq: int
    """The position of the thread's newest stored batch of messages."""


@dataclass(frozen=True, kw_only=True)
class ThreadsChanged:
    """The principal's list of threads changed: a thread started, or a run on one started or ended."""

    kind: Literal["threads.changed"] = "threads.changed"


@dataclass(frozen=True, kw_only=True)
class GrantsChanged:
    """A remembered approval the principal sees was given or revoked (here, in another process, or by the CLI)."""

    kind: Literal["grants.changed"] = "grants.changed"


Change: TypeAlias = RequestOpened | RequestClosed | RequestVoted | RunChanged | ThreadsChanged | GrantsChanged
"""Anything a watch reports."""


@dataclass(frozen=True, kw_only=True)
class _Thread:
    run_id: str | None
    status: RunStatus | None
    last_seq: int


@dataclass(frozen=True, kw_only=True)
class _Shown:
    """What a watch compares from one look to the next: the principal's threads, and the thread they look at."""

    threads: dict[str, str | None]
    thread: _Thread | None


async def watch(
    app: Reading, k: Kernel, *, principal: Principal, thread_id: str | None, every: float
) -> AsyncGenerator[list[Change], None]:
    """Yield what changed for `principal`, one list per look: first an empty one once watching has begun.

    Each later look yields the changes since the one before (an empty list when nothing changed),
    so the caller can also tell that the watch is alive.
    """
    woken = [anyio.Event()]

    def wake() -> None:
        woken[0].set()

    k.events.watchers.add(wake)
    try:
        head = (await k.store.events_after(None)).head
        feed = Feed(after=max(0, head - START_WINDOW), looked_at=k.clock())
        feed.take((await k.store.events_after(feed.after, limit=START_WINDOW)).events, feed.looked_at)
        before = await _shown(app, principal, thread_id)
        grants = await _grants(app, k, principal)
        yield []
        while True:
            with anyio.move_on_after(every):
                await woken[0].wait()
            woken[0] = anyio.Event()
            # The thread first: a run that moved on was decided before, so the decision is among the events read next.
            after = await _shown(app, principal, thread_id)
            news, expired = await _read(k, feed)
            changes: list[Change] = [*await _closed(app, principal, feed, news, expired)]
            if thread_id is not None and after.thread != before.thread and after.thread is not None:
                mark = after.thread
                changes.append(
                    RunChanged(thread_id=thread_id, run_id=mark.run_id, status=mark.status, last_seq=mark.last_seq)
                )
            changes += await _opened_and_voted(app, principal, news, k.clock())
            if after.threads != before.threads:
                changes.append(ThreadsChanged())
            if (audited := await k.store.audit_head()) != grants.head:
                seen = await _grants(app, k, principal, head=audited)
                if seen.ids != grants.ids:
                    changes.append(GrantsChanged())
                grants = seen
            yield changes
            before = after
    finally:
        k.events.watchers.discard(wake)


async def _read(k: Kernel, feed: Feed) -> tuple[list[FeedEvent], list[str]]:
    """The outbox's events since the last look, a page at a time, and the requests whose time ran out since."""
    now = k.clock()
    news: list[FeedEvent] = []
    since: float | None = None
    at = feed.after
    while True:
        page = await k.store.events_after(at, limit=FEED_PAGE)
        if not page.events and page.head < feed.after:
            since, at = feed.restart(), 0
            continue
        news += feed.take(page.events, now)
        if len(page.events) < FEED_PAGE:
            break
        at = page.events[-1].seq
    expired = await k.store.requests_expired(after=feed.looked_at, until=now)
    feed.looked_at = now
    return [e for e in news if since is None or e.created_at >= since], expired


async def _closed(
    app: Reading, principal: Principal, feed: Feed, news: Sequence[FeedEvent], expired: Sequence[str]
) -> list[RequestClosed]:
    """The requests the principal may see that were decided, or whose time ran out, oldest first."""
    decided = {e.request_id for e in news if e.kind == "request.decided"}
    closed: list[RequestClosed] = []
    for request_id in dict.fromkeys([*(e.request_id for e in news if e.kind == "request.decided"), *expired]):
        if request_id in feed.closed:  # said when its time ran out; this is the sweep recording it
            feed.closed.discard(request_id)
            continue
        try:
            state = await app.request(request_id, principal=principal)
        except RequestNotFound:
            continue
        if isinstance(state.request, DelegateRequest):
            continue
        if request_id not in decided:
            if state.decision is not None:
                continue  # decided meanwhile: its event is the next look's
            feed.closed.add(request_id)
        closed.append(RequestClosed(state=state))
    return sorted(closed, key=lambda c: c.state.request.created_at)


async def _opened_and_voted(app: Reading, principal: Principal, news: Sequence[FeedEvent], now: float) -> list[Change]:
    """Open requests the principal may see that were opened, or whose escalation made them an approver, then votes.

    Who hears of a request is who may read it (`Reading.request`, the one rule of `access.may_see_request`):
    its thread's owner and their approvers, and its routed approvers, whoever of them may decide it.
    """
    shown: list[RequestState] = []
    for request_id in dict.fromkeys(e.request_id for e in news if e.kind in _STILL_OPEN):
        try:
            state = await app.request(request_id, principal=principal)
        except RequestNotFound:
            continue
        if not isinstance(state.request, DelegateRequest) and request_status(state, now=now) == "open":
            shown.append(state)
    shown.sort(key=lambda s: (s.request.created_at, s.request.request_id))
    opened = {e.request_id for e in news if e.kind == "request.opened"}
    widened = [(e.request_id, e.step) for e in news if e.kind == "request.escalated" and e.step is not None]
    changes: list[Change] = []
    for state in shown:
        rid = state.request.request_id
        if rid in opened or any(r == rid and _adds(state.request, principal, step) for r, step in widened):
            changes.append(RequestOpened(request=state.request))
    said = {c.request.request_id for c in changes if isinstance(c, RequestOpened)}
    voted = {e.request_id for e in news if e.kind == "request.voted"}
    changes += [RequestVoted(state=s) for s in shown if s.request.request_id in voted - said]
    return changes


def _adds(request: Request, principal: Principal, step: int) -> bool:
    """Whether escalation step `step` of `request` named `principal` among its approvers: it is new in their inbox."""
    if not isinstance(request, RuleTerms) or not 0 <= step < len(request.escalation):
        return False
    return any(approver.name == principal.name for approver in request.escalation[step].added)


@dataclass(frozen=True, kw_only=True)
class _Grants:
    """The grants a principal sees, as of an audit head (a grant given or revoked moves it)."""

    head: AuditHead | None
    ids: frozenset[str]


async def _grants(app: Reading, k: Kernel, principal: Principal, *, head: AuditHead | None = None) -> _Grants:
    # The head first: a grant that commits between the two reads is seen again at the next look, never missed.
    at = head if head is not None else await k.store.audit_head()
    return _Grants(head=at, ids=frozenset(g.grant_id for g in await app.grants(principal=principal)))


async def _shown(app: Reading, principal: Principal, thread_id: str | None) -> _Shown:
    threads = {t.thread_id: t.active_run_id for t in await app.threads(principal=principal, limit=WATCHED_THREADS)}
    return _Shown(threads=threads, thread=await _thread(app, principal, thread_id))


async def _thread(app: Reading, principal: Principal, thread_id: str | None) -> _Thread | None:
    if thread_id is None:
        return None
    try:
        record = await app.thread(thread_id, principal=principal)
    except ThreadNotFound:
        return _Thread(run_id=None, status=None, last_seq=0)
    run_id = record.active_run_id
    status: RunStatus | None = None
    if run_id is not None:
        try:
            status = (await app.run_record(run_id)).status
        except RunNotFound:
            status = None
    return _Thread(run_id=run_id, status=status, last_seq=await app.last_seq(thread_id))
