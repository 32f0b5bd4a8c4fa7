"""The FastAPI application: REST endpoints (§6.5), the web UI (§6.6) and the server's lifespan.

Endpoints only translate: they read the wire models of `_schemas`, call one of the runtime's
public verbs with the caller's principal, and return the JSON shapes of `sayso.request_json` /
`sayso.run_json`. Who may see or do what is the runtime's rule, applied inside its verbs.
Errors are raised, never built here; `_problems` turns each into an RFC 9457 problem.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from anyio.abc import TaskGroup
from fastapi import APIRouter, Body, Depends, FastAPI, Header, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from starlette.applications import Starlette
from starlette.routing import Route

from .._config import WebhookConfig
from .._core.access import Principal
from .._core.grants import Grant
from .._core.requests import RequestKind
from .._results import DecideResult, request_json, request_state_json, rfc3339, run_json
from .._runtime import InboxFilter, Sayso, new_id
from ..exceptions import InvalidInput, SaysoError
from ..protocols._auth import authenticate, authenticator
from ._guard import EdgeGuard
from ._live import LIVE_EVENT_NAMES, LiveSettings, live_events
from ._pages import install_pages
from ._problems import PROBLEM_MEDIA_TYPE, ProblemModel, install_problem_handlers
from ._schemas import (
    ID_PATTERN,
    AgentListOut,
    AgentOut,
    AuditPageOut,
    AuditVerifyOut,
    DecideOut,
    DecisionIn,
    ExpireOut,
    GrantListOut,
    GrantOut,
    HealthOut,
    InboxOut,
    MeOut,
    RequestStateOut,
    ResumeIn,
    RunIn,
    RunOut,
    ThreadIn,
    ThreadListOut,
    ThreadOut,
    entry_json,
    to_decision,
)
from ._stream import start_run, stream_run
from ._webhooks import WebhookDispatcher

logger = logging.getLogger("sayso.server")

DEFAULT_EXPIRE_EVERY_SECONDS = 30.0
"""How often the server closes runs whose open requests all expired, unless told otherwise."""

DEFAULT_RECOVER_EVERY_SECONDS = 5.0
"""How often the server looks for runs whose process died (their lease lapsed) and carries them on."""

STATIC = Path(__file__).parent / "static"

TITLE_LENGTH = 80
"""How much of a thread's first message its title shows (as in the thread list)."""

_bearer = HTTPBearer(auto_error=False, description="A principal's token; not needed in local development mode.")

_PROBLEM_MEANING = {
    401: "Not signed in: no bearer token, or one that no principal has.",
    403: "The caller may not do this.",
    404: "There is no such thing, or the caller may not see it.",
    409: "It conflicts with what happened first.",
    410: "The request expired before the decision arrived.",
    413: "The body, message, arguments or answer is over its size limit.",
    415: "State-changing calls must be JSON.",
    422: "The input is invalid; `errors` says where.",
    503: "The store does not answer; try again.",
}


