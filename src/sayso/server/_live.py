"""Live updates: `GET /v1/events`, what changes for the caller as server-sent events.

The stream follows `Sayso.watch`, so a request decided from the CLI in another process, a
follow-up request opened after an answer, or a run that moved on reaches every open page within
a look of the store (a second by default), scoped to what the caller may see. Events:

- `ready`: watching has begun; read the current state now and nothing after it is missed;
- `request.opened` (a request as `request_json` shows it);
- `request.closed` (the request, where it stands, its decision, who took it, `via` what, when);
- `run.changed` (the watched thread's active run and its status, and its last message batch);
- `threads.changed` (the caller's thread list changed);
- `end`: the stream closes (it lives for a while, or until the server stops); connect again.

A comment line keeps quiet connections open. One stream is short-lived on purpose: a server
never waits long for it to end when it stops, and a client that reconnects reads `ready` again.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import assert_never

import anyio

from .._core.access import Principal
from .._runtime import (
    Change,
    RequestClosed,
    RequestOpened,
    RunChanged,
    Sayso,
    ThreadsChanged,
    request_json,
    request_state_json,
)
from ._stream import format_event


@dataclass(frozen=True, kw_only=True)
class LiveSettings:
    """How the live stream looks at the store and how long one stream lasts."""

    every: float = 1.0
    """Seconds between looks at the store (changes made by this server are seen at once)."""
    lasts: float = 120.0
    """Seconds one stream stays open before it says `end` (clients connect again)."""
    keepalive: float = 15.0
    """Seconds of quiet after which a comment line is sent, so proxies keep the connection."""


LIVE_EVENT_NAMES = ["ready", "request.opened", "request.closed", "run.changed", "threads.changed", "end"]


def change_event(change: Change) -> tuple[str, Mapping[str, object]]:
    """One change as an event name and its JSON data."""
    match change:
        case RequestOpened():
            return change.kind, request_json(change.request)
        case RequestClosed():
            return change.kind, request_state_json(change.state, now=time.time())
        case RunChanged():
            return change.kind, {
                "thread_id": change.thread_id,
                "run_id": change.run_id,
                "status": change.status,
                "last_seq": change.last_seq,
            }
        case ThreadsChanged():
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
) -> AsyncIterator[str]:
    """The event stream of one connection: `ready`, then what changes, then `end`."""
    started = last_sent = anyio.current_time()
    first = True
    async with aclosing(sayso.watch(principal=principal, thread_id=thread_id, every=settings.every)) as changes:
        async for batch in changes:
            now = anyio.current_time()
            if first:
                # The first look is the baseline: the client reads the state now, and misses nothing after it.
                yield "retry: 1000\n" + format_event("ready", {"principal": principal.name, "thread_id": thread_id})
                first = False
            for change in batch:
                yield format_event(*change_event(change))
                last_sent = now
            if not batch and now - last_sent >= settings.keepalive:
                yield ": keep-alive\n\n"
                last_sent = now
            if closing() or now - started >= settings.lasts:
                yield format_event("end", {"reconnect": not closing()})
                return
