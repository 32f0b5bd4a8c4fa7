"""REST endpoints for open requests (the inbox), decisions, grants, the audit log, expiry and live events.

They sit on their own `/v1` router; like every endpoint they only translate between the wire
models of `_schemas_in` and the runtime's public verbs, called with the caller's principal.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Annotated, Literal

import anyio
from fastapi import Body, Query
from pydantic.json_schema import JsonSchemaValue
from sse_starlette import EventSourceResponse

from .._core.audit_events import event_time
from .._core.grants import Grant
from .._core.ids import ID_PATTERN
from .._core.requests import DelegateRequest, RequestKind
from .._runtime import InboxFilter, request_json, request_state_json, rfc3339, run_json
from ..exceptions import NotFound
from ._deps import Caller, Id, JsonBody, Runtime, State, Via, _decide_json, problems, v1_router
from ._live import LIVE_EVENT_NAMES, live_events
from ._schemas_in import AGENT_PATTERN, DecisionIn, to_decision
from ._schemas_out import (
    AuditPageOut,
    AuditVerifyOut,
    DecideOut,
    ExpireOut,
    GrantListOut,
    GrantOut,
    InboxOut,
    RequestStateOut,
)
from ._stream import event_stream

router = v1_router()


@router.get(
    "/requests",
    response_model=InboxOut,
    response_model_exclude_unset=True,
    tags=["requests"],
    operation_id="list_requests",
    responses=problems(401, 422, 503),
)
async def inbox(
    caller: Caller,
    sayso: Runtime,
    agent: Annotated[str | None, Query(pattern=AGENT_PATTERN, description="Asked by or for this agent.")] = None,
    kind: RequestKind | None = None,
    thread_id: Annotated[str | None, Query(pattern=ID_PATTERN)] = None,
    older_than: Annotated[
        float | None, Query(ge=0, le=1e10, allow_inf_nan=False, description="Opened at least N seconds ago.")
    ] = None,
    newer_than: Annotated[
        float | None, Query(ge=0, le=1e10, allow_inf_nan=False, description="Opened at most N seconds ago.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> JsonBody:
    """Every open request across threads that the caller may decide, oldest first, a page at a time."""
    query = InboxFilter(agent=agent, kind=kind, thread_id=thread_id, older_than=older_than, newer_than=newer_than)
    page = await sayso.inbox(query, principal=caller, limit=limit, cursor=cursor)
    shown = [request_json(r, votes=page.votes.get(r.request_id, ())) for r in page.requests]
    return {"requests": shown, "next_cursor": page.next_cursor, "total": page.total}


@router.get(
    "/requests/{request_id}",
    response_model=RequestStateOut,
    response_model_exclude_unset=True,
    tags=["requests"],
    operation_id="get_request",
    responses=problems(401, 404, 422, 503),
)
async def get_request(caller: Caller, sayso: Runtime, request_id: Id) -> JsonBody:
    """A request, whether it still waits, and its decision if any: who took it, through which interface, when."""
    state = await sayso.request(request_id, principal=caller)
    if isinstance(state.request, DelegateRequest):  # no kind this API shows: its leaves are the requests
        raise NotFound(
            f"request {request_id!r} is a delegate's call, answered through the requests of its run "
            f"{state.request.child_run_id!r} (GET /v1/runs/{state.request.child_run_id})"
        )
    return request_state_json(state, now=time.time())


@router.post(
    "/requests/{request_id}/decision",
    response_model=DecideOut,
    response_model_exclude_unset=True,
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
    via: Via = "rest",
) -> JsonBody:
    """Decide one request; the run resumes when it was the last open request of its pause.

    Repeating the decision already taken is a harmless no-op (`recorded: false`); a different
    second decision is refused with 409, and a refused decision leaves the request open.
    """
    return _decide_json(await sayso.decide(request_id, to_decision(body), principal=caller, via=via))


def grant_json(grant: Grant) -> JsonBody:
    """A grant as REST shows it: RFC 3339 times beside the epoch ones kept for existing clients."""
    return asdict(grant) | {
        "created": rfc3339(grant.created_at),
        "expires": rfc3339(grant.expires_at),
        "revoked": rfc3339(grant.revoked_at),
    }


@router.get(
    "/grants",
    response_model=GrantListOut,
    response_model_exclude_unset=True,
    tags=["grants"],
    operation_id="list_grants",
    responses=problems(401, 422, 503),
)
async def grants(
    caller: Caller,
    sayso: Runtime,
    limit: Annotated[int, Query(ge=1, le=200, description="How many grants a page holds.")] = 50,
    cursor: Annotated[str | None, Query(max_length=400, description="The `next_cursor` of the previous page.")] = None,
) -> JsonBody:
    """Active remembered approvals, newest first, a page at a time.

    The caller's own and those they gave, or every one for an admin.
    """
    page = await sayso.grant_page(principal=caller, limit=limit, cursor=cursor)
    return {"grants": [grant_json(g) for g in page.grants], "next_cursor": page.next_cursor}


@router.delete(
    "/grants/{grant_id}",
    response_model=GrantOut,
    response_model_exclude_unset=True,
    tags=["grants"],
    operation_id="revoke_grant",
    responses=problems(401, 404, 422, 503, s404="No active grant the caller sees has this id."),
)
async def revoke_grant(caller: Caller, sayso: Runtime, grant_id: Id) -> JsonBody:
    """Revoke a grant; the next call it covered asks again. 404 for a grant the caller does not see (in /v1/grants)."""
    return grant_json(await sayso.revoke_grant(grant_id, principal=caller))


_APPROVERS_ONLY = "Only approvers read the audit log and run expiry."


@router.get(
    "/audit",
    response_model=AuditPageOut,
    response_model_exclude_unset=True,
    tags=["audit"],
    operation_id="list_audit_records",
    responses=problems(401, 403, 422, 503, s403=_APPROVERS_ONLY),
)
async def audit(
    caller: Caller,
    sayso: Runtime,
    order: Literal["asc", "desc"] = "asc",
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    cursor: Annotated[
        # A record's `seq`: a 32-bit integer in PostgreSQL, which refuses to compare it with a larger number.
        int | None, Query(ge=0, le=2**31 - 1, description="The `next_cursor` of the previous page.")
    ] = None,
) -> JsonBody:
    """The audit log a page at a time, oldest first (or newest first with `order=desc`); for approvers."""
    page = await sayso.audit_page(principal=caller, newest_first=order == "desc", limit=limit, cursor=cursor)
    records = [asdict(r) | {"at": rfc3339(event_time(r.body))} for r in page.records]
    return {"records": records, "next_cursor": page.next_cursor, "total": page.total}


@router.get(
    "/audit/verify",
    response_model=AuditVerifyOut,
    response_model_exclude_unset=True,
    tags=["audit"],
    operation_id="verify_audit",
    responses=problems(401, 403, 503, s403=_APPROVERS_ONLY),
)
async def verify_audit(caller: Caller, sayso: Runtime) -> JsonBody:
    """Verify the audit log: intact, or the first record that was altered, lost, moved, forged or cut off.

    With an audit key the chain is anchored (every record signed, the head checkpointed); without one
    `anchored` is false and `note` says plainly what cannot be detected.
    """
    report = await sayso.audit_report(principal=caller)
    problem = asdict(report.problem) if report.problem else None
    body = {"intact": report.intact, "records": report.records, "problem": problem}
    return body | {"anchored": report.anchored, "note": report.note, "predates_key": report.predates_key}


@router.post(
    "/expire",
    response_model=ExpireOut,
    response_model_exclude_unset=True,
    tags=["runs"],
    operation_id="expire_requests",
    responses=problems(401, 403, 503, s403=_APPROVERS_ONLY),
)
async def expire(caller: Caller, sayso: Runtime) -> JsonBody:
    """Close every paused run whose open requests all expired (the server also does this periodically); approvers."""
    return {"runs": [run_json(r) for r in await sayso.expire(principal=caller)]}


_LIVE_EVENT: JsonSchemaValue = {
    "type": "object",
    "description": "One server-sent event; `data` is JSON (see the endpoint's description).",
    "properties": {"event": {"type": "string", "enum": LIVE_EVENT_NAMES}, "data": {"type": "string"}},
    "required": ["event", "data"],
}


@router.get(
    "/events",
    tags=["requests"],
    operation_id="watch_changes",
    response_class=EventSourceResponse,
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
) -> EventSourceResponse:
    """What changes for the caller, as it happens, whichever interface or process changed it.

    Events: `ready` (watching has begun: read the current state now), `request.opened` (a request),
    `request.closed` (as `GET /v1/requests/{request_id}` answers: status, decision, who, `via`),
    `run.changed` (`thread_id`, `run_id`, `status`, `last_seq` of the followed thread),
    `threads.changed`, `grants.changed` (a grant the caller sees was given or revoked), `error` (a problem:
    the store stopped answering; `end` follows), and `end` (the stream closes after a while; connect again).
    Only what the caller may see is reported. A store that does not answer when the stream is asked for is a
    503, before anything is streamed.
    """
    stopping = anyio.Event()  # set by sse-starlette when the server is told to stop
    live = state.live
    stream = await live_events(
        state.sayso, caller, thread_id=thread_id, settings=live, closing=lambda: state.closing or stopping.is_set()
    )
    return event_stream(stream, ping_seconds=live.keepalive, shutdown=stopping, grace_seconds=live.every + 1)
