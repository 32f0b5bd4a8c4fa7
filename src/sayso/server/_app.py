"""The FastAPI application: REST endpoints, the web UI (docs/guides/web-ui.md) and the server's lifespan.

See docs/guides/rest.md.

Endpoints only translate: they read the wire models of `_schemas_in`, call one of the runtime's
public verbs with the caller's principal, and return the JSON shapes of `sayso.request_json` /
`sayso.run_json`. Who may see or do what is the runtime's rule, applied inside its verbs.
Errors are raised, never built here; `_problems` turns each into an RFC 9457 problem.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.applications import Starlette
from starlette.routing import Route

from .._config.file import WebhookConfig
from .._runtime import Outage, Sayso
from ._deps import JsonBody, ServerState, problems
from ._guard import EdgeGuard
from ._live import LiveSettings
from ._pages import install_pages
from ._problems import PROBLEM_MEDIA_TYPE, install_problem_handlers
from ._routes_requests import router as requests_router
from ._routes_stats import router as stats_router
from ._routes_threads import router as threads_router
from ._schemas_out import HealthOut
from ._webhooks import WebhookDispatcher

logger = logging.getLogger("sayso.server")

DEFAULT_EXPIRE_EVERY_SECONDS = 30.0
"""How often the server closes runs whose open requests all expired, unless told otherwise."""

DEFAULT_RECOVER_EVERY_SECONDS = 5.0
"""How often the server looks for runs whose process died (their lease lapsed) and carries them on."""

STATIC = Path(__file__).parent / "static"


async def _sweep_recover(sayso: Sayso, every: float) -> None:
    """At start and every `every` seconds, carry on runs whose process died, so nobody resumes them by hand.

    That is this server's own runs before a restart, or another replica's whose lease lapsed.
    """
    outage = Outage(logger, "the recovery sweep")
    while True:
        try:
            carried = await sayso.recover()
        except Exception:
            # Whatever failed (the store briefly away, a row it cannot read) is retried at the next tick: an error
            # leaving this task would end the lifespan and close the store under every endpoint, /healthz too.
            outage.failed(every)
        else:
            outage.succeeded()
            if carried:
                logger.info("carried on %d run(s) whose process had stopped", len(carried))
        await anyio.sleep(every)


async def _sweep_expired(sayso: Sayso, every: float) -> None:
    """At start and every `every` seconds, fire due escalation steps and close runs whose requests all expired.

    At start too, so what came due while no server ran happens now; the runtime announces each change.
    """
    outage = Outage(logger, "the expiry sweep")
    while True:
        try:
            await sayso.expire()
        except Exception:  # as the recovery sweep: logged and retried, never the server's end
            outage.failed(every)
        else:
            outage.succeeded()
        await anyio.sleep(every)


async def _sweep_outbox(sayso: Sayso, every: float) -> None:
    """Every `every` seconds, delete webhook events and deliveries done with for longer than the retention.

    Its own task beside the expiry sweep, so a large first prune (of a store never pruned) delays no expiry.
    """
    outage = Outage(logger, "pruning the webhook outbox")
    while True:
        await anyio.sleep(every)
        try:
            pruned = await sayso.prune_events()
        except Exception:  # as the recovery sweep: logged and retried, never the server's end
            outage.failed(every)
        else:
            outage.succeeded()
            if pruned:
                logger.info("pruned %d webhook event(s) and deliveries past their retention", pruned)


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
    form_paths: Sequence[str] = (),
) -> FastAPI:
    """The server for `sayso`: REST under `/v1`, the web UI at `/`, `/healthz` and `/openapi.json`.

    The app opens the runtime's store when it starts and closes it when it stops, after the
    runs it started have finished and pending webhook deliveries had their grace period.

    Args:
        sayso: the runtime (not yet opened).
        webhooks: where to send signed request events; default: the config's `webhooks`.
        expire_every_seconds: how often to close runs whose open requests all expired (and
            send `request.expired`), and to prune webhook events and deliveries older than the
            config's `webhooks_retention_days`; `None` does neither in the background.
        recover_every_seconds: how often to carry on runs whose process died (once at start, then
            periodically); `None` never does it in the background.
        routers: more routers to include.
        live: how live streams (`/v1/events`) look at the store and how long each lasts.
        apps: ASGI apps with lifespans of their own (such as `/mcp`), each served at its path; their
            lifespans run inside the server's, once the runtime is open.
        form_paths: path prefixes whose POSTs may be HTML forms, because what they carry authorizes them
            (the channels' mailed links and Slack's interactions); every other POST must be JSON.
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
                    background.start_soon(_sweep_outbox, sayso, expire_every_seconds)
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
    app.add_middleware(
        EdgeGuard, local_mode=not sayso.config.principals, limits=sayso.config.limits, form_paths=tuple(form_paths)
    )
    install_problem_handlers(app)
    app.include_router(threads_router)
    app.include_router(requests_router)
    app.include_router(stats_router)
    for router in routers:
        app.include_router(router)
    for path, sub in apps:
        # A route, not a mount: the app answers at exactly `path` (a mount would redirect it to `path/`).
        app.router.routes.append(Route(path, endpoint=sub))

    @app.get(
        "/healthz",
        response_model=HealthOut,
        response_model_exclude_unset=True,
        tags=["server"],
        operation_id="check_health",
        responses=problems(503),
    )
    async def health() -> JsonBody:
        """The server is up and its store answers (503 otherwise)."""
        await sayso.ping()
        return {"status": "ok"}

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    install_pages(app, STATIC)
    _document_the_edge(app, local_mode=not sayso.config.principals)
    return app


EDGE_REFUSALS = {
    400: "Local development mode and a `Host` other than 127.0.0.1 or localhost; or a body that is not UTF-8 JSON, "
    "or nests too deeply.",
    413: "The body is over `limits.request_bytes`, or a message, arguments or answer over its limit.",
    415: "A POST without a bearer token must be JSON.",
}
"""What `EdgeGuard` may answer before any endpoint runs (400 on every path; 413 and 415 on writes)."""


def _document_the_edge(app: FastAPI, *, local_mode: bool) -> None:
    """Add the edge guard's refusals to every operation of the OpenAPI document, so it lists all a client may get.

    In local development mode the bearer token is optional (`{}` among an operation's `security`): every caller is
    `local`, and a document that required the token described a server that answered without one.
    """
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            problem = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/ProblemModel"}}}
            for item in schema["paths"].values():
                for method, operation in item.items():
                    if local_mode and operation.get("security"):
                        operation["security"] = [{}, *operation["security"]]
                    statuses = (400, 413, 415) if method in ("post", "put", "patch", "delete") else (400,)
                    for status in statuses:
                        operation["responses"].setdefault(
                            str(status), {"description": EDGE_REFUSALS[status], "content": problem}
                        )
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to extend the document
