"""The A2A routes: each entry's JSON-RPC endpoint and agent card, with the HITL extension's echo.

`a2a_router(sayso)` returns a FastAPI router to pass to `sayso.server.create_app(routers=[...])`.
Every configured entry is served under its name: each agent, and each orchestration (kaboo's
`orchestrations:`), whose lead agent answers:

- `POST /a2a/{name}`: JSON-RPC 2.0 (A2A 1.0, and A2A 0.3's `message/send` for older clients),
  blocking (`SendMessage`) or streaming over SSE (`SendStreamingMessage`); a method of the other
  version than the call's `A2A-Version` says is refused before dispatch (`_versions`), and an
  A2A 0.3 call's params are checked there too (`_v0_3`);
- `GET /a2a/{name}/.well-known/agent-card.json`: its card, declaring the extension;
- `POST /agents/{namespace}/{name}` and its card: the same endpoint at kagent's address
  (`a2a.namespace`), so a kagent client's URLs work unchanged;
- `GET /.well-known/agent-card.json`: the configured entry's card.

A card's URL is the path it was fetched under, so a client keeps using the address it found.

The a2a-sdk does not echo activated extensions, so the route adds `A2A-Extensions` to the
response itself when the call requested the HITL extension. The router's lifespan holds the
task group that message work runs in and the push-notification sender.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import anyio
from a2a.extensions.common import get_requested_extensions
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill
from fastapi import APIRouter, FastAPI
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..._runtime import Sayso, authenticate
from ...exceptions import ConfigError, Unauthenticated
from ._handler import ACTIVATED_STATE, CALLER_STATE, Background, SaysoRequestHandler
from ._mapping import EXTENSION_DESCRIPTION, HITL_URI
from ._push import MarkPushConfigStore, signing_client
from ._push_delivery import PushDispatcher
from ._tasks import TaskReader, status_refusal
from ._v0_3 import params_refusal, with_null_result
from ._versions import version_refusal

if TYPE_CHECKING:
    import grpc.aio

EXTENSION_HEADERS = ("A2A-Extensions", "X-A2A-Extensions")
"""The request headers that name extensions: A2A 1.0's, and A2A 0.3's older name."""

PROTOCOL_VERSION = "1.0"
LEGACY_PROTOCOL_VERSION = "0.3.0"
"""What a card says in `a2a.legacy_only` mode: kagent 0.x spoke A2A 0.3."""

UNAUTHENTICATED_CODE = -32001
"""The JSON-RPC error code of a call without a valid bearer token (answered with HTTP 401)."""

INVALID_REQUEST_CODE = -32600
"""JSON-RPC's code for a body that is not a call (answered with HTTP 400)."""


def requested_extensions(request: Request) -> set[str]:
    """The extension URIs a request asks for, under either header name (case and spaces ignored)."""
    return get_requested_extensions([value for name in EXTENSION_HEADERS for value in request.headers.getlist(name)])


class _ContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's context, plus the caller and whether the HITL extension is activated for this call."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.requested_extensions = requested_extensions(request)
        context.state[CALLER_STATE] = request.state.sayso_caller
        context.state[ACTIVATED_STATE] = HITL_URI in context.requested_extensions
        return context


def entry_paths(sayso: Sayso, name: str) -> tuple[str, str]:
    """The two addresses of one entry's A2A endpoint: sayso's `/a2a/{name}`, kagent's `/agents/{ns}/{name}`."""
    return f"/a2a/{name}", f"/agents/{sayso.config.a2a.namespace}/{name}"