def problems(*statuses: int, **meanings: str) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI responses of the problems an endpoint can answer with (RFC 9457 documents).

    `meanings` overrides the general meaning of a status for this endpoint, keyed `s409` and so on.
    """
    return {
        status: {
            "model": ProblemModel,
            "description": meanings.get(f"s{status}", _PROBLEM_MEANING[status]),
            "content": {PROBLEM_MEDIA_TYPE: {}},
        }
        for status in statuses
    }


Id = Annotated[str, PathParam(min_length=1, max_length=64)]
ThreadId = Annotated[str, PathParam(pattern=ID_PATTERN)]


@dataclass(kw_only=True)
class ServerState:
    """What the endpoints share: the runtime, the webhook sender, and the task group of streamed runs."""

    sayso: Sayso
    emitter: WebhookDispatcher
    tasks: TaskGroup | None = None
    """Runs that outlive their HTTP request (a streamed run whose client left) run here."""
    live: LiveSettings = LiveSettings()
    """How live streams (`/v1/events`) look at the store and how long each lasts."""
    closing: bool = False
    """Set when the server is told to stop, so live streams end instead of holding the shutdown up."""


_SSE_EVENT: dict[str, Any] = {
    "type": "object",
    "description": "One server-sent event; `data` is JSON.",
    "properties": {
        "event": {
            "type": "string",
            "enum": [
                "status",
                "progress",
                "tool_call",
                "decision",
                "tool_result",
                "text_delta",
                "request",
                "run",
                "error",
            ],
        },
        "data": {"type": "string"},
    },
    "required": ["event", "data"],
}


def _state(request: Request) -> ServerState:
    state = request.app.state.sayso_server
    assert isinstance(state, ServerState)
    return state


def _runtime(request: Request) -> Sayso:
    return _state(request).sayso


async def current_principal(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    """The caller, from its bearer token (everyone is `local` in local development mode).

    `credentials` only documents the scheme in the OpenAPI document; the token is read by the
    one authenticator A2A and AG-UI use too.
    """
    return authenticate(_runtime(request), request.headers.get("authorization"))


Caller = Annotated[Principal, Depends(current_principal)]
Runtime = Annotated[Sayso, Depends(_runtime)]
State = Annotated[ServerState, Depends(_state)]


def _json(body: Any, status_code: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status_code)


def _decide_json(result: DecideResult) -> dict[str, Any]:
    return {"request_id": result.request_id, "recorded": result.recorded, "run": run_json(result.run)}


api = APIRouter(prefix="/v1")


@api.get("/me", response_model=MeOut, tags=["principals"], operation_id="get_me", responses=problems(401))
async def me(caller: Caller, sayso: Runtime) -> JSONResponse:
    """Who the caller is, and whether the server runs in local development mode."""
    local_mode = authenticator(sayso).local_mode
    return _json({"principal": caller.name, "local_mode": local_mode, "approver_for": list(caller.approver_for)})


@api.get("/agents", response_model=AgentListOut, tags=["threads"], operation_id="list_agents", responses=problems(401))
async def agents(caller: Caller, sayso: Runtime) -> JSONResponse:
    """The configured agents and workflows: what a thread may be opened with."""
    config = sayso.config
    listed = [
        AgentOut(name=name, description=spec.description, entry=name == config.entry_agent).model_dump()
        for name, spec in config.agents.items()
    ]
    listed += [
        AgentOut(
            name=name, description=spec.description or None, entry=name == config.entry_agent, kind="workflow"
        ).model_dump()
        for name, spec in config.workflows.items()
    ]
    return _json({"agents": listed})


@api.post(
    "/threads",
    response_model=ThreadOut,
    status_code=201,
    tags=["threads"],
    operation_id="create_thread",
    responses=problems(401, 422, s422="The body is invalid, or names no configured agent."),
)
async def create_thread(caller: Caller, sayso: Runtime, body: ThreadIn | None = None) -> JSONResponse:
    """Open a thread with an agent; it is stored, and owned by the caller, when its first run starts."""
    agent = (body.agent if body else None) or sayso.config.entry_agent
    if agent not in sayso.config.agents and agent not in sayso.config.workflows:
        configured = ", ".join([*sayso.config.agents, *sayso.config.workflows])
        raise InvalidInput(f"no agent named {agent!r}; configured: {configured}", field="agent")
    thread_id = new_id("thr")
    created = {"thread_id": thread_id, "agent": agent, "owner": None, "title": None, "created": None}
    return _json({**created, "active_run": None, "transcript": []}, 201)


@api.get(
    "/threads",
    response_model=ThreadListOut,
    tags=["threads"],
    operation_id="list_threads",
    responses=problems(401, 422, 503),
)
async def threads(caller: Caller, sayso: Runtime, limit: Annotated[int, Query(ge=1, le=200)] = 50) -> JSONResponse:
    """The caller's threads, newest first, each titled by its first message."""
    listed = await sayso.threads(principal=caller, limit=limit)
    return _json({"threads": [asdict(t) | {"created": rfc3339(t.created_at)} for t in listed]})


