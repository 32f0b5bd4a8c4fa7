"""MCP calls that can wait for a person: connections and calls run by a host that may outlive agent runs.

See docs/guides/mcp.md#when-a-server-asks-the-person.

A server may ask the person something while it serves a call. How the answer can get back
depends on how it asked, and this module turns each way into one of three outcomes the MCP
toolset (`_mcp.McpToolset`) turns into a pause:

- **a live question**: a form or URL pushed mid-call on a handshake-era session. The call stays
  blocked on its own connection, in the host's task group, while the run pauses and its process
  keeps going (`sayso serve`, `sayso chat`); the answer goes back on it when the run resumes here.
- **a paused call**: the question cannot wait (a stateless round trip, a task parked on input, or
  a host that does not keep calls open), so the handler refuses it and the call ends there; the
  run pauses and the call is issued again later with the stored answer (`LiveCall.stored`), which
  the handler hands over only to the same question (`_mcp_elicit.matches`).
- **done**: the call's result or error.

Each call has a connection of its own while it runs (`Connection`, pooled per run), so a question
always belongs to the call in flight on that connection; connections are opened in the host's
task group so a blocked call survives the end of the run that issued it.

The runtime keeps one long-lived `McpHost` (`keeps_calls=True`); without one, an MCP toolset runs
its calls in a host scoped to the run, which keeps nothing open.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import anyio
import mcp_types
from anyio.abc import TaskGroup, TaskStatus
from fastmcp.client.elicitation import create_elicitation_callback
from fastmcp.exceptions import ToolError
from fastmcp_tasks.client import TasksClientExtension, ToolTask
from fastmcp_tasks.client_models import ClientCreateTaskResult
from mcp import MCPError
from mcp.client.extension import ClaimContext, ClientExtension
from mcp_types import CallToolResult
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.mcp import MCPToolset

from ..._core.requests import ElicitationDelivery, ElicitationRequest
from ..calls import Elicitation
from .elicit import from_params, matches

logger = logging.getLogger("sayso.mcp")


class ElicitHandler(Protocol):
    """fastmcp's elicitation handler: the server's message, a response type, the raw params and the request context."""

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> mcp_types.ElicitResult: ...


CLOSE_SECONDS = 10.0
"""How long a closing host waits for its sessions to end (servers to stop) before cutting them."""

ServerFactory = Callable[[ElicitHandler, Sequence[ClientExtension]], MCPToolset[Any]]
"""Builds a fresh pydantic-ai `MCPToolset` for one server, its client asking questions through the handler."""


@dataclass(frozen=True)
class Asked:
    """The server asked a live question; the call waits for `LiveCall.answer`."""

    elicitation: Elicitation


@dataclass(frozen=True)
class Paused:
    """The server asked something that is answered by issuing the call again (or resuming its task)."""

    elicitation: Elicitation


@dataclass(frozen=True)
class Done:
    """The call returned."""

    value: Any


@dataclass(frozen=True)
class Failed:
    """The call raised."""

    error: Exception


CallEvent = Asked | Paused | Done | Failed


class CallCutOff(RuntimeError):
    """A call ended without a result: its host closed (the runtime is shutting down)."""


class McpServerUnreachable(ConnectionError):
    """A session with a configured server could not be opened: its name leads the run's error, beside why.

    The client's own words ("Client failed to connect: All connection attempts failed") name no server,
    and an agent may bind several.
    """

    def __init__(self, server: str, cause: Exception) -> None:
        super().__init__(f"cannot reach MCP server {server!r}: {cause}")
        self.server = server


class _Refused(Exception):
    """Raised in the elicitation handler to refuse a question that will be answered by a later call."""


class LiveCall:
    """One MCP call, run in a host task; the run that issued it awaits its events one at a time."""

    def __init__(
        self,
        *,
        keep_open: bool,
        stored: Sequence[tuple[ElicitationRequest, mcp_types.ElicitResult]] = (),
        task: dict[str, Any] | None = None,
    ) -> None:
        """Prepare a call.

        Args:
            keep_open: a live question may block the call until answered (the host outlives the run).
            stored: answers the person gave to questions of an earlier issue of this call; each is
                handed over once, and only to the same question.
            task: the server task this call resumes, when it resumes one.
        """
        self.keep_open = keep_open
        self.stored = list(stored)
        self.task = task
        self.refused: Elicitation | None = None
        """The question the handler refused, so the call's failure is a pause, not an error."""
        self.question: Elicitation | None = None
        """The live question the call waits on."""
        self._events: deque[CallEvent] = deque()
        self._ready = anyio.Event()
        self._ended = False
        self._answered = anyio.Event()
        self._reply: mcp_types.ElicitResult | None = None
        self._scope = anyio.CancelScope()
        self.outcome: Done | Failed | Paused | None = None
        """How the call ended, once it did (`None` while it runs, or when it was cut off)."""

    async def run(self, body: Callable[[], Awaitable[Any]]) -> None:
        """Run the call's body (in a host task) and report how it ended."""
        try:
            with self._scope:
                try:
                    value = await body()
                except Exception as exc:
                    self._post(Paused(self.refused) if self.refused is not None else Failed(exc))
                else:
                    self._post(Done(value))
        finally:
            self._ended = True
            self._ready.set()

    async def next(self) -> CallEvent:
        """The call's next event: a live question, a pause, or its end.

        Raises:
            CallCutOff: the call was cancelled with its host.
        """
        while not self._events:
            if self._ended:
                raise CallCutOff("the MCP call was cut off before it finished (the runtime is closing)")
            self._ready = anyio.Event()
            await self._ready.wait()
        return self._events.popleft()

    def _post(self, event: CallEvent) -> None:
        if not isinstance(event, Asked):
            self.outcome = event
        self._events.append(event)
        self._ready.set()

    def cancel(self) -> None:
        """Stop the call (the run that awaited it was cancelled, or its question was closed unanswered)."""
        self._scope.cancel()

    def answer(self, reply: mcp_types.ElicitResult) -> bool:
        """Hand the person's answer to the live question; `False` when the call waits on none."""
        if self.question is None or self._answered.is_set():
            return False
        self._reply = reply
        self._answered.set()
        return True

    async def asked(self, question: Elicitation) -> mcp_types.ElicitResult:
        """What the handler answers the server: a stored answer, the person's live answer, or a refusal.

        Raises:
            _Refused: the question will be answered by issuing the call again; the call ends here.
        """
        if self.task is not None:
            question = replace(question, delivery="task", task=self.task)
        for index, (request, reply) in enumerate(self.stored):
            if matches(request, question):
                del self.stored[index]
                return reply
        if question.delivery == "live" and self.keep_open:
            self.question, self._answered = question, anyio.Event()
            self._post(Asked(question))
            await self._answered.wait()
            answered, self._reply, self.question = self._reply, None, None
            assert answered is not None
            return answered
        self.refused = question
        raise _Refused("the person will answer this later; the call is issued again then")