def agent_card(
    sayso: Sayso, name: str, base_url: str, *, path: str | None = None, grpc_port: int | None = None
) -> AgentCard:
    """The card of one entry (agent, orchestration or workflow): its endpoint, streaming, pushes, the HITL extension.

    `path` is the endpoint's address the card names (default `/a2a/{name}`). With `grpc_port`, the
    card also offers gRPC on the same host, the entry named by its tenant `<namespace>/<name>`. In
    `a2a.legacy_only` mode the card is kagent 0.x's: A2A 0.3, and no v1 extension.
    """
    config = sayso.config
    agent = config.entries()[name]
    team = config.orchestrations.get(name)
    if name in config.workflows:
        description = config.workflows[name].description or f"The sayso workflow {name!r}."
    else:
        description = (
            (team.description if team else None)
            or config.agents[agent].description
            or (f"The sayso team {name!r}, led by {agent!r}." if team else f"The sayso agent {name!r}.")
        )
    legacy = config.a2a.legacy_only
    extensions = [] if legacy else [AgentExtension(uri=HITL_URI, description=EXTENSION_DESCRIPTION, required=False)]
    interfaces = [
        AgentInterface(
            url=base_url.rstrip("/") + (path or entry_paths(sayso, name)[0]),
            protocol_binding="JSONRPC",
            protocol_version=LEGACY_PROTOCOL_VERSION if legacy else PROTOCOL_VERSION,
        )
    ]
    if grpc_port is not None and not legacy:
        fetched = urlsplit(base_url)
        # The host as the card was fetched from: an IPv6 one keeps its brackets ([::1]:50051, not ::1:50051).
        host = fetched.netloc.removesuffix(f":{fetched.port}") if fetched.port else fetched.netloc
        interfaces.append(
            AgentInterface(
                url=f"{host}:{grpc_port}",
                protocol_binding="GRPC",
                protocol_version=PROTOCOL_VERSION,
                tenant=f"{config.a2a.namespace}/{name}",
            )
        )
    return AgentCard(
        name=name,
        description=description,
        version="0.1.0",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True, push_notifications=True, extensions=extensions),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id=name, name=name, description=description, tags=["sayso"])],
    )


def a2a_router(
    sayso: Sayso,
    *,
    grpc_port: int | None = None,
    grpc_host: str = "127.0.0.1",
    on_grpc_listening: Callable[[int], None] | None = None,
) -> APIRouter:
    """The A2A endpoints and agent cards of every entry of `sayso` (agents, orchestrations and workflows).

    With `grpc_port`, the router's lifespan also serves the same handlers over gRPC on
    `grpc_host:grpc_port` (the `grpc` extra), and the cards offer it. The port it listens on (with
    `grpc_port` 0, the one the system picked, which the cards offer, not 0) is told `on_grpc_listening`.
    """
    grpc_offered = _Offered(grpc_port)
    background = Background()
    push_store = MarkPushConfigStore(sayso, sayso.config.a2a, caller_state=CALLER_STATE)
    handlers = {
        name: SaysoRequestHandler(sayso, agent, background=background, push_store=push_store)
        for name, agent in sayso.config.entries().items()
    }

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with signing_client(sayso.config.a2a) as http, anyio.create_task_group() as pushing:
            legacy = sayso.config.a2a.kagent_compat or sayso.config.a2a.legacy_only
            reader = TaskReader(sayso, legacy=legacy, clock=time.time)
            background.push = PushDispatcher(sayso, push_store, reader, http)
            pushing.start_soon(background.push.run)
            grpc_server = await _grpc_server(sayso, handlers, grpc_host, grpc_port)
            if grpc_server is not None:
                grpc_offered.port = grpc_server[1]
                if on_grpc_listening is not None:
                    on_grpc_listening(grpc_server[1])
            try:
                async with anyio.create_task_group() as tasks:
                    background.tasks = tasks
                    yield
                    # Leaving the task group waits for message work still running: no run is cut short.
            finally:
                if grpc_server is not None:
                    await grpc_server[0].stop(GRPC_GRACE_SECONDS)
            background.tasks = background.push = None
            pushing.cancel_scope.cancel()  # what is left to push is claimed by the next server

    router = APIRouter(lifespan=lifespan)
    for name, handler in handlers.items():
        dispatcher = JsonRpcDispatcher(handler, context_builder=_ContextBuilder(), enable_v0_3_compat=True)
        for path in entry_paths(sayso, name):
            router.add_route(path, _rpc_endpoint(sayso, dispatcher), methods=["POST"], include_in_schema=False)
            router.add_route(
                f"{path}/.well-known/agent-card.json",
                _card_endpoint(sayso, name, path, grpc_offered),
                methods=["GET"],
                include_in_schema=False,
            )
    router.add_route(
        "/.well-known/agent-card.json",
        _card_endpoint(sayso, sayso.config.entry_name, None, grpc_offered),
        methods=["GET"],
        include_in_schema=False,
    )
    return router