@api.get(
    "/threads/{thread_id}",
    response_model=ThreadOut,
    tags=["threads"],
    operation_id="get_thread",
    responses=problems(401, 404, 422, 503),
)
async def thread(caller: Caller, sayso: Runtime, thread_id: ThreadId) -> JSONResponse:
    """A thread's history (with every decision and failure), and the run in progress with the requests it waits on."""
    record = await sayso.thread(thread_id, principal=caller)
    active = await sayso.result(record.active_run_id, principal=caller) if record.active_run_id else None
    entries = await sayso.transcript(thread_id, principal=caller)
    first = next((e.text for e in entries if e.role == "user" and e.text), None)
    return _json(
        {
            "thread_id": record.thread_id,
            "agent": record.agent,
            "owner": record.owner,
            "title": first[:TITLE_LENGTH] if first else None,
            "created": rfc3339(record.created_at),
            "active_run": run_json(active) if active else None,
            "transcript": [entry_json(e) for e in entries],
        }
    )


@api.post(
    "/runs",
    response_model=RunOut,
    tags=["runs"],
    operation_id="create_run",
    responses={
        200: {"content": {"text/event-stream": {"schema": _SSE_EVENT}}},
        **problems(
            401,
            403,
            409,
            422,
            503,
            s403="The thread belongs to someone else: only its owner sends messages into it.",
            s409="The thread has a run in progress.",
        ),
    },
)
async def create_run(
    caller: Caller,
    state: State,
    body: RunIn,
    stream: Annotated[bool, Query(description="Stream server-sent events instead of one JSON result.")] = False,
) -> JSONResponse | StreamingResponse:
    """Send a message and run the agent until it finishes or pauses.

    With `stream=true` the answer is `text/event-stream`: `status`, `progress`, `tool_call`,
    `decision` (a call's decision, as transcript lines show it), `tool_result`, `text_delta`,
    `request` (one per open request), then `run` (the whole result) or `error` (a problem document).
    """
    if stream:
        assert state.tasks is not None, "the server's lifespan has not started"
        return StreamingResponse(
            stream_run(state.sayso, state.tasks, caller, body),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    return _json(run_json(await start_run(state.sayso, caller, body)))


@api.get(
    "/runs/{run_id}",
    response_model=RunOut,
    tags=["runs"],
    operation_id="get_run",
    responses=problems(401, 404, 422, 503),
)
async def get_run(caller: Caller, sayso: Runtime, run_id: Id) -> JSONResponse:
    """Where a run stands, with the requests it still waits on."""
    return _json(run_json(await sayso.result(run_id, principal=caller)))


@api.post(
    "/runs/{run_id}/resume",
    response_model=RunOut,
    tags=["runs"],
    operation_id="resume_run",
    responses=problems(
        401,
        404,
        409,
        422,
        503,
        s409="The run is not paused, another resume won, or requests are still open (use `force`).",
    ),
)
async def resume_run(caller: Caller, sayso: Runtime, run_id: Id, body: ResumeIn | None = None) -> JSONResponse:
    """Resume a paused run; with `force`, requests still open count as skipped."""
    return _json(run_json(await sayso.resume(run_id, force=body.force if body else False, principal=caller)))


@api.get(
    "/requests",
    response_model=InboxOut,
    tags=["requests"],
    operation_id="list_requests",
    responses=problems(401, 422, 503),
)
async def inbox(
    caller: Caller,
    sayso: Runtime,
    agent: Annotated[str | None, Query(max_length=200, description="Asked by or for this agent.")] = None,
    kind: RequestKind | None = None,
    thread_id: Annotated[str | None, Query(pattern=ID_PATTERN)] = None,
    older_than: Annotated[float | None, Query(ge=0, le=1e10, description="Opened at least N seconds ago.")] = None,
    newer_than: Annotated[float | None, Query(ge=0, le=1e10, description="Opened at most N seconds ago.")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> JSONResponse:
    """Every open request across threads that the caller may decide, oldest first, a page at a time."""
    query = InboxFilter(agent=agent, kind=kind, thread_id=thread_id, older_than=older_than, newer_than=newer_than)
    page = await sayso.inbox(query, principal=caller, limit=limit, cursor=cursor)
    return _json({"requests": [request_json(r) for r in page.requests], "next_cursor": page.next_cursor})


@api.get(
    "/requests/{request_id}",
    response_model=RequestStateOut,
    tags=["requests"],
    operation_id="get_request",
    responses=problems(401, 404, 422, 503),
)
async def get_request(caller: Caller, sayso: Runtime, request_id: Id) -> JSONResponse:
    """A request, whether it still waits, and its decision if any: who took it, through which interface, when."""
    return _json(request_state_json(await sayso.request(request_id, principal=caller), now=time.time()))


@api.post(
    "/requests/{request_id}/decision",
    response_model=DecideOut,
    tags=["requests"],
    operation_id="decide_request",
    responses=problems(
        401,
        403,
        404,
        409,
        410,
        422,
        503,
        s403="The caller is neither the thread's owner nor an approver for its agent.",
        s409="A different decision was taken first, or the request's pause is closed.",
        s422="The decision does not fit the request (it stays open).",
    ),
)
async def decide(
    caller: Caller,
    sayso: Runtime,
    request_id: Id,
    body: Annotated[DecisionIn, Body()],
    via: Annotated[
        Literal["rest", "web"],
        Header(alias="Sayso-Via", description="The client deciding: `web` for the web UI; others see it named."),
    ] = "rest",
) -> JSONResponse:
    """Decide one request; the run resumes when it was the last open request of its pause.

    Repeating the decision already taken is a harmless no-op (`recorded: false`); a different
    second decision is refused with 409, and a refused decision leaves the request open.
    """
    return _json(_decide_json(await sayso.decide(request_id, to_decision(body), principal=caller, via=via)))


def grant_json(grant: Grant) -> dict[str, Any]:
    """A grant as REST shows it: RFC 3339 times beside the epoch ones kept for existing clients."""
    return asdict(grant) | {
        "created": rfc3339(grant.created_at),
        "expires": rfc3339(grant.expires_at),
        "revoked": rfc3339(grant.revoked_at),
    }


@api.get(
    "/grants", response_model=GrantListOut, tags=["grants"], operation_id="list_grants", responses=problems(401, 503)
)
async def grants(caller: Caller, sayso: Runtime) -> JSONResponse:
    """Active remembered approvals, newest first: the caller's own, or every grant for an admin (`*` approver)."""
    return _json({"grants": [grant_json(g) for g in await sayso.grants(principal=caller)]})


@api.delete(
    "/grants/{grant_id}",
    response_model=GrantOut,
    tags=["grants"],
    operation_id="revoke_grant",
    responses=problems(401, 404, 422, 503, s404="No active grant of the caller's has this id."),
)
async def revoke_grant(caller: Caller, sayso: Runtime, grant_id: Id) -> JSONResponse:
    """Revoke a grant; the next call it covered asks again. 404 for a grant that is not the caller's."""
    return _json(grant_json(await sayso.revoke_grant(grant_id, principal=caller)))


_APPROVERS_ONLY = "Only approvers read the audit log and run expiry."


@api.get(
    "/audit",
    response_model=AuditPageOut,
    tags=["audit"],
    operation_id="list_audit_records",
    responses=problems(401, 403, 422, 503, s403=_APPROVERS_ONLY),
)
async def audit(
    caller: Caller,
    sayso: Runtime,
    order: Literal["asc", "desc"] = "asc",
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    cursor: Annotated[int | None, Query(ge=0, le=2**62, description="The `next_cursor` of the previous page.")] = None,
) -> JSONResponse:
    """The audit log a page at a time, oldest first (or newest first with `order=desc`); for approvers."""
    page = await sayso.audit_page(principal=caller, newest_first=order == "desc", limit=limit, cursor=cursor)
    records = [asdict(r) | {"at": rfc3339(_audit_time(r.body))} for r in page.records]
    return _json({"records": records, "next_cursor": page.next_cursor, "total": page.total})


def _audit_time(body: Mapping[str, Any]) -> float | None:
    """When an audit record's event happened, as its body says (`decided_at` or `at`)."""
    at = body.get("decided_at", body.get("at"))
    return float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None


@api.get(
    "/audit/verify",
    response_model=AuditVerifyOut,
    tags=["audit"],
    operation_id="verify_audit",
    responses=problems(401, 403, 503, s403=_APPROVERS_ONLY),
)
async def verify_audit(caller: Caller, sayso: Runtime) -> JSONResponse:
    """Verify the audit log: intact, or the first record that was altered, lost, moved, forged or cut off.

    With an audit key the chain is anchored (every record signed, the head checkpointed); without one
    `anchored` is false and `note` says plainly what cannot be detected.
    """
    report = await sayso.audit_report(principal=caller)
    problem = asdict(report.problem) if report.problem else None
    body = {"intact": report.intact, "records": report.records, "problem": problem}
    return _json(body | {"anchored": report.anchored, "note": report.note})


@api.post(
    "/expire",
    response_model=ExpireOut,
    tags=["runs"],
    operation_id="expire_requests",
    responses=problems(401, 403, 503, s403=_APPROVERS_ONLY),
)
async def expire(caller: Caller, sayso: Runtime) -> JSONResponse:
    """Close every paused run whose open requests all expired (the server also does this periodically); approvers."""
    return _json({"runs": [run_json(r) for r in await sayso.expire(principal=caller)]})


async def _sweep_recover(sayso: Sayso, every: float) -> None:
    """At start and every `every` seconds, carry on runs whose process died, so nobody resumes them by hand.

    That is this server's own runs before a restart, or another replica's whose lease lapsed.
    """
    while True:
        try:
            carried = await sayso.recover()
        except SaysoError:
            logger.exception("the recovery sweep failed; retrying in %ss", every)
        else:
            if carried:
                logger.info("carried on %d run(s) whose process had stopped", len(carried))
        await anyio.sleep(every)


_LIVE_EVENT: dict[str, Any] = {
    "type": "object",
    "description": "One server-sent event; `data` is JSON (see the endpoint's description).",
    "properties": {"event": {"type": "string", "enum": LIVE_EVENT_NAMES}, "data": {"type": "string"}},
    "required": ["event", "data"],
}


@api.get(
    "/events",
    tags=["requests"],
    operation_id="watch_changes",
    response_class=StreamingResponse,
    responses={
        200: {"description": "Server-sent events.", "content": {"text/event-stream": {"schema": _LIVE_EVENT}}},
        **problems(401, 422, 503),
    },
)
async def events(
    caller: Caller,
    state: State,
    thread_id: Annotated[
        str | None, Query(pattern=ID_PATTERN, description="Also follow this thread's runs and history.")
    ] = None,
) -> StreamingResponse:
    """What changes for the caller, as it happens, whichever interface or process changed it.

    Events: `ready` (watching has begun: read the current state now), `request.opened` (a request),
    `request.closed` (as `GET /v1/requests/{request_id}` answers: status, decision, who, `via`),
    `run.changed` (`thread_id`, `run_id`, `status`, `last_seq` of the followed thread),
    `threads.changed`, and `end` (the stream closes after a while; connect again). Only what the
    caller may see is reported.
    """
    stream = live_events(state.sayso, caller, thread_id=thread_id, settings=state.live, closing=lambda: state.closing)
    return StreamingResponse(
        stream, media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )


async def _sweep_expired(sayso: Sayso, every: float) -> None:
    """Every `every` seconds, close the runs whose open requests all expired (the runtime announces them)."""
    while True:
        await anyio.sleep(every)
        try:
            await sayso.expire()
        except SaysoError:
            # A failed sweep (the store briefly away) is retried at the next tick, not fatal to the server.
            logger.exception("the expiry sweep failed; retrying in %ss", every)


@asynccontextmanager
async def _lifespans(apps: Sequence[tuple[str, Starlette]]) -> AsyncIterator[None]:
    """The lifespans of mounted apps, entered in order and left in reverse."""
    async with AsyncExitStack() as stack:
        for _, sub in apps:
            await stack.enter_async_context(sub.router.lifespan_context(sub))
        yield


def create_app(
    sayso: Sayso,
    *,
    webhooks: Sequence[WebhookConfig] | None = None,
    expire_every_seconds: float | None = DEFAULT_EXPIRE_EVERY_SECONDS,
    recover_every_seconds: float | None = DEFAULT_RECOVER_EVERY_SECONDS,
    routers: Sequence[APIRouter] = (),
    live: LiveSettings | None = None,
    apps: Sequence[tuple[str, Starlette]] = (),
) -> FastAPI:
    """The server for `sayso`: REST under `/v1`, the web UI at `/`, `/healthz` and `/openapi.json`.

    The app opens the runtime's store when it starts and closes it when it stops, after the
    runs it started have finished and pending webhook deliveries had their grace period.

    Args:
        sayso: the runtime (not yet opened).
        webhooks: where to send signed request events; default: the config's `webhooks`.
        expire_every_seconds: how often to close runs whose open requests all expired (and
            send `request.expired`); `None` never does it in the background.
        recover_every_seconds: how often to carry on runs whose process died (once at start, then
            periodically); `None` never does it in the background.
        routers: more routers to include.
        live: how live streams (`/v1/events`) look at the store and how long each lasts.
        apps: ASGI apps with lifespans of their own (such as `/mcp`), each served at its path; their
            lifespans run inside the server's, once the runtime is open.
    """
    # Webhook events come from the store's outbox, written with each change by whichever process made
    # it (REST, A2A, AG-UI, the CLI, another replica), and are delivered by whichever server runs.
    emitter = WebhookDispatcher(sayso, sayso.config.webhooks if webhooks is None else webhooks)
    state = ServerState(sayso=sayso, emitter=emitter, live=live or LiveSettings())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with sayso, emitter, _lifespans(apps), anyio.create_task_group() as tasks:
            state.tasks = tasks
            async with anyio.create_task_group() as background:
                if expire_every_seconds is not None:
                    background.start_soon(_sweep_expired, sayso, expire_every_seconds)
                if recover_every_seconds is not None:
                    background.start_soon(_sweep_recover, sayso, recover_every_seconds)
                yield
                state.closing = True
                background.cancel_scope.cancel()
            # Leaving the task group waits for streamed runs still working: no run is cut short.
        state.tasks = None

    app = FastAPI(
        title="sayso",
        version="0.1.0",
        summary="Agents that pause for a person: runs, open requests and decisions.",
        lifespan=lifespan,
        docs_url=None,  # served by `install_pages` from local files: no CDN
        redoc_url=None,
    )
    app.state.sayso_server = state
    # One wrapper in front of REST, the web UI, A2A and AG-UI: loopback Host in local mode, JSON (or a
    # token) for every state-changing request, bounded well-formed bodies, no framing, a strict CSP.
    app.add_middleware(EdgeGuard, local_mode=not sayso.config.principals, limits=sayso.config.limits)
    install_problem_handlers(app)
    app.include_router(api)
    for router in routers:
        app.include_router(router)
    for path, sub in apps:
        # A route, not a mount: the app answers at exactly `path` (a mount would redirect it to `path/`).
        app.router.routes.append(Route(path, endpoint=sub))

    @app.get(
        "/healthz", response_model=HealthOut, tags=["server"], operation_id="check_health", responses=problems(503)
    )
    async def health() -> JSONResponse:
        """The server is up and its store answers (503 otherwise)."""
        await sayso.ping()
        return _json({"status": "ok"})

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    install_pages(app, STATIC)
    return app
