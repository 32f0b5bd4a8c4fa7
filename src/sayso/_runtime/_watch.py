"""Watching what changes for one principal: requests opened and closed, runs advancing, threads started.

A paused run holds nothing in memory, and a decision may come from another process on the same
store (the CLI, a second server): what changed is known only to the store. So a watch reads a
small snapshot of what the principal may see — the open requests of their inbox and how many votes
each has, their threads, and the thread they look at — through the runtime's own reading verbs (the access rule applies
as everywhere), compares it with the one before, and says what changed. It reads again every
`every` seconds, and at once when this process announces a change itself.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Literal, TypeAlias

import anyio

from .._core.access import Principal
from .._core.requests import Request
from .._store import InboxFilter, RequestState, RunStatus
from ..exceptions import RequestNotFound, RunNotFound, ThreadNotFound
from ._events import Events
from ._reading import Reading

WATCHED_REQUESTS = 1000
"""How many open requests a watch follows (oldest first); later ones are seen once older ones close."""

WATCHED_THREADS = 50
"""How many of the principal's newest threads a watch follows for new threads and runs starting or ending."""


@dataclass(frozen=True, kw_only=True)
class RequestOpened:
    """A request the principal may decide was opened."""

    kind: Literal["request.opened"] = "request.opened"
    request: Request


@dataclass(frozen=True, kw_only=True)
class RequestClosed:
    """A request stopped waiting: decided (by whom, through which interface), expired, or closed with its run."""

    kind: Literal["request.closed"] = "request.closed"
    state: RequestState


@dataclass(frozen=True, kw_only=True)
class RequestVoted:
    """A vote was cast on an open request the principal may decide: where its quorum stands now (`state.votes`)."""

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


Change: TypeAlias = RequestOpened | RequestClosed | RequestVoted | RunChanged | ThreadsChanged
"""Anything a watch reports."""


@dataclass(frozen=True, kw_only=True)
class _Thread:
    run_id: str | None
    status: RunStatus | None
    last_seq: int


@dataclass(frozen=True, kw_only=True)
class _Snapshot:
    requests: dict[str, Request]
    votes: dict[str, int]
    """How many votes each open routed request has: one more is a `RequestVoted`."""
    threads: dict[str, str | None]
    thread: _Thread | None


async def watch(
    app: Reading, events: Events, *, principal: Principal, thread_id: str | None, every: float
) -> AsyncGenerator[list[Change], None]:
    """Yield what changed for `principal`, one list per look: first an empty one once watching has begun.

    Each later look yields the changes since the one before (an empty list when nothing changed),
    so the caller can also tell that the watch is alive.
    """
    woken = [anyio.Event()]

    def wake() -> None:
        woken[0].set()

    events.watchers.add(wake)
    try:
        before = await _snapshot(app, principal, thread_id)
        yield []
        while True:
            with anyio.move_on_after(every):
                await woken[0].wait()
            woken[0] = anyio.Event()
            after = await _snapshot(app, principal, thread_id)
            yield await _changes(app, principal, thread_id, before, after)
            before = after
    finally:
        events.watchers.discard(wake)


async def _snapshot(app: Reading, principal: Principal, thread_id: str | None) -> _Snapshot:
    requests: dict[str, Request] = {}
    votes: dict[str, int] = {}
    cursor: str | None = None
    while len(requests) < WATCHED_REQUESTS:
        page = await app.inbox(InboxFilter(), principal=principal, limit=200, cursor=cursor)
        requests.update((r.request_id, r) for r in page.requests)
        votes.update((request_id, len(cast)) for request_id, cast in page.votes.items())
        cursor = page.next_cursor
        if cursor is None:
            break
    threads = {t.thread_id: t.active_run_id for t in await app.threads(principal=principal, limit=WATCHED_THREADS)}
    return _Snapshot(requests=requests, votes=votes, threads=threads, thread=await _thread(app, principal, thread_id))


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


async def _changes(
    app: Reading, principal: Principal, thread_id: str | None, before: _Snapshot, after: _Snapshot
) -> list[Change]:
    changes: list[Change] = []
    for request_id in before.requests.keys() - after.requests.keys():
        try:
            changes.append(RequestClosed(state=await app.request(request_id, principal=principal)))
        except RequestNotFound:
            continue
    changes.sort(key=lambda c: c.state.request.created_at if isinstance(c, RequestClosed) else 0.0)
    if thread_id is not None and after.thread != before.thread and after.thread is not None:
        mark = after.thread
        changes.append(RunChanged(thread_id=thread_id, run_id=mark.run_id, status=mark.status, last_seq=mark.last_seq))
    changes.extend(RequestOpened(request=r) for r in after.requests.values() if r.request_id not in before.requests)
    for request_id, count in after.votes.items():
        if request_id in before.requests and count != before.votes.get(request_id, 0):
            try:
                changes.append(RequestVoted(state=await app.request(request_id, principal=principal)))
            except RequestNotFound:
                continue
    if after.threads != before.threads:
        changes.append(ThreadsChanged())
    return changes
