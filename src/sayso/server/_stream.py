"""Server-sent events for a streamed run.

The runtime reports a run when it pauses or finishes, so the stream says `status` at once,
`progress` while the run works, then what the run did (`tool_call`, `decision` for a call that
waited on one, `tool_result`), the
answer in `text_delta` chunks or each `request` of the pause, and last the whole `run`. The
run itself belongs to the server, not to the connection: a client that leaves early does not
cancel it, and its pause is persisted as usual.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import AsyncIterator, Mapping

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream
from sse_starlette import EventSourceResponse, ServerSentEvent

from .._core.access import Principal
from .._runtime import RunResult, Sayso, request_json, run_json
from ._problems import problem_for
from ._schemas_in import RunIn
from ._schemas_out import entry_json

logger = logging.getLogger("sayso.server")

PROGRESS_SECONDS = 1.0
"""How often a `progress` event is sent while the run works."""

RUN_PING_SECONDS = 15.0
"""How often a run's stream sends a comment line (its `progress` events already keep it busy)."""

_WORDS = re.compile(r"\s*\S+|\s+")

Event = tuple[str, Mapping[str, object]]
"""An event's name and its data: any JSON object (a problem, a run, a transcript line)."""

SSE_HEADERS = {"Cache-Control": "no-cache"}
"""What every stream's response says besides sse-starlette's own headers (it adds `X-Accel-Buffering: no`)."""


async def start_run(sayso: Sayso, principal: Principal, body: RunIn) -> RunResult:
    """The run a `POST /v1/runs` body asks for, as `principal`: streamed or answered in one piece."""
    return await sayso.run(
        body.message,
        agent=body.agent,
        thread_id=body.thread_id,
        principal=principal,
        client_tools=[t.to_client_tool() for t in body.client_tools],
    )


def sse_event(name: str, data: Mapping[str, object], *, retry_ms: int | None = None) -> ServerSentEvent:
    """One event: its name and its data as compact JSON."""
    return ServerSentEvent(json.dumps(data, separators=(",", ":")), event=name, retry=retry_ms, sep="\n")


def event_stream(
    events: AsyncIterator[ServerSentEvent],
    *,
    ping_seconds: float,
    shutdown: anyio.Event | None = None,
    grace_seconds: float = 0,
) -> EventSourceResponse:
    """The `text/event-stream` response of `events`, with a comment line after every `ping_seconds`.

    When the server is told to stop, sse-starlette sets `shutdown` and gives `events` `grace_seconds`
    to say goodbye before it cuts the stream.
    """
    return EventSourceResponse(
        events,
        headers=SSE_HEADERS,
        ping=ping_seconds,
        sep="\n",
        shutdown_event=shutdown,
        shutdown_grace_period=grace_seconds,
    )


async def stream_run(
    sayso: Sayso, tasks: TaskGroup, principal: Principal, body: RunIn
) -> AsyncIterator[ServerSentEvent]:
    """Start a run in the server's task group `tasks` and yield its events as they come."""
    send, receive = anyio.create_memory_object_stream[Event](max_buffer_size=math.inf)
    tasks.start_soon(_work, sayso, principal, body, send)
    yield sse_event("status", {"status": "running", "thread_id": body.thread_id, "agent": body.agent})
    started = anyio.current_time()
    async with receive:
        while True:
            with anyio.move_on_after(PROGRESS_SECONDS) as waited:
                try:
                    name, data = await receive.receive()
                except anyio.EndOfStream:
                    return
            if waited.cancelled_caught:
                elapsed = round(anyio.current_time() - started, 1)
                yield sse_event("progress", {"status": "running", "elapsed": elapsed})
                continue
            yield sse_event(name, data)


async def _work(sayso: Sayso, principal: Principal, body: RunIn, send: MemoryObjectSendStream[Event]) -> None:
    def put(name: str, data: Mapping[str, object]) -> None:
        try:
            send.send_nowait((name, data))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the client left; the run carries on and its outcome is in the store

    with send:
        try:
            before = await sayso.last_seq(body.thread_id) if body.thread_id else 0
            result = await start_run(sayso, principal, body)
            entries = await sayso.transcript(result.thread_id, principal=principal, after_seq=before)
        except Exception as exc:
            problem = problem_for(exc)
            if problem.status >= 500:
                logger.error("streamed run failed", exc_info=exc)
            put("error", problem.body())
            return
        for entry in entries:
            if entry.run_id != result.run_id:
                continue
            call = {"tool_name": entry.tool_name, "tool_call_id": entry.tool_call_id}
            if entry.role == "tool_call":
                put("tool_call", {**call, "args": entry.args})
            elif entry.role == "decision":
                put("decision", {**call, "decision": entry_json(entry)["decision"]})
            elif entry.role == "tool_result":
                put("tool_result", {**call, "text": entry.text})
        if result.output:
            for chunk in _WORDS.findall(result.output):
                put("text_delta", {"delta": chunk})
        for request in result.requests:
            put("request", request_json(request))
        put("run", run_json(result))
