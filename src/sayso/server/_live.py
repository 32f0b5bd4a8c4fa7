"""Live updates: `GET /v1/events`, what changes for the caller as server-sent events.

The stream follows `Sayso.watch`, so a request decided from the CLI in another process, a
follow-up request opened after an answer, or a run that moved on reaches every open page within
a look of the store (a second by default), scoped to what the caller may see. Events:

- `ready`: watching has begun; read the current state now and nothing after it is missed;
- `request.opened` (a request as `request_json` shows it);
- `request.voted` (a vote was cast on an open request: as `request.closed`, its `request.quorum` saying
  where it stands now, `1 of 2, waiting for finance`);
- `request.closed` (the request, where it stands, its decision, who took it, `via` what, when);
- `run.changed` (the watched thread's active run and its status, and its last message batch);
- `threads.changed` (the caller's thread list changed);
- `grants.changed` (a remembered approval the caller sees was given or revoked: read `GET /v1/grants` again);
- `error`: the store stopped answering (a `store-unavailable` problem, as every endpoint answers it),
  followed by `end`;
- `end`: the stream closes (it lives for a while, or until the server stops); its `reconnect` is
  always true: a client connects again after every `end` (a server that stops is most often
  restarting, or one replica of several leaving) and reads `ready` again.

The first look at the store is taken before the response starts, so a store that does not answer
is a 503 problem, as on every other endpoint, and never a stream that breaks once it began.

sse-starlette writes the stream: a comment line (its ping) keeps quiet connections open, and a
client that leaves ends its stream. One stream is short-lived on purpose: a server
never waits long for it to end when it stops, and a client that reconnects reads `ready` again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import assert_never

import anyio
from sse_starlette import ServerSentEvent

from .._core.access import Principal
from .._runtime import (
    Change,
    GrantsChanged,
    RequestClosed,
    RequestOpened,
    RequestVoted,
    RunChanged,
    Sayso,
    ThreadsChanged,
    request_json,
    request_state_json,
)
from ._problems import problem_for
from ._stream import sse_event

logger = logging.getLogger("sayso.server")


@dataclass(frozen=True, kw_only=True)
class LiveSettings:
    """How the live stream looks at the store and how long one stream lasts."""

    every: float = 1.0
    """Seconds between looks at the store (changes made by this server are seen at once)."""
    lasts: float = 120.0
    """Seconds one stream stays open before it says `end` (clients connect again)."""
    keepalive: float = 15.0
    """Seconds between comment lines (sse-starlette's pings), so proxies keep the connection."""


LIVE_EVENT_NAMES = [
    "ready",
    "request.opened",
    "request.voted",
    "request.closed",
    "run.changed",
    "threads.changed",
    "grants.changed",
    "error",
    "end",
]


def change_event(change: Change) -> tuple[str, Mapping[str, object]]:
    """One change as an event name and its JSON data."""
    match change:
        case RequestOpened():
            return change.kind, request_json(change.request)
        case RequestClosed() | RequestVoted():
            return change.kind, request_state_json(change.state, now=time.time())
        case RunChanged():
            return change.kind, {
                "thread_id": change.thread_id,
                "run_id": change.run_id,
                "status": change.status,
                "last_seq": change.last_seq,
            }
        case ThreadsChanged() | GrantsChanged():
            return change.kind, {}
        case _:
            assert_never(change)


async def live_events(
    sayso: Sayso,
    principal: Principal,
    *,
    thread_id: str | None,
    settings: LiveSettings,
    closing: Callable[[], bool],
) -> AsyncIterator[ServerSentEvent]:
    """The event stream of one connection (`ready`, then what changes, then `end`), its first look already taken.

    Raises:
        StoreError: the store did not answer the first look: nothing was streamed yet (a 503).
    """
    changes = sayso.watch(principal=principal, thread_id=thread_id, every=settings.every)
    try:
        first = await anext(changes)
    except BaseException:
        await changes.aclose()
        raise
    return _events(changes, first, principal=principal, thread_id=thread_id, settings=settings, closing=closing)


async def _events(
    changes: AsyncGenerator[list[Change], None],
    first: list[Change],
    *,
    principal: Principal,
    thread_id: str | None,
    settings: LiveSettings,
    closing: Callable[[], bool],
) -> AsyncIterator[ServerSentEvent]:
    # The first look is the baseline: the client reads the state now, and misses nothing after it.
    started = anyio.current_time()
    async with aclosing(changes):
        yield sse_event("ready", {"principal": principal.name, "thread_id": thread_id}, retry_ms=1000)
        for change in first:
            yield sse_event(*change_event(change))
        try:
            async for batch in changes:
                for change in batch:
                    yield sse_event(*change_event(change))
                if closing() or anyio.current_time() - started >= settings.lasts:
                    # A server that stops is most often restarting, or one replica of several leaving: the client
                    # follows on from the next one it reaches, as after any `end`.
                    yield sse_event("end", {"reconnect": True})
                    return
        except Exception as exc:
            # The response began: what stopped the watch is said as a problem and the stream ends; reconnecting
            # answers a 503 while the store stays away.
            problem = problem_for(exc)
            logger.error("GET /v1/events stopped", exc_info=exc)
            yield sse_event("error", problem.body())
            yield sse_event("end", {"reconnect": True})
