"""What every REST endpoint shares: the server's state, the caller and runtime dependencies, and problem docs.

`ServerState` is what the app keeps between requests; `Caller`, `Runtime` and `State` are the
FastAPI dependencies endpoints take; `problems` documents the RFC 9457 answers an endpoint can give;
`v1_router` is the router every `/v1` endpoint is on, refusing query parameters it does not take.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from anyio.abc import TaskGroup
from fastapi import APIRouter, Depends, Header, Request
from fastapi import Path as PathParam
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic.json_schema import JsonSchemaValue

from .._core.access import Principal
from .._core.ids import ID_PATTERN
from .._runtime import DecideResult, Sayso, authenticate, decide_json
from ._live import LiveSettings
from ._problems import PROBLEM_MEDIA_TYPE, ProblemModel
from ._webhooks import WebhookDispatcher

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
    503: "The store, or the Temporal cluster of an `engine: temporal` config, does not answer; try again.",
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


Id = Annotated[str, PathParam(pattern=ID_PATTERN)]
"""A run, request or grant id: sayso's ids fit `ID_PATTERN`, so one that does not (a NUL, which PostgreSQL cannot
even look up) is refused naming the parameter instead of being looked for."""

Via = Annotated[
    Literal["rest", "web"],
    Header(alias="Sayso-Via", description="The client acting: `web` for the web UI; others see it named."),
]
"""The interface a decision, a forced resume or a message that closes requests came through, as the audit names it."""
ThreadId = Id


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


_SSE_EVENT: JsonSchemaValue = {
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


# The dependencies are `async def` though they await nothing: FastAPI runs a plain `def` dependency
# in its worker threads, a hop out of the event loop and back for every request (bench/ANALYSIS.md).


async def _state(request: Request) -> ServerState:
    return _server_state(request)


async def _runtime(request: Request) -> Sayso:
    return _server_state(request).sayso


def _server_state(request: Request) -> ServerState:
    state = request.app.state.sayso_server
    assert isinstance(state, ServerState)
    return state


async def current_principal(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    """The caller, from its bearer token (everyone is `local` in local development mode).

    `credentials` only documents the scheme in the OpenAPI document; the token is read by the
    one authenticator A2A and AG-UI use too.
    """
    return authenticate(_server_state(request).sayso, request.headers.get("authorization"))


Caller = Annotated[Principal, Depends(current_principal)]
Runtime = Annotated[Sayso, Depends(_runtime)]
State = Annotated[ServerState, Depends(_state)]


JsonBody = dict[str, Any]
"""What a REST route returns: the JSON its `response_model` checks and serializes (`_schemas_out`)."""


def _decide_json(result: DecideResult) -> dict[str, Any]:
    return dict(decide_json(result))


async def _known_query(request: Request) -> None:
    """Refuse a query parameter the endpoint does not take, naming it.

    Ignored, a misspelt filter (`?stauts=open`) answered as if no filter had been asked for: the whole
    inbox, looking filtered. Fail closed instead, as a body's unknown field is.
    """
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    taken = _query_names(route)
    unknown = sorted({name for name in request.query_params if name not in taken})
    if unknown:
        takes = f"it takes {', '.join(sorted(taken))}" if taken else "it takes none"
        raise RequestValidationError(
            [
                {"type": "extra_forbidden", "loc": ("query", name), "msg": f"not a parameter of this endpoint; {takes}"}
                for name in unknown
            ]
        )


def _query_names(route: APIRoute) -> frozenset[str]:
    """The query parameters `route` takes: its own and its dependencies', by the names a client sends.

    Walked on each request (a few objects): a route is no dict key, and a cache by its id would outlive its app.
    """

    def walk(dependant: Dependant) -> Iterator[str]:
        yield from (field.alias for field in dependant.query_params)
        for dependency in dependant.dependencies:
            yield from walk(dependency)

    return frozenset(walk(route.dependant))


def v1_router() -> APIRouter:
    """A router for `/v1` endpoints: each refuses a query parameter it does not take (a 422 naming it)."""
    return APIRouter(prefix="/v1", dependencies=[Depends(_known_query)], responses=problems(422))
