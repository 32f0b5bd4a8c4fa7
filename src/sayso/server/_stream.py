"""Server-sent events for a streamed run.

The response waits until the message is taken (the runtime's `on_start`): a message the runtime
refuses (403, 409, 422) is answered with its problem and status, as without streaming. Once it is
taken, the stream says `status` (with the run's and the thread's ids) at once, `progress` while the
run works, then what the run did (`tool_call`, `decision` for a call that waited on one,
`tool_result`), the answer in `text_delta` chunks or each `request` of the pause, and last the
whole `run` (or `error`, a problem document, when the run itself failed). The
run itself belongs to the server, not to the connection: a client that leaves early does not
cancel it, and its pause is persisted as usual.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.responses import Response

from .._core.access import Principal
from .._core.decisions import Via
from .._runtime import RunResult, Sayso, TranscriptEntry, request_json, run_json
from ._problems import Problem, problem_for, problem_response
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


async def start_run(
    sayso: Sayso,
    principal: Principal,
    body: RunIn,
    on_start: Callable[[str, str], None] | None = None,
    *,
    via: Via,
) -> RunResult:
    """The run a `POST /v1/runs` body asks for, as `principal` through `via`: streamed or answered in one piece."""
    return await sayso.run(
        body.message,
        agent=body.agent,
        thread_id=body.thread_id,
        principal=principal,
        client_tools=[t.to_client_tool() for t in body.client_tools],
        on_start=on_start,
        via=via,
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


@dataclass
class _Taken:
    """Whether a streamed message was taken: set once the run starts, or once it was refused (`refused`)."""

    settled: anyio.Event = field(default_factory=anyio.Event)
    refused: Problem | None = None


async def stream_run(sayso: Sayso, tasks: TaskGroup, principal: Principal, body: RunIn, *, via: Via) -> Response:
    """Start a run in the server's task group `tasks`; once the message is taken, stream its events as they come.

    A message refused before the run starts (not the thread's owner, a run in progress, an unknown
    agent) is its problem response, with its status: nothing was streamed yet.
    """
    send, receive = anyio.create_memory_object_stream[Event](max_buffer_size=math.inf)
    taken = _Taken()
    tasks.start_soon(_work, sayso, principal, body, send, taken, via)
    await taken.settled.wait()
    if taken.refused is not None:
        receive.close()
        return problem_response(taken.refused)
    return event_stream(_events(receive), ping_seconds=RUN_PING_SECONDS)


async def _events(receive: MemoryObjectReceiveStream[Event]) -> AsyncIterator[ServerSentEvent]:
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


async def _work(
    sayso: Sayso,
    principal: Principal,
    body: RunIn,
    send: MemoryObjectSendStream[Event],
    taken: _Taken,
    via: Via,
) -> None:
    def put(name: str, data: Mapping[str, object]) -> None:
        try:
            send.send_nowait((name, data))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the client left; the run carries on and its outcome is in the store

    def started(run_id: str, thread_id: str) -> None:
        put("status", {"status": "running", "run_id": run_id, "thread_id": thread_id, "agent": body.agent})
        taken.settled.set()

    with send:
        try:
            before = await sayso.last_seq(body.thread_id) if body.thread_id else 0
            result = await start_run(sayso, principal, body, on_start=started, via=via)
            entries = await sayso.transcript(result.thread_id, principal=principal, after_seq=before)
        except Exception as exc:
            problem = problem_for(exc)
            if problem.status >= 500:
                logger.error("streamed run failed", exc_info=exc)
            if taken.settled.is_set():
                put("error", problem.body())
            else:
                taken.refused = problem
            return
        finally:
            taken.settled.set()
        for name, data in _outcome(result, entries):
            put(name, data)


def _outcome(result: RunResult, entries: Sequence[TranscriptEntry]) -> Iterator[Event]:
    """What the run did (its transcript lines), its answer in chunks or its requests, then the whole run."""
    for entry in entries:
        if entry.run_id != result.run_id:
            continue
        call = {"tool_name": entry.tool_name, "tool_call_id": entry.tool_call_id}
        if entry.role == "tool_call":
            yield "tool_call", {**call, "args": entry.args}
        elif entry.role == "decision":
            yield "decision", {**call, "decision": entry_json(entry)["decision"]}
        elif entry.role == "tool_result":
            yield "tool_result", {**call, "text": entry.text}
    if result.output:
        for chunk in _WORDS.findall(result.output):
            yield "text_delta", {"delta": chunk}
    for request in result.requests:
        yield "request", request_json(request)
    yield "run", run_json(result)
