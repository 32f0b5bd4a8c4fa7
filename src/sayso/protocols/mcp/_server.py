"""sayso's agents as MCP tools: `/mcp`, streamable HTTP, one tool per agent, pauses asked as elicitations.

See docs/guides/mcp.md#sayso-as-an-mcp-server.

Every entry is a tool: each agent, each orchestration (its lead answers) and each workflow (whose
inputs are asked as forms of their own schema). A tool takes the person's `message` (and optionally
the `thread_id` of a conversation to continue) and answers with the agent's reply. When the run
pauses, what it waits on is asked through the client's elicitation prompts, in the way the
client's session allows:

- **a modern (stateless) session**: the tool returns an `InputRequiredResult` whose input
  requests are one elicitation per open request, keyed by request id, with the run id as
  `request_state`; the client answers and calls again, and the next leg records the answers
  with `Sayso.answer_pause` and carries on. Called as a task (the tool is `task=True`), the
  same legs run in the background and the task parks on input-required in between. Nothing is
  held in this process between legs: the pause lives in sayso's store.
- **a handshake-era session** (clients that predate stateless MCP): the questions are pushed
  mid-call (`elicitation/create`), one after another, on the open call.

On a stateless session the run id travels as `requestState`, sealed by the MCP SDK's boundary under a
key every replica derives from the config (`mcp.state_key_env`, else the audit key) and for as long
as the pause may wait (its requests' own expiry), so the answers' leg may reach any replica, after a
restart, however long the person took; the state only names the run, and the runtime checks on every
leg who answers and that the pause still waits.

A refused answer (content that breaks a form's schema, say) is asked again with the problem in
front of the message; nothing is recorded until a whole pause's answers fit. The caller is the
principal its bearer token names, through the server's one authenticator, and the runtime's
access rule applies as on every other interface.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Annotated, Any, TypeAlias

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError, ValidationError
from fastmcp.server.auth import AccessToken
from fastmcp.server.dependencies import get_http_headers
from fastmcp.server.event_store import EventStore
from fastmcp.server.middleware import CallNext, MiddlewareContext
from fastmcp.server.middleware import Middleware as ToolMiddleware
from fastmcp.tools import ToolResult
from fastmcp_tasks import TasksExtension
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.request_state import RequestStateSecurity
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field
from pydantic import ValidationError as PydanticValidationError
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..._config.file import Config
from ..._core.access import Principal
from ..._core.decisions import Decision
from ..._core.requests import Request
from ..._core.votes import Vote
from ..._runtime import RunResult, Sayso, authenticate
from ...exceptions import (
    CallEnded,
    DecisionRefused,
    InvalidDecision,
    RunConflict,
    SaysoError,
    TooLarge,
    Unauthenticated,
)
from ._mapping import decision_from, elicitation_for, others_decide

AUDIENCE = "sayso"
"""Whom a sealed request state is for: the same on every replica, so any of them reads it."""

PATH = "/mcp"
"""Where `sayso serve` serves MCP (streamable HTTP)."""

MAX_PUSHED_ROUNDS = 20
"""How many times a handshake-era client is asked again before the call gives up (answers keep being refused)."""

UNBOUNDED_STATE_SECONDS = 10 * 365 * 86_400.0
"""How long a paused call's request state lasts when its requests wait until decided (no `ttl_seconds`)."""

STATE_GRACE_SECONDS = 3_600.0
"""Added to the longest request lifetime: the answers' leg may arrive a little after the request expired,
and is then told so by the runtime rather than refused as an unreadable state."""

RETRY_MS = 1_000
"""How soon a client whose stream dropped is told to reconnect (SSE `retry`)."""

TASKS_URL = "memory://"
"""Where background tasks are kept: in the server process (a task is a leg's worker; the pause is in the store)."""

TASKS_POLL = timedelta(seconds=1)
"""How long the task worker's read of new tasks blocks: a new task wakes it at once."""


