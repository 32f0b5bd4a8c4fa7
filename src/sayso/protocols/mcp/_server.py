"""sayso's agents as MCP tools: `/mcp`, streamable HTTP, one tool per agent, pauses asked as elicitations.

See docs/guides/mcp.md#sayso-as-an-mcp-server.

An agent's tool takes the person's `message` (and optionally the `thread_id` of a conversation
to continue) and answers with the agent's reply. When the run pauses, what it waits on is asked
through the client's elicitation prompts, in the way the client's session allows:

- **a modern (stateless) session**: the tool returns an `InputRequiredResult` whose input
  requests are one elicitation per open request, keyed by request id, with the run id as
  `request_state`; the client answers and calls again, and the next leg records the answers
  with `Sayso.answer_pause` and carries on. Called as a task (the tool is `task=True`), the
  same legs run in the background and the task parks on input-required in between. Nothing is
  held in this process between legs: the pause lives in sayso's store.
- **a handshake-era session** (clients that predate stateless MCP): the questions are pushed
  mid-call (`elicitation/create`), one after another, on the open call.

A refused answer (content that breaks a form's schema, say) is asked again with the problem in
front of the message; nothing is recorded until a whole pause's answers fit. The caller is the
principal its bearer token names, through the server's one authenticator, and the runtime's
access rule applies as on every other interface.
"""

from __future__ import annotations

from typing import Any

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_http_headers
from fastmcp_tasks import TasksExtension
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..._core.access import Principal
from ..._core.decisions import Decision
from ..._runtime import RunResult, Sayso, authenticate
from ...exceptions import DecisionRefused, SaysoError, Unauthenticated
from ._mapping import decision_from, elicitation_for

PATH = "/mcp"
"""Where `sayso serve` serves MCP (streamable HTTP)."""

MAX_PUSHED_ROUNDS = 20
"""How many times a handshake-era client is asked again before the call gives up (answers keep being refused)."""

TASKS_URL = "memory://"
"""Where background tasks are kept: in the server process (a task is a leg's worker; the pause is in the store)."""


def mcp_server(sayso: Sayso) -> FastMCP:
    """An MCP server with one tool per agent of `sayso`'s config."""
    server = FastMCP("sayso", instructions="Each tool is an agent: send it a message, answer what it asks you.")
    server.add_extension(TasksExtension(url=TASKS_URL))
    for name, agent in sayso.config.agents.items():
        description = agent.description or (agent.instructions.strip().splitlines() or [f"The agent {name}."])[0]
        server.tool(_agent_tool(sayso, name), name=name, description=description, task=True)
    return server


def mcp_app(sayso: Sayso) -> Any:
    """`/mcp` as an ASGI app with its own lifespan (sessions, background tasks), behind the authenticator."""
    return mcp_server(sayso).http_app(path=PATH, middleware=[Middleware(_Authenticated, sayso=sayso)])


class _Authenticated:
    """Refuses a request to `/mcp` whose bearer token names no principal (401), before MCP reads it."""

    def __init__(self, app: ASGIApp, sayso: Sayso) -> None:
        self.app = app
        self.sayso = sayso

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                authenticate(self.sayso, Headers(scope=scope).get("authorization"))
            except Unauthenticated as exc:
                body = {"type": "about:blank", "title": "Not signed in", "status": 401, "detail": exc.problem}
                response = JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _agent_tool(sayso: Sayso, agent: str) -> Any:
    async def ask_agent(
        message: str, ctx: Context, thread_id: str | None = None
    ) -> str | mcp_types.InputRequiredResult:
        """Send the agent a message; it answers, or asks you first (approvals, questions, forms).

        Args:
            message: what you say to the agent.
            ctx: the MCP request (not shown to the client).
            thread_id: a conversation to continue (from an earlier answer); omitted: a new one.
        """
        caller = authenticate(sayso, get_http_headers(include={"authorization"}).get("authorization"))
        try:
            if not _stateless(ctx):
                started = await sayso.run(message, agent=agent, thread_id=thread_id, principal=caller)
                return await _pushed(sayso, ctx, caller, started)
            if ctx.request_state is None:
                result = await sayso.run(message, agent=agent, thread_id=thread_id, principal=caller)
                return _outcome(result)
            run = await sayso.run_record(ctx.request_state, principal=caller)
            if run.agent != agent:
                raise ToolError(f"the answers are for a run of {run.agent!r}, not of {agent!r}")
            return await _answered(sayso, caller, ctx.request_state, ctx.input_responses or {})
        except SaysoError as exc:
            raise ToolError(str(exc)) from exc

    return ask_agent


def _stateless(ctx: Context) -> bool:
    """Whether the session is the modern, stateless one (a background task's always is: tasks are modern-only)."""
    request = ctx.request_context
    return request is None or request.protocol_version in MODERN_PROTOCOL_VERSIONS


async def _answered(
    sayso: Sayso, caller: Principal, run_id: str, responses: mcp_types.InputResponses
) -> str | mcp_types.InputRequiredResult:
    """A later leg: the client's answers decide the open requests they name, then the run carries on."""
    waiting = await sayso.result(run_id, principal=caller)
    if waiting.status != "paused":
        return _outcome(waiting)
    open_requests = {r.request_id: r for r in waiting.requests}
    answers: dict[str, Decision] = {}
    for request_id, reply in responses.items():
        request = open_requests.get(request_id)
        if request is not None and isinstance(reply, mcp_types.ElicitResult):
            answers[request_id] = decision_from(request, reply)
    try:
        return _outcome(await sayso.answer_pause(run_id, answers, principal=caller))
    except DecisionRefused as refused:
        return _outcome(waiting, refused=refused)


def _outcome(result: RunResult, *, refused: DecisionRefused | None = None) -> str | mcp_types.InputRequiredResult:
    """The tool's answer for where a run stands: the agent's reply, or what it waits on, as elicitations."""
    if result.status == "completed":
        return f"{result.output or ''}\n\n(thread {result.thread_id})"
    if result.status != "paused":
        raise ToolError(f"the run {result.status}: {result.error or 'no answer'}")
    asked = {
        request.request_id: mcp_types.ElicitRequest(
            params=elicitation_for(
                request, problem=refused.problem if refused and refused.request_id == request.request_id else None
            )
        )
        for request in result.requests
    }
    return mcp_types.InputRequiredResult(input_requests=dict(asked), request_state=result.run_id)


async def _pushed(sayso: Sayso, ctx: Context, caller: Principal, result: RunResult) -> str:
    """A handshake-era client: ask each open request on the live call until the run is no longer paused."""
    refused: DecisionRefused | None = None
    for _ in range(MAX_PUSHED_ROUNDS):
        if result.status != "paused":
            answer = _outcome(result)
            assert isinstance(answer, str)
            return answer
        answers: dict[str, Decision] = {}
        for request in result.requests:
            problem = refused.problem if refused and refused.request_id == request.request_id else None
            params = elicitation_for(request, problem=problem)
            if isinstance(params, mcp_types.ElicitRequestURLParams):
                assert params.elicitation_id is not None
                reply = await ctx.session.elicit_url(
                    params.message, params.url, params.elicitation_id, related_request_id=ctx.request_id
                )
            else:
                reply = await ctx.session.elicit_form(
                    params.message, params.requested_schema, related_request_id=ctx.request_id
                )
            answers[request.request_id] = decision_from(request, reply)
        try:
            result, refused = await sayso.answer_pause(result.run_id, answers, principal=caller), None
        except DecisionRefused as exc:
            refused = exc
    raise ToolError(f"the answers kept being refused: {refused}")
