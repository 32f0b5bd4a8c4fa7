"""Every error the server returns is an RFC 9457 problem; `problem_for` maps each error once.

Endpoints raise sayso's own exceptions (`sayso.exceptions`, whether the runtime's verbs or the
one authenticator raised them) and never build error responses themselves; the handlers
installed by `install_problem_handlers` turn them into `application/problem+json` with the
right status.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Required

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from typing_extensions import TypedDict

from ..exceptions import (
    AlreadyDecided,
    CallEnded,
    ConfigError,
    DecisionRefused,
    GrantNotFound,
    InvalidDecision,
    InvalidInput,
    NotAllowed,
    NotFound,
    NotReady,
    PauseConsumed,
    RequestExpired,
    RequestNotFound,
    RunConflict,
    RunNotFound,
    SaysoError,
    StoreError,
    ThreadBusy,
    TooLarge,
    Unauthenticated,
)

logger = logging.getLogger("sayso.server")

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_BASE = "https://sayso.dev/problems/"
"""Problem `type`s are this base plus a slug, such as `already-decided`."""


class FieldError(TypedDict):
    """One field's problem: where (`loc`, as FastAPI says it) and why."""

    loc: list[str | int]
    msg: str


class ProblemIds(TypedDict, total=False):
    """The ids a problem is about, and each field's problem: the keys a problem adds to RFC 9457's."""

    request_id: str
    run_id: str
    grant_id: str
    errors: list[FieldError]


class ProblemBody(ProblemIds):
    """An RFC 9457 problem document as sent."""

    type: Required[str]
    title: Required[str]
    status: Required[int]
    detail: Required[str]


class ProblemModel(BaseModel):
    """An RFC 9457 problem document, as returned by every failing request."""

    type: str
    title: str
    status: int
    detail: str
    request_id: str | None = None
    run_id: str | None = None
    grant_id: str | None = None
    errors: list[FieldError] | None = None


@dataclass(frozen=True, kw_only=True)
class Problem:
    """A problem to send: its slug, title, HTTP status, detail, the ids it is about and the headers it needs."""

    slug: str
    title: str
    status: int
    detail: str
    extra: ProblemIds = field(default_factory=lambda: ProblemIds())
    headers: Mapping[str, str] = field(default_factory=dict)
    """What the status requires beside the body: a 401's `WWW-Authenticate`, a 405's `Allow` (RFC 9110)."""

    def body(self) -> ProblemBody:
        """The JSON document."""
        return ProblemBody(
            type=PROBLEM_BASE + self.slug, title=self.title, status=self.status, detail=self.detail, **self.extra
        )