class Connection:
    """One session with a server, opened in a host task, carrying one call at a time."""

    def __init__(self, server: str, factory: ServerFactory) -> None:
        self.server = server
        self.current: LiveCall | None = None
        """The call in flight: the one the server's questions belong to."""
        self.toolset = factory(self._on_question, [_TaskNoting(create_elicitation_callback(self._on_question), self)])
        self._closing = anyio.Event()

    @property
    def stateless(self) -> bool:
        """Whether the session is the modern, stateless one (questions come as round trips, never pushed)."""
        return self.toolset.client.initialize_result is None

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hold the session open until `close` (in a host task)."""
        started = False
        try:
            async with self.toolset:
                started = True
                task_status.started()
                await self._closing.wait()
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            if not started:
                raise McpServerUnreachable(self.server, exc) from exc
            # The session broke after it opened (the server went away); its calls report their own errors.
            logger.warning("the session with MCP server %r ended with an error", self.server, exc_info=True)

    def close(self) -> None:
        """End the session."""
        self._closing.set()

    async def _on_question(self, message: str, response_type: Any, params: Any, context: Any) -> mcp_types.ElicitResult:
        call = self.current
        if call is None:
            # Nothing of sayso's is in flight here, so nobody could be asked.
            return mcp_types.ElicitResult(action="decline")
        delivery: ElicitationDelivery = "round_trip" if self.stateless else "live"
        return await call.asked(from_params(params, server=self.server, delivery=delivery))


class _TaskNoting(TasksClientExtension):
    """fastmcp's tasks extension, noting the task a call became so a parked task can be answered from anywhere.

    A server may run a call as a task and park it on input-required; the client then asks the
    elicitation handler. Refusing there leaves the task parked, and its create-task result (its id)
    is what any process needs to answer it later (`fastmcp_tasks.ToolTask`).
    """

    def __init__(self, callback: Any, connection: Connection) -> None:
        super().__init__(callback)
        self._connection = connection

    async def _resolve_task(self, create_result: ClientCreateTaskResult, ctx: ClaimContext) -> CallToolResult:
        call = self._connection.current
        if call is not None:
            call.task = create_result.model_dump(mode="json", by_alias=True)
        return await super()._resolve_task(create_result, ctx)


class McpHost:
    """A task group in which MCP sessions and calls run, and the calls parked on a live question.

    The runtime holds one for its lifetime (`keeps_calls=True`): a call whose server asked the person
    mid-call stays open here after its run pauses, keyed by run and tool call, until the resumed run
    hands it the answer or the question is closed. An MCP toolset used without a runtime gets one for
    the length of a run, which keeps nothing open.
    """

    def __init__(self, *, keeps_calls: bool, holder: str | None = None) -> None:
        self.keeps_calls = keeps_calls
        self.holder = holder
        """The runtime this host belongs to (its lease-holder id): named on each question a call parked here asks."""
        self.parked: dict[tuple[str, str], LiveCall] = {}
        self.ended: dict[tuple[str, str], Done | Failed | Paused] = {}
        """Parked calls that ended while their question waited (the server dropped them), and how.

        Nobody could hand their answer back: the runtime closes their questions (`_live.Holder`), and
        the resumed run reads how each ended.
        """
        self._group: TaskGroup | None = None
        self._calls: set[LiveCall] = set()
        self._connections: set[Connection] = set()

    async def __aenter__(self) -> McpHost:
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        return self

    async def __aexit__(self, *args: Any) -> None:
        group, self._group = self._group, None
        if group is None:
            return
        # A call still waiting on the person is told "cancel", so its server is not left waiting on a
        # connection that is about to close (the person's answer, when it comes, is replayed or the
        # model reads that the call did not complete). Every other call is cut. Sessions then close
        # in their own tasks, so a server process is stopped properly.
        parked = set(self.parked.values())
        for call in parked:
            call.answer(mcp_types.ElicitResult(action="cancel"))
        self.parked.clear()
        for call in self._calls - parked:
            call.cancel()
        with anyio.move_on_after(CLOSE_SECONDS):
            while self._calls:
                await anyio.sleep(0.02)
        for connection in list(self._connections):
            connection.close()
        group.cancel_scope.deadline = anyio.current_time() + CLOSE_SECONDS
        await group.__aexit__(None, None, None)

    async def open(self, server: str, factory: ServerFactory) -> Connection:
        """Open a session with `server` in a host task.

        Raises:
            Exception: whatever connecting raised (the server did not start, refused, timed out).
        """
        connection = Connection(server, factory)

        async def serve(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            self._connections.add(connection)
            try:
                await connection.serve(task_status=task_status)
            finally:
                self._connections.discard(connection)

        await self._task_group().start(serve)
        return connection

    def start(self, call: LiveCall, body: Callable[[], Awaitable[Any]]) -> None:
        """Run a call's body in a host task."""

        async def run() -> None:
            self._calls.add(call)
            try:
                await call.run(body)
            finally:
                self._calls.discard(call)
                for key in [key for key, parked in self.parked.items() if parked is call]:
                    del self.parked[key]
                    self.ended[key] = call.outcome or Failed(CallCutOff("the MCP call was cut off"))

        self._task_group().start_soon(run)

    def park(self, key: tuple[str, str], call: LiveCall) -> None:
        """Keep a call that waits on a live question until its run resumes (or the question closes)."""
        self.parked[key] = call

    def take(self, key: tuple[str, str]) -> LiveCall | None:
        """The call parked under `key`, no longer parked."""
        return self.parked.pop(key, None)

    def close_question(self, key: tuple[str, str]) -> None:
        """The question of a parked call was closed without an answer: the server hears cancel, nobody awaits it."""
        self.ended.pop(key, None)
        call = self.take(key)
        if call is not None:
            call.answer(mcp_types.ElicitResult(action="cancel"))

    def _task_group(self) -> TaskGroup:
        assert self._group is not None, "an MCP host runs calls only while it is entered"
        return self._group


