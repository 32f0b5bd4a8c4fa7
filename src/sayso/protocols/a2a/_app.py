"""The A2A routes: each agent's JSON-RPC endpoint and agent card, with the HITL extension's echo.

`a2a_router(sayso)` returns a FastAPI router to pass to `sayso.server.create_app(routers=[...])`:

- `POST /a2a/{agent}`: JSON-RPC 2.0 (A2A 1.0, and A2A 0.3's `message/send` for older clients),
  blocking (`SendMessage`) or streaming over SSE (`SendStreamingMessage`);
- `GET /a2a/{agent}/.well-known/agent-card.json`: the agent's card, declaring the extension;
- `GET /.well-known/agent-card.json`: the entry agent's card.

The a2a-sdk does not echo activated extensions, so the route adds `A2A-Extensions` to the
response itself when the call requested the HITL extension.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from a2a.extensions.common import get_requested_extensions
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill
from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..._runtime import Sayso
from ...exceptions import Unauthenticated
from .._auth import authenticate
from ._handler import ACTIVATED_STATE, CALLER_STATE, SaysoRequestHandler
from ._mapping import EXTENSION_DESCRIPTION, HITL_URI

EXTENSION_HEADERS = ("A2A-Extensions", "X-A2A-Extensions")
"""The request headers that name extensions: A2A 1.0's, and A2A 0.3's older name."""

PROTOCOL_VERSION = "1.0"

UNAUTHENTICATED_CODE = -32001
"""The JSON-RPC error code of a call without a valid bearer token (answered with HTTP 401)."""


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


def agent_card(sayso: Sayso, agent: str, base_url: str) -> AgentCard:
    """The card of one agent: its JSON-RPC endpoint, streaming, and the HITL extension."""
    spec = sayso.config.agents[agent]
    description = spec.description or f"The sayso agent {agent!r}."
    return AgentCard(
        name=agent,
        description=description,
        version="0.1.0",
        supported_interfaces=[
            AgentInterface(
                url=f"{base_url.rstrip('/')}/a2a/{agent}", protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION
            )
        ],
        capabilities=AgentCapabilities(
            streaming=True,
            extensions=[AgentExtension(uri=HITL_URI, description=EXTENSION_DESCRIPTION, required=False)],
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id=agent, name=agent, description=description, tags=["sayso"])],
    )


def a2a_router(sayso: Sayso) -> APIRouter:
    """The A2A endpoints and agent cards of every agent of `sayso`."""
    router = APIRouter()
    for agent in sayso.config.agents:
        dispatcher = JsonRpcDispatcher(
            SaysoRequestHandler(sayso, agent), context_builder=_ContextBuilder(), enable_v0_3_compat=True
        )
        router.add_route(f"/a2a/{agent}", _rpc_endpoint(sayso, dispatcher), methods=["POST"], include_in_schema=False)
        router.add_route(
            f"/a2a/{agent}/.well-known/agent-card.json",
            _card_endpoint(sayso, agent),
            methods=["GET"],
            include_in_schema=False,
        )
    router.add_route(
        "/.well-known/agent-card.json",
        _card_endpoint(sayso, sayso.config.entry_agent),
        methods=["GET"],
        include_in_schema=False,
    )
    return router


def _rpc_endpoint(sayso: Sayso, dispatcher: JsonRpcDispatcher) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            request.state.sayso_caller = authenticate(sayso, request.headers.get("authorization"))
        except Unauthenticated as exc:
            return _unauthenticated(exc)
        response = await dispatcher.handle_requests(request)
        if HITL_URI in requested_extensions(request):
            response.headers["A2A-Extensions"] = HITL_URI
        return response

    return endpoint


def _unauthenticated(exc: Unauthenticated) -> Response:
    """401 before any JSON-RPC dispatch; the body is still a JSON-RPC error, so A2A clients can read it.

    Every error raised once a call is dispatched goes through `to_a2a_error` instead.
    """
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": UNAUTHENTICATED_CODE, "message": exc.problem}}
    return JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})


def _card_endpoint(sayso: Sayso, agent: str) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        card = agent_card_to_dict(agent_card(sayso, agent, str(request.base_url)))
        for extension in card.get("capabilities", {}).get("extensions", []):
            # protobuf JSON drops a false `required`; kagent's cards spell it out.
            extension.setdefault("required", False)
        return JSONResponse(card)

    return endpoint
