"""The AG-UI endpoint of each agent: `POST /ag-ui/{agent}` takes a `RunAgentInput` and streams events over SSE.

An AG-UI thread is a sayso thread. A run's pause stays on the server: a resume names
interrupts by id and client tool calls by tool call id, and both are looked up in the store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import anyio
from ag_ui.core import BaseEvent, RunAgentInput, RunErrorEvent, RunStartedEvent
from ag_ui.encoder import EventEncoder
from fastapi import APIRouter
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..._core.decisions import Decision, check_decision
from ..._core.requests import ClientTool
from ..._core.requests import Request as SaysoRequest
from ..._results import RunResult
from ..._runtime import Sayso
from ...exceptions import DecisionRefused, NotFound, RunConflict, SaysoError
from .._auth import Caller, Unauthenticated, authenticate
from .._common import AgentEndpoint
from ._mapping import ResumeRefused, decisions_from_resume, finished_event, message_events, tool_messages, user_text


class InputRefused(SaysoError, ValueError):
    """A `RunAgentInput` this endpoint cannot act on.

    Args:
        problem: what is wrong.
        code: a short machine-readable code for `RUN_ERROR.code`.
    """

    def __init__(self, problem: str, code: str = "invalid_input") -> None:
        self.problem = problem
        self.code = code
        super().__init__(problem)

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return self.__class__, (self.problem, self.code)


def error_event(exc: Exception) -> RunErrorEvent:
    """The `RUN_ERROR` for one of ours: the one place our errors become AG-UI errors."""
    if isinstance(exc, InputRefused):
        return RunErrorEvent(message=exc.problem, code=exc.code)
    if isinstance(exc, ResumeRefused):
        return RunErrorEvent(message=f"resume refused: {exc.problem}; the pause stays open", code="invalid_resume")
    if isinstance(exc, DecisionRefused):
        return RunErrorEvent(message=f"decision refused: {exc}; the pause stays open", code="invalid_resume")
    if isinstance(exc, NotFound):
        return RunErrorEvent(message=str(exc), code="not_found")
    if isinstance(exc, RunConflict):
        return RunErrorEvent(message=str(exc), code="conflict")
    if isinstance(exc, SaysoError):
        return RunErrorEvent(message=str(exc), code="error")
    raise exc


@dataclass(frozen=True, kw_only=True)
class _Turn:
    go: Callable[[], Awaitable[RunResult]]


class AgUiAgent(AgentEndpoint):
    """Runs one agent of a runtime for AG-UI clients."""

    async def events(self, run_input: RunAgentInput, caller: Caller) -> AsyncIterator[BaseEvent]:
        """Every event of one AG-UI run, from `RUN_STARTED` to `RUN_FINISHED` or `RUN_ERROR`."""
        yield RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)
        try:
            before = len(await self.sayso.store.load_messages(run_input.thread_id))
            turn = await self._turn(run_input, caller)
            # The run belongs to the server, not to the connection: a client that leaves does not cut it short.
            with anyio.CancelScope(shield=True):
                result = await turn.go()
            added = (await self.sayso.store.load_messages(run_input.thread_id))[before:]
        except Exception as exc:
            yield error_event(exc)
            return
        for event in message_events(added, id_prefix=result.run_id):
            yield event
        if result.status == "failed":
            yield RunErrorEvent(message=result.error or "the run failed", code="run_failed")
            return
        yield finished_event(
            thread_id=run_input.thread_id,
            run_id=run_input.run_id,
            requests=result.requests,
            output=result.output,
            sayso_run_id=result.run_id,
        )

    async def _turn(self, run_input: RunAgentInput, caller: Caller) -> _Turn:
        thread = await self.sayso.store.get_thread(run_input.thread_id)
        if thread is not None:
            if not caller.may_act_on(owner=thread.owner, agent=thread.agent):
                raise InputRefused(f"thread {run_input.thread_id!r} belongs to someone else", "forbidden")
            if thread.agent != self.agent:
                raise InputRefused(f"thread {run_input.thread_id!r} is a conversation with agent {thread.agent!r}")
        paused = None
        if thread is not None and thread.active_run_id is not None:
            active = await self.sayso.result(thread.active_run_id)
            paused = active if active.status == "paused" else None
        answers = tool_messages(run_input.messages)
        if run_input.resume or (paused is not None and answers and user_text(run_input.messages) is None):
            if paused is None:
                raise InputRefused(f"nothing waits on thread {run_input.thread_id!r}", "not_paused")
            pairs = decisions_from_resume(paused.requests, run_input.resume or [], answers)
            if not pairs:
                raise InputRefused("the resume answers none of the open requests", "invalid_resume")
            now = self._clock()
            for request, decision in pairs:
                # Every answer is checked before any is recorded: a refused resume changes nothing.
                check_decision(request, decision, existing=None, now=now)
            run_id = paused.run_id

            async def resume() -> RunResult:
                return await self._decide(run_id, pairs, caller)

            return _Turn(go=resume)
        text = user_text(run_input.messages)
        if text is None or not text.strip():
            raise InputRefused("the last message must be the person's, with text, or the input must resume a pause")
        client_tools = [
            ClientTool(name=t.name, description=t.description, parameters=t.parameters or {"type": "object"})
            for t in run_input.tools or []
        ]

        async def run() -> RunResult:
            return await self.sayso.run(
                text,
                agent=self.agent,
                thread_id=run_input.thread_id,
                principal=caller.name,
                client_tools=client_tools,
            )

        return _Turn(go=run)

    async def _decide(self, run_id: str, pairs: list[tuple[SaysoRequest, Decision]], caller: Caller) -> RunResult:
        for request, decision in pairs:
            await self.sayso.decide(request.request_id, decision, principal=caller.name, resume=False)
        result = await self.sayso.result(run_id)
        if result.status != "paused":
            return result
        # A request the resume left out counts as skipped, never as approved.
        return await self.sayso.resume(run_id, force=True)


def ag_ui_router(sayso: Sayso) -> APIRouter:
    """`POST /ag-ui/{agent}` for every agent of `sayso`."""
    router = APIRouter()
    for agent in sayso.config.agents:
        router.add_route(
            f"/ag-ui/{agent}", _endpoint(AgUiAgent(sayso, agent)), methods=["POST"], include_in_schema=False
        )
    return router


def _endpoint(runner: AgUiAgent) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            caller = authenticate(runner.sayso.config, request.headers.get("authorization"))
        except Unauthenticated as exc:
            return JSONResponse({"detail": exc.problem}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
        try:
            run_input = RunAgentInput.model_validate_json(await request.body())
        except ValidationError as exc:
            return JSONResponse({"detail": exc.errors(include_url=False, include_context=False)}, status_code=422)
        encoder = EventEncoder(accept=request.headers.get("accept") or "text/event-stream")

        async def body() -> AsyncIterator[str]:
            async for event in runner.events(run_input, caller):
                yield encoder.encode(event)

        return StreamingResponse(
            body(),
            media_type=encoder.get_content_type(),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    return endpoint