class RunConnections:
    """The sessions one run uses, per server: reused call after call, closed when the run ends.

    A session that still carries a call when the run ends (a call parked on a live question) is
    closed when that call finishes.
    """

    def __init__(self, host: McpHost, factories: Mapping[str, ServerFactory]) -> None:
        self.host = host
        self.factories = dict(factories)
        self._idle: dict[str, list[Connection]] = {}
        self._closed = False

    async def acquire(self, server: str) -> Connection:
        """An idle session with `server`, or a new one."""
        idle = self._idle.get(server)
        if idle:
            return idle.pop()
        return await self.host.open(server, self.factories[server])

    def release(self, connection: Connection) -> None:
        """Give a session back after a call; after the run ended it is closed instead."""
        if self._closed:
            connection.close()
        else:
            self._idle.setdefault(connection.server, []).append(connection)

    def aclose(self) -> None:
        """The run ended: close every idle session."""
        self._closed = True
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()


async def resume_task(server: MCPToolset[Any], tool: str, task: dict[str, Any]) -> Any:
    """Drive a server task parked on input to its end (any process can: the task lives on the server).

    Raises:
        ModelRetry: the task failed, was cancelled, or is gone; the model reads why.
    """
    resumed = ToolTask(server.client, tool, ClientCreateTaskResult.model_validate(task))
    try:
        result = await resumed.result()
    except (ToolError, MCPError) as exc:
        raise ModelRetry(f"the task behind {tool!r} did not finish: {exc}") from exc
    structured = result.structured_content
    if isinstance(structured, dict) and set(structured) == {"result"}:
        return structured["result"]
    if structured is not None:
        return structured
    texts = [part.text for part in result.content if isinstance(part, mcp_types.TextContent)]
    return texts[0] if len(texts) == 1 else texts


def call_dropped(ended: Failed | Paused) -> str:
    """What the model reads when a call ended while its question waited (the server dropped it) and may not rerun."""
    why = f": {ended.error}" if isinstance(ended, Failed) else ""
    return (
        f"Cancelled: the MCP server ended the call that asked the person this before the answer came{why}. "
        "This tool is not safe to call again, so it did not complete. Check its effect before trying again."
    )