GRPC_GRACE_SECONDS = 5.0
"""How long a stopping gRPC server lets calls in flight finish."""


@dataclass
class _Offered:
    """The gRPC port the cards offer: the one asked for until the server listens, then the one it got."""

    port: int | None


async def _grpc_server(
    sayso: Sayso, handlers: dict[str, SaysoRequestHandler], host: str, port: int | None
) -> tuple[grpc.aio.Server, int] | None:
    """The started gRPC server of the handlers, and the port it listens on, when a port is asked for."""
    if port is None:
        return None
    try:
        from ._grpc import start_grpc
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ConfigError("A2A over gRPC needs the grpc extra: pip install 'sayso[grpc]'") from exc
    return await start_grpc(sayso, handlers, host=host, port=port)


def _rpc_endpoint(sayso: Sayso, dispatcher: JsonRpcDispatcher) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            request.state.sayso_caller = authenticate(sayso, request.headers.get("authorization"))
        except Unauthenticated as exc:
            return _unauthenticated(exc)
        call = _call(await request.body())
        if isinstance(call, str):
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST_CODE, "message": call}}
            return JSONResponse(body, status_code=400)
        refused = await version_refusal(call.method, call.request_id, request.headers)
        refused = refused or params_refusal(call.method, call.request_id, call.body)
        refused = refused or status_refusal(call.method, call.request_id, call.body)
        if refused is not None:
            return refused
        response = with_null_result(call.method, await dispatcher.handle_requests(request))
        if HITL_URI in requested_extensions(request):
            response.headers["A2A-Extensions"] = HITL_URI
        return response

    return endpoint


@dataclass(frozen=True)
class _Call:
    """What the endpoint reads of a JSON-RPC call before the SDK dispatches it."""

    method: str
    request_id: str | int | None
    """The call's id as an answer may repeat it (a string or an integer, never a boolean)."""
    body: Mapping[str, object]
    """The whole call, as the SDK's A2A 0.3 adapter will read it."""


def _call(body: bytes) -> _Call | str:
    """The body's JSON-RPC call, or what makes it none (answered 400, before dispatch).

    The server's guard already refused bodies that are not JSON; what is left is JSON that is not
    one call object (an array, a string, an object without `jsonrpc: "2.0"` and a `method`).
    """
    try:
        call = json.loads(body)
    except ValueError:
        return "the body is not JSON"
    if not isinstance(call, dict):
        return "the body must be one JSON-RPC call object (batches are not served)"
    method, found = call.get("method"), call.get("id")
    if call.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return "a JSON-RPC call needs 'jsonrpc': '2.0' and a 'method' string"
    return _Call(method, found if isinstance(found, str | int) and not isinstance(found, bool) else None, call)


def _unauthenticated(exc: Unauthenticated) -> Response:
    """401 before any JSON-RPC dispatch; the body is still a JSON-RPC error, so A2A clients can read it.

    Every error raised once a call is dispatched goes through `to_a2a_error` instead.
    """
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": UNAUTHENTICATED_CODE, "message": exc.problem}}
    return JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})


def _card_endpoint(
    sayso: Sayso, agent: str, path: str | None, grpc: _Offered
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        card = agent_card_to_dict(agent_card(sayso, agent, str(request.base_url), path=path, grpc_port=grpc.port))
        for extension in card.get("capabilities", {}).get("extensions", []):
            # protobuf JSON drops a false `required`; kagent's cards spell it out.
            extension.setdefault("required", False)
        return JSONResponse(card)

    return endpoint