def problem_for(exc: BaseException) -> Problem:  # noqa: C901 - one flat mapping is the point
    """The problem for an error: the one place that maps sayso's exceptions to HTTP."""
    if isinstance(exc, Unauthenticated):
        challenge = {"WWW-Authenticate": 'Bearer realm="sayso"'}
        return Problem(slug="unauthorized", title="Not signed in", status=401, detail=exc.problem, headers=challenge)
    if isinstance(exc, NotAllowed):
        if exc.subject == "request":
            # A decision refused for who asks: the decision API's own slug, naming the request.
            ids = ProblemIds(request_id=exc.subject_id)
            return Problem(slug="not-allowed", title="Not allowed", status=403, detail=str(exc), extra=ids)
        return Problem(slug="forbidden", title="Not allowed", status=403, detail=str(exc))
    if isinstance(exc, DecisionRefused):
        ids = ProblemIds(request_id=exc.request_id)
        if isinstance(exc, AlreadyDecided):
            return Problem(slug="already-decided", title="Already decided", status=409, detail=str(exc), extra=ids)
        if isinstance(exc, CallEnded):
            return Problem(slug="call-ended", title="The call has ended", status=409, detail=str(exc), extra=ids)
        if isinstance(exc, RequestExpired):
            return Problem(slug="request-expired", title="Request expired", status=410, detail=str(exc), extra=ids)
        if isinstance(exc, InvalidDecision):
            refused = ProblemIds(request_id=exc.request_id)
            if exc.fields:  # a form's answer: each field's problem, for the form to show beside the field
                under = [exc.under] if exc.under else []
                refused["errors"] = [
                    {"loc": [*under, *(p for p in where.split(".") if p)], "msg": why}
                    for where, why in exc.fields.items()
                ]
            return Problem(
                slug="invalid-decision", title="Invalid decision", status=422, detail=str(exc), extra=refused
            )
        return Problem(slug="decision-refused", title="Decision refused", status=409, detail=str(exc), extra=ids)
    if isinstance(exc, RunConflict):
        ids = ProblemIds(run_id=exc.run_id)
        if isinstance(exc, PauseConsumed):
            return Problem(slug="pause-consumed", title="Pause consumed", status=409, detail=str(exc), extra=ids)
        if isinstance(exc, NotReady):
            return Problem(slug="not-ready", title="Requests still open", status=409, detail=str(exc), extra=ids)
        if isinstance(exc, ThreadBusy):
            return Problem(slug="thread-busy", title="Thread busy", status=409, detail=str(exc), extra=ids)
        return Problem(slug="run-conflict", title="Run conflict", status=409, detail=str(exc), extra=ids)
    if isinstance(exc, NotFound):
        extra = ProblemIds()
        if isinstance(exc, RequestNotFound):
            extra["request_id"] = exc.request_id
        elif isinstance(exc, RunNotFound):
            extra["run_id"] = exc.run_id
        elif isinstance(exc, GrantNotFound):
            extra["grant_id"] = exc.grant_id
        return Problem(slug="not-found", title="Not found", status=404, detail=str(exc), extra=extra)
    if isinstance(exc, TooLarge):
        extra = {"errors": [{"loc": [exc.field], "msg": exc.problem}]} if exc.field else {}
        return Problem(slug="too-large", title="Too large", status=413, detail=str(exc), extra=extra)
    if isinstance(exc, InvalidInput):
        extra = {"errors": [{"loc": [exc.field], "msg": exc.problem}]} if exc.field else {}
        return Problem(slug="invalid-request", title="Invalid request", status=422, detail=str(exc), extra=extra)
    if isinstance(exc, ConfigError):
        # The configuration refuses the step (say, the audit chain is signed and this process has no key):
        # nothing ran and nothing changed. An agent the client named that does not exist is `AgentNotFound`.
        return Problem(slug="invalid-request", title="Invalid request", status=422, detail=str(exc))
    if isinstance(exc, StoreError):
        # What did not answer: the store, or the Temporal cluster a front hands runs to (`store-unavailable`, ...);
        # the store's own error is logged (a 5xx is), not answered.
        what = exc.service
        return Problem(
            slug=f"{what.lower()}-unavailable", title=f"{what.capitalize()} unavailable", status=503, detail=exc.said
        )
    if isinstance(exc, RequestValidationError):
        errors: list[FieldError] = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))} for e in exc.errors()]
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors)
        return Problem(
            slug="invalid-request", title="Invalid request", status=422, detail=detail, extra={"errors": errors}
        )
    if isinstance(exc, HTTPException):
        # Starlette's own refusals (an unknown path, a method the path does not take): its headers say what to do.
        headers = dict(exc.headers or {})
        allowed = headers.get("Allow")
        detail = f"this path takes {allowed} only" if exc.status_code == 405 and allowed else str(exc.detail)
        return Problem(
            slug=f"http-{exc.status_code}",
            title=_title(exc.status_code),
            status=exc.status_code,
            detail=detail,
            headers=headers,
        )
    if isinstance(exc, SaysoError):
        return Problem(slug="sayso-error", title="Server error", status=500, detail=str(exc))
    return Problem(slug="internal", title="Server error", status=500, detail="the server failed; see its log")


def _title(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def problem_response(problem: Problem) -> JSONResponse:
    """A problem as a response."""
    return JSONResponse(
        problem.body(), status_code=problem.status, media_type=PROBLEM_MEDIA_TYPE, headers=dict(problem.headers)
    )


async def _handle(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException) and exc.status_code == 405:
        exc = HTTPException(405, headers={**(exc.headers or {}), **_documented_allow(request)})
    problem = problem_for(exc)
    if problem.status >= 500:
        logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return problem_response(problem)


def _documented_allow(request: Request) -> dict[str, str]:
    """`Allow` with every method the OpenAPI document lists for the request's path (none for a path it leaves out).

    Starlette's 405 names the methods of the first route that matched the path only: `GET /v1/threads` and
    `POST /v1/threads` are two routes, so a `PUT` there was told `Allow: POST`.
    """
    for template, item in request.app.openapi()["paths"].items():
        if re.fullmatch(re.sub(r"\\{[^/]+\\}", "[^/]+", re.escape(template)), request.url.path):
            return {"Allow": ", ".join(sorted(method.upper() for method in item))}
    return {}


def install_problem_handlers(app: FastAPI) -> None:
    """Make every error of `app` a problem response."""
    app.add_exception_handler(SaysoError, _handle)
    app.add_exception_handler(RequestValidationError, _handle)
    app.add_exception_handler(HTTPException, _handle)
    app.add_exception_handler(Exception, _handle)