def mcp_server(sayso: Sayso) -> FastMCP:
    """An MCP server with one tool per agent of `sayso`'s config."""
    server = FastMCP(
        "sayso",
        instructions="Each tool is an agent: send it a message, answer what it asks you.",
        request_state_security=_state_security(sayso.config),
    )
    server.add_extension(TasksExtension(url=TASKS_URL, minimum_check_interval=TASKS_POLL))
    server.add_middleware(_PlainArgumentErrors())
    for name, lead in sayso.config.entries().items():
        server.tool(_agent_tool(sayso, lead), name=name, description=_description(sayso.config, name), task=True)
    return server


class _PlainArgumentErrors(ToolMiddleware):
    """A call whose arguments do not fit the tool is a tool error naming each field and what is wrong, in words.

    FastMCP answers with pydantic's report: the input echoed back, error codes and
    `errors.pydantic.dev` links, which a person (or a model) reading the result has no use for.
    """

    async def on_call_tool(
        self, context: MiddlewareContext[mcp_types.CallToolRequestParams], call_next: CallNext[Any, ToolResult]
    ) -> ToolResult:
        try:
            return await call_next(context)
        except ValidationError as exc:
            cause = exc.__cause__
            if not isinstance(cause, PydanticValidationError):
                raise
            problems = [
                f"{'.'.join(str(p) for p in e['loc']) or 'the arguments'}: {e['msg']}"
                for e in cause.errors(include_url=False, include_input=False, include_context=False)
            ]
            raise ToolError(f"the arguments do not fit the tool: {'; '.join(problems)}") from None


def _description(config: Config, name: str) -> str:
    """What a tool says it does: the workflow's, the team's or the agent's description (else its first line)."""
    if name in config.workflows:
        return config.workflows[name].description or f"The workflow {name}: it asks you for what it needs."
    team = config.orchestrations.get(name)
    agent = config.agents[team.entry_name if team else name]
    first = (agent.instructions.strip().splitlines() or [f"The agent {name}."])[0]
    return (team.description if team else None) or agent.description or first


def _state_security(config: Config) -> RequestStateSecurity:
    """How a paused call's `requestState` is sealed: a key every replica shares, for as long as the pause waits.

    Without a configured secret the key is this process's own (the MCP SDK's default), but still with a
    lifetime that fits the pause.
    """
    key = config.mcp.state_key(config.audit.key())
    ttl = state_lifetime(config)
    if key is None:
        return RequestStateSecurity.ephemeral(ttl=ttl, audience=AUDIENCE)
    return RequestStateSecurity(keys=[key], ttl=ttl, audience=AUDIENCE)


def state_lifetime(config: Config) -> float:
    """How long a paused call's request state must stay readable.

    The longest any request of `config` may wait for an answer (plus a grace), or a decade when one
    waits until decided.
    """
    lifetimes: list[float | None] = [None] if config.workflows else []
    for agent in config.agents.values():
        block = agent.interrupt
        lifetimes.append(block.ttl_seconds)
        lifetimes.extend(rule.ttl_seconds or block.ttl_seconds for rule in block.tools if not isinstance(rule, str))
    if not lifetimes or any(lifetime is None for lifetime in lifetimes):
        return UNBOUNDED_STATE_SECONDS
    return max(lifetime for lifetime in lifetimes if lifetime is not None) + STATE_GRACE_SECONDS


def mcp_app(sayso: Sayso) -> Any:
    """`/mcp` as an ASGI app with its own lifespan (sessions, background tasks), behind the authenticator.

    Its streams are resumable: every event is kept in an event store (in this process, as a
    handshake-era session is), so a client that drops mid-call (a question pushed to it, say)
    reconnects with `Last-Event-ID`, is sent what it missed and answers on the same call.
    """
    return mcp_server(sayso).http_app(
        path=PATH,
        middleware=[Middleware(_Authenticated, sayso=sayso)],
        event_store=EventStore(),
        retry_interval=RETRY_MS,
    )


