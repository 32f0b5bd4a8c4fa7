"""The FastAPI application: REST endpoints (§6.5), the web UI (§6.6) and the server's lifespan.

Endpoints only translate: they read the wire models of `_schemas`, call one of the runtime's
public verbs with the caller's principal, and return the JSON shapes of `sayso.request_json` /
`sayso.run_json`. Who may see or do what is the runtime's rule, applied inside its verbs.
Errors are raised, never built here; `_problems` turns each into an RFC 9457 problem.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from anyio.abc import TaskGroup
from fastapi import APIRouter, Body, Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from starlette.applications import Starlette
from starlette.routing import Route

from .._config import WebhookConfig
from .._core.access import Principal
from .._core.decisions import DECISION_ADAPTER
from .._core.requests import RequestKind
from .._results import DecideResult, request_json, run_json
from .._runtime import InboxFilter, RequestState, Sayso, new_id
from ..exceptions import InvalidInput, SaysoError
from ..protocols._auth import authenticate, authenticator
from ._problems import ProblemModel, install_problem_handlers
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
    to_decision,
)
from ._stream import start_run, stream_run
from ._webhooks import WebhookEmitter

logger = logging.getLogger("sayso.server")

DEFAULT_EXPIRE_EVERY_SECONDS = 30.0
"""How often the server closes runs whose open requests all expired, unless told otherwise."""

STATIC = Path(__file__).parent / "static"

_bearer = HTTPBearer(auto_error=False, description="A principal's token; not needed in local development mode.")

_PROBLEMS: dict[int | str, dict[str, Any]] = {
    status: {"model": ProblemModel, "content": {"application/problem+json": {}}}
    for status in (401, 403, 404, 409, 410, 422)
}

Id = Annotated[str, PathParam(min_length=1, max_length=64)]
ThreadId = Annotated[str, PathParam(pattern=ID_PATTERN)]


@dataclass(kw_only=True)
class ServerState:
    """What the endpoints share: the runtime, the webhook sender, and the task group of streamed runs."""

    sayso: Sayso
    emitter: WebhookEmitter
    tasks: TaskGroup | None = None
    """Runs that outlive their HTTP request (a streamed run whose client left) run here."""


_SSE_EVENT: dict[str, Any] = {
    "type": "object",
    "description": "One server-sent event; `data` is JSON.",
    "properties": {
        "event": {
            "type": "string",
            "enum": ["status", "progress", "tool_call", "tool_result", "text_delta", "request", "run", "error"],
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


api = APIRouter(prefix="/v1", responses=_PROBLEMS)


@api.get("/me", response_model=MeOut, tags=["principals"])
async def me(caller: Caller, sayso: Runtime) -> JSONResponse:
    """Who the caller is, and whether the server runs in local development mode."""
    local_mode = authenticator(sayso).local_mode
    return _json({"principal": caller.name, "local_mode": local_mode, "approver_for": list(caller.approver_for)})


@api.get("/agents", response_model=AgentListOut, tags=["threads"])
async def agents(caller: Caller, sayso: Runtime) -> JSONResponse:
    """The configured agents."""
    config = sayso.config
    listed = [
        AgentOut(name=name, description=spec.description, entry=name == config.entry_agent).model_dump()
        for name, spec in config.agents.items()
    ]
    return _json({"agents": listed})


@api.post("/threads", response_model=ThreadOut, status_code=201, tags=["threads"])
async def create_thread(caller: Caller, sayso: Runtime, body: ThreadIn | None = None) -> JSONResponse:
    """Open a thread with an agent; it is stored, and owned by the caller, when its first run starts."""
    agent = (body.agent if body else None) or sayso.config.entry_agent
    if agent not in sayso.config.agents:
        configured = ", ".join(sayso.config.agents)
        raise InvalidInput(f"no agent named {agent!r}; configured: {configured}", field="agent")
    thread_id = new_id("thr")
    return _json({"thread_id": thread_id, "agent": agent, "owner": None, "active_run": None, "transcript": []}, 201)


@api.get("/threads", response_model=ThreadListOut, tags=["threads"])
async def threads(caller: Caller, sayso: Runtime, limit: Annotated[int, Query(ge=1, le=200)] = 50) -> JSONResponse:
    """The caller's threads, newest first."""
    return _json({"threads": [asdict(t) for t in await sayso.threads(principal=caller, limit=limit)]})