class _Authenticated:
    """Refuses a request to `/mcp` whose bearer token names no principal (401), before MCP reads it.

    A signed-in request carries its principal as MCP's authenticated user, whose client id is the
    principal's name: background tasks are kept per client id, so a task is found only by the
    principal that started it (another one holding its id is told there is no such task, and is
    neither shown nor lets answer what it waits on).
    """

    def __init__(self, app: ASGIApp, sayso: Sayso) -> None:
        self.app = app
        self.sayso = sayso

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                caller = authenticate(self.sayso, Headers(scope=scope).get("authorization"))
            except Unauthenticated as exc:
                body = {"type": "about:blank", "title": "Not signed in", "status": 401, "detail": exc.problem}
                response = JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
            # The token field holds the name, not the secret: fastmcp keeps it with each task.
            user = AccessToken(token=f"principal:{caller.name}", client_id=caller.name, scopes=[])
            scope = {**scope, "user": AuthenticatedUser(user)}
        await self.app(scope, receive, send)


def _agent_tool(sayso: Sayso, agent: str) -> Any:
    async def ask_agent(
        message: Annotated[str, Field(min_length=1)], ctx: Context, thread_id: str | None = None
    ) -> str | mcp_types.InputRequiredResult:
        """Send the agent a message; it answers, or asks you first (approvals, questions, forms).

        Args:
            message: what you say to the agent.
            ctx: the MCP request (not shown to the client).
            thread_id: a conversation to continue (from an earlier answer); omitted or empty: a new one.
        """
        caller = authenticate(sayso, get_http_headers(include={"authorization"}).get("authorization"))
        thread_id = thread_id or None  # models fill an optional text with "": it names no thread
        try:
            if not _stateless(ctx):
                started = await sayso.run(message, agent=agent, thread_id=thread_id, principal=caller, via="mcp")
                return await _pushed(sayso, ctx, caller, started)
            if ctx.request_state is None:
                result = await sayso.run(message, agent=agent, thread_id=thread_id, principal=caller, via="mcp")
                _check_shows(ctx, result, caller)
                return _outcome(result, caller=caller)
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
        return _outcome(waiting, caller=caller)
    open_requests = {r.request_id: r for r in waiting.requests}
    answers: dict[str, Decision] = {}
    try:
        for request_id, reply in responses.items():
            request = open_requests.get(request_id)
            if request is not None and isinstance(reply, mcp_types.ElicitResult):
                answers[request_id] = decision_from(request, reply)
        return _outcome(await sayso.answer_pause(run_id, answers, principal=caller, via="mcp"), caller=caller)
    except CallEnded as ended:
        raise ToolError(f"decision refused: {ended}") from None  # closed: asking again would be answered by no one
    except (DecisionRefused, TooLarge) as refused:
        return _outcome(waiting, refused=refused, caller=caller)


_Refused: TypeAlias = DecisionRefused | TooLarge
"""An answer refused with its request left open, asked again with the problem: one that does not fit, or is over a
size limit (`TooLarge` names the request it was for)."""


def _outcome(
    result: RunResult, *, caller: Principal, refused: _Refused | None = None
) -> str | mcp_types.InputRequiredResult:
    """The tool's answer for where a run stands: the agent's reply, or what it waits on, as elicitations.

    Routed requests the caller may not decide (or has voted on) are not asked: when only those are
    left, the answer says whom the run waits for (docs/guides/routing.md).
    """
    if result.status == "completed":
        return f"{result.output or ''}\n\n(thread {result.thread_id})"
    if result.status != "paused":
        raise ToolError(f"the run {result.status}: {result.error or 'no answer'}")
    if waiting := _waiting_on_others(result, caller):
        return waiting
    asked = {
        request.request_id: mcp_types.ElicitRequest(
            params=elicitation_for(
                request,
                problem=refused.problem if refused and refused.request_id == request.request_id else None,
                votes=result.votes.get(request.request_id, ()),
            )
        )
        for request in result.requests
        if others_decide(request, result.votes.get(request.request_id, ()), caller) is None
    }
    return mcp_types.InputRequiredResult(input_requests=dict(asked), request_state=result.run_id)


async def _pushed(sayso: Sayso, ctx: Context, caller: Principal, result: RunResult) -> str:
    """A handshake-era client: ask each open request on the live call until the run is no longer paused."""
    refused: _Refused | None = None
    for _ in range(MAX_PUSHED_ROUNDS):
        if result.status != "paused" or _waiting_on_others(result, caller):
            answer = _outcome(result, caller=caller)
            assert isinstance(answer, str)
            return answer
        _check_shows(ctx, result, caller)
        answers: dict[str, Decision] = {}
        for request in result.requests:
            if others_decide(request, result.votes.get(request.request_id, ()), caller) is not None:
                continue
            problem = refused.problem if refused and refused.request_id == request.request_id else None
            answers[request.request_id] = await _asked(ctx, request, problem, result.votes.get(request.request_id, ()))
        # A request decided elsewhere while the person was asked (the inbox, another client) keeps that first
        # decision: its answer here is dropped rather than refused, which would ask it again, round after round.
        now = await sayso.result(result.run_id, principal=caller)
        if now.status != "paused":
            result, refused = now, None
            continue
        still_open = {r.request_id for r in now.requests}
        answers = {request_id: answer for request_id, answer in answers.items() if request_id in still_open}
        try:
            result, refused = await sayso.answer_pause(result.run_id, answers, principal=caller, via="mcp"), None
        except CallEnded as ended:
            raise ToolError(f"decision refused: {ended}") from None
        except (DecisionRefused, TooLarge) as exc:
            refused = exc
        except RunConflict:  # resumed elsewhere meanwhile, as above: the call goes on with where the run went
            result, refused = await sayso.result(result.run_id, principal=caller), None
    raise ToolError(f"the answers kept being refused: {refused}")


def _check_shows(ctx: Context, result: RunResult, caller: Principal) -> None:
    """Refuse to ask a client what it cannot show (no elicitation capability, or none for URLs), saying where to answer.

    Such a client would fail the call on the first form and its person would never learn what waits; the
    run stays paused, and the error names its requests and thread so they can be answered elsewhere.

    Raises:
        ToolError: the client cannot show some open request the caller may answer.
    """
    if ctx.request_context is None or result.status != "paused":
        return  # a background task's client took the task's input requests when it asked for one
    capabilities = ctx.session.client_capabilities
    can = capabilities.elicitation if capabilities is not None else None
    unshown = [
        request
        for request in result.requests
        if others_decide(request, result.votes.get(request.request_id, ()), caller) is None
        and not _shows(can, elicitation_for(request, problem=None, votes=result.votes.get(request.request_id, ())))
    ]
    if unshown:
        waiting = ", ".join(f"{r.request_id} ({r.kind})" for r in unshown)
        raise ToolError(
            f"This MCP client cannot show the forms sayso asks with (it declared no elicitation capability for them), "
            f"so run {result.run_id} waits on thread {result.thread_id} for: {waiting}. Answer in sayso's inbox "
            "(the web UI), with `sayso decide`, or over REST (POST /v1/requests/REQUEST_ID/decision); the agent "
            "then carries on in that thread."
        )


def _shows(can: mcp_types.ElicitationCapability | None, params: mcp_types.ElicitRequestParams) -> bool:
    """Whether a client with elicitation capability `can` shows `params` (an empty one means forms, by the spec)."""
    if can is None:
        return False
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        return can.url is not None
    return can.form is not None or can.url is None


def _waiting_on_others(result: RunResult, caller: Principal) -> str | None:
    """The answer when every open request is for others to decide: whom the run waits for; else `None`."""
    notes = [others_decide(r, result.votes.get(r.request_id, ()), caller) for r in result.requests]
    if not notes or any(n is None for n in notes):
        return None
    return f"Waiting for others: {'; '.join(n for n in notes if n)}.\n\n(thread {result.thread_id})"


async def _asked(ctx: Context, request: Request, problem: str | None, votes: Sequence[Vote]) -> Decision:
    """Ask one open request on the live call until its answer fits the form it was asked with."""
    for _ in range(MAX_PUSHED_ROUNDS):
        params = elicitation_for(request, problem=problem, votes=votes)
        if isinstance(params, mcp_types.ElicitRequestURLParams):
            assert params.elicitation_id is not None
            reply = await ctx.session.elicit_url(
                params.message, params.url, params.elicitation_id, related_request_id=ctx.request_id
            )
        else:
            reply = await ctx.session.elicit_form(
                params.message, params.requested_schema, related_request_id=ctx.request_id
            )
        try:
            return decision_from(request, reply)
        except InvalidDecision as refused:
            problem = refused.problem
    raise ToolError(f"the answers kept being refused: {problem}")