@api.get("/threads/{thread_id}", response_model=ThreadOut, tags=["threads"])
async def thread(caller: Caller, sayso: Runtime, thread_id: ThreadId) -> JSONResponse:
    """A thread's history, and the run in progress with the requests it waits on."""
    record = await sayso.thread(thread_id, principal=caller)
    active = await sayso.result(record.active_run_id, principal=caller) if record.active_run_id else None
    entries = await sayso.transcript(thread_id, principal=caller)
    return _json(
        {
            "thread_id": record.thread_id,
            "agent": record.agent,
            "owner": record.owner,
            "active_run": run_json(active) if active else None,
            "transcript": [asdict(e) for e in entries],
        }
    )


@api.post(
    "/runs",
    response_model=RunOut,
    tags=["runs"],
    responses={200: {"content": {"text/event-stream": {"schema": _SSE_EVENT}}}},
)
async def create_run(
    caller: Caller,
    state: State,
    body: RunIn,
    stream: Annotated[bool, Query(description="Stream server-sent events instead of one JSON result.")] = False,
) -> JSONResponse | StreamingResponse:
    """Send a message and run the agent until it finishes or pauses.

    With `stream=true` the answer is `text/event-stream`: `status`, `progress`, `tool_call`,
    `tool_result`, `text_delta`, `request` (one per open request), then `run` (the whole
    result) or `error` (a problem document).
    """
    if stream:
        assert state.tasks is not None, "the server's lifespan has not started"
        return StreamingResponse(
            stream_run(state.sayso, state.tasks, caller, body),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    return _json(run_json(await start_run(state.sayso, caller, body)))


@api.get("/runs/{run_id}", response_model=RunOut, tags=["runs"])
async def get_run(caller: Caller, sayso: Runtime, run_id: Id) -> JSONResponse:
    """Where a run stands, with the requests it still waits on."""
    return _json(run_json(await sayso.result(run_id, principal=caller)))


@api.post("/runs/{run_id}/resume", response_model=RunOut, tags=["runs"])
async def resume_run(caller: Caller, sayso: Runtime, run_id: Id, body: ResumeIn | None = None) -> JSONResponse:
    """Resume a paused run; with `force`, requests still open count as skipped."""
    return _json(run_json(await sayso.resume(run_id, force=body.force if body else False, principal=caller)))


@api.get("/requests", response_model=InboxOut, tags=["requests"])
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


@api.get("/requests/{request_id}", response_model=RequestStateOut, tags=["requests"])
async def get_request(caller: Caller, sayso: Runtime, request_id: Id) -> JSONResponse:
    """A request, whether it still waits, and its decision if any."""
    state = await sayso.request(request_id, principal=caller)
    record = state.decision
    return _json(
        {
            "request": request_json(state.request),
            "status": request_status(state, now=time.time()),
            "decision": DECISION_ADAPTER.dump_python(record.decision, mode="json") if record else None,
            "decided_by": record.by if record else None,
            "principal": record.principal if record else None,
        }
    )


def request_status(state: RequestState, *, now: float) -> Literal["open", "decided", "closed", "expired"]:
    """How the REST API names where a request stands: decided, expired, still open, or closed unanswered."""
    if state.decision is not None:
        return "decided"
    if state.request.expires_at is not None and now >= state.request.expires_at:
        return "expired"
    return "open" if state.pause_status == "open" else "closed"


@api.post("/requests/{request_id}/decision", response_model=DecideOut, tags=["requests"])
async def decide(caller: Caller, sayso: Runtime, request_id: Id, body: Annotated[DecisionIn, Body()]) -> JSONResponse:
    """Decide one request; the run resumes when it was the last open request of its pause.

    Repeating the decision already taken is a harmless no-op (`recorded: false`); a different
    second decision is refused with 409, and a refused decision leaves the request open.
    """
    return _json(_decide_json(await sayso.decide(request_id, to_decision(body), principal=caller)))


@api.get("/grants", response_model=GrantListOut, tags=["grants"])
async def grants(caller: Caller, sayso: Runtime) -> JSONResponse:
    """Active remembered approvals, newest first: the caller's own, or every grant for an admin (`*` approver)."""
    return _json({"grants": [asdict(g) for g in await sayso.grants(principal=caller)]})


@api.delete("/grants/{grant_id}", response_model=GrantOut, tags=["grants"])
async def revoke_grant(caller: Caller, sayso: Runtime, grant_id: Id) -> JSONResponse:
    """Revoke a grant; the next call it covered asks again. 404 for a grant that is not the caller's."""
    return _json(asdict(await sayso.revoke_grant(grant_id, principal=caller)))


@api.get("/audit", response_model=AuditPageOut, tags=["audit"])
async def audit(
    caller: Caller,
    sayso: Runtime,
    order: Literal["asc", "desc"] = "asc",
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    cursor: Annotated[int | None, Query(ge=0, le=2**62, description="The `next_cursor` of the previous page.")] = None,
) -> JSONResponse:
    """The audit log a page at a time, oldest first (or newest first with `order=desc`); for approvers."""
    page = await sayso.audit_page(principal=caller, newest_first=order == "desc", limit=limit, cursor=cursor)
    return _json({"records": [asdict(r) for r in page.records], "next_cursor": page.next_cursor, "total": page.total})


@api.get("/audit/verify", response_model=AuditVerifyOut, tags=["audit"])
async def verify_audit(caller: Caller, sayso: Runtime) -> JSONResponse:
    """Check the hash chain of the audit log: intact, or the first record that was altered, lost or moved."""
    problem = await sayso.verify_audit(principal=caller)
    records = await sayso.audit_count()
    return _json({"intact": problem is None, "records": records, "problem": asdict(problem) if problem else None})


@api.post("/expire", response_model=ExpireOut, tags=["runs"])
async def expire(caller: Caller, sayso: Runtime) -> JSONResponse:
    """Close every paused run whose open requests all expired (the server also does this periodically); approvers."""
    return _json({"runs": [run_json(r) for r in await sayso.expire(principal=caller)]})


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
    routers: Sequence[APIRouter] = (),
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
        routers: more routers to include.
        apps: ASGI apps with lifespans of their own (such as `/mcp`), each served at its path; their
            lifespans run inside the server's, once the runtime is open.
    """
    emitter = WebhookEmitter(sayso.config.webhooks if webhooks is None else webhooks)
    state = ServerState(sayso=sayso, emitter=emitter)
    # Webhook events come from the runtime itself, so a request opened, decided or expired through
    # REST, A2A, AG-UI or the CLI is announced the same way.
    sayso.add_listener(emitter.emit)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with sayso, emitter, _lifespans(apps), anyio.create_task_group() as tasks:
            state.tasks = tasks
            async with anyio.create_task_group() as background:
                if expire_every_seconds is not None:
                    background.start_soon(_sweep_expired, sayso, expire_every_seconds)
                yield
                background.cancel_scope.cancel()
            # Leaving the task group waits for streamed runs still working: no run is cut short.
        state.tasks = None

    app = FastAPI(
        title="sayso",
        version="0.1.0",
        summary="Agents that pause for a person: runs, open requests and decisions.",
        lifespan=lifespan,
    )
    app.state.sayso_server = state
    install_problem_handlers(app)
    app.include_router(api)
    for router in routers:
        app.include_router(router)
    for path, sub in apps:
        # A route, not a mount: the app answers at exactly `path` (a mount would redirect it to `path/`).
        app.router.routes.append(Route(path, endpoint=sub))

    @app.get("/healthz", response_model=HealthOut, tags=["server"])
    async def health() -> JSONResponse:
        """The server is up and its store answers (503 otherwise)."""
        await sayso.ping()
        return _json({"status": "ok"})

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
