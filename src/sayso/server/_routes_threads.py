"""REST endpoints for principals, agents, threads and runs (docs/guides/rest.md), on their own `/v1` router.

Endpoints only translate: they read the wire models of `_schemas_in`, call one of the runtime's
public verbs with the caller's principal, and return the JSON shapes of `sayso.run_json`.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import Query
from starlette.responses import Response

from .._runtime import authenticator, new_id, rfc3339, run_json
from ._deps import _SSE_EVENT, Caller, Id, JsonBody, Runtime, State, ThreadId, Via, problems, v1_router
from ._schemas_in import ResumeIn, RunIn, ThreadIn
from ._schemas_out import AgentListOut, AgentOut, MeOut, RunOut, ThreadListOut, ThreadOut, entry_json
from ._stream import start_run, stream_run

router = v1_router()


@router.get(
    "/me",
    response_model=MeOut,
    response_model_exclude_unset=True,
    tags=["principals"],
    operation_id="get_me",
    responses=problems(401),
)
async def me(caller: Caller, sayso: Runtime) -> JsonBody:
    """Who the caller is, and whether the server runs in local development mode."""
    local_mode = authenticator(sayso).local_mode
    return {"principal": caller.name, "local_mode": local_mode, "approver_for": list(caller.approver_for)}


@router.get(
    "/agents",
    response_model=AgentListOut,
    response_model_exclude_unset=True,
    tags=["threads"],
    operation_id="list_agents",
    responses=problems(401),
)
async def agents(caller: Caller, sayso: Runtime) -> JsonBody:
    """The configured agents and workflows: what a thread may be opened with."""
    config = sayso.config
    listed = [
        AgentOut(
            name=name, description=spec.description, entry=name == config.entry_agent, internal=spec.internal
        ).model_dump()
        for name, spec in config.agents.items()
    ]
    listed += [
        AgentOut(
            name=name, description=spec.description or None, entry=name == config.entry_agent, kind="workflow"
        ).model_dump()
        for name, spec in config.workflows.items()
    ]
    return {"agents": listed}


@router.post(
    "/threads",
    response_model=ThreadOut,
    response_model_exclude_unset=True,
    status_code=201,
    tags=["threads"],
    operation_id="create_thread",
    responses=problems(401, 422, s422="The body is invalid, or names no configured agent."),
)
async def create_thread(caller: Caller, sayso: Runtime, body: ThreadIn | None = None) -> JsonBody:
    """Open a thread with an agent; it is stored, and owned by the caller, when its first run starts."""
    agent = sayso.entry(body.agent if body else None)
    thread_id = new_id("thr")
    created = {"thread_id": thread_id, "agent": agent, "owner": None, "title": None, "created": None}
    return {**created, "active_run": None, "transcript": [], "next_cursor": None}


@router.get(
    "/threads",
    response_model=ThreadListOut,
    response_model_exclude_unset=True,
    tags=["threads"],
    operation_id="list_threads",
    responses=problems(401, 422, 503),
)
async def threads(
    caller: Caller,
    sayso: Runtime,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=400, description="The `next_cursor` of the previous page.")] = None,
) -> JsonBody:
    """The caller's threads, newest first, a page at a time, each titled by its first message."""
    page = await sayso.thread_page(principal=caller, limit=limit, cursor=cursor)
    listed = [asdict(t) | {"created": rfc3339(t.created_at)} for t in page.threads]
    return {"threads": listed, "next_cursor": page.next_cursor}


@router.get(
    "/threads/{thread_id}",
    response_model=ThreadOut,
    response_model_exclude_unset=True,
    tags=["threads"],
    operation_id="get_thread",
    responses=problems(401, 404, 422, 503),
)
async def thread(
    caller: Caller,
    sayso: Runtime,
    thread_id: ThreadId,
    limit: Annotated[int, Query(ge=1, le=500, description="How many of the newest lines the transcript holds.")] = 200,
    cursor: Annotated[
        str | None, Query(max_length=400, description="The `next_cursor` of a later page: the lines before it.")
    ] = None,
) -> JsonBody:
    """A thread's history, newest lines last (with every decision and failure), and the run in progress.

    The transcript holds the newest `limit` lines (200 unless asked); `next_cursor` reads the lines
    before them, a page at a time, back to the thread's first line.
    """
    record = await sayso.thread(thread_id, principal=caller)
    active = await sayso.result(record.active_run_id, principal=caller) if record.active_run_id else None
    page = await sayso.transcript_page(thread_id, principal=caller, limit=limit, cursor=cursor)
    return {
        "thread_id": record.thread_id,
        "agent": record.agent,
        "owner": record.owner,
        "title": page.title,
        "created": rfc3339(record.created_at),
        "active_run": run_json(active) if active else None,
        "transcript": [entry_json(e) for e in page.entries],
        "next_cursor": page.next_cursor,
    }


@router.post(
    "/runs",
    response_model=RunOut,
    response_model_exclude_unset=True,
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
    via: Via = "rest",
) -> JsonBody | Response:
    """Send a message and run the agent until it finishes or pauses.

    With `stream=true` the answer is `text/event-stream` once the message is taken: `status` (the
    run's and the thread's ids), `progress`, `tool_call`, `decision` (a call's decision, as
    transcript lines show it), `tool_result`, `text_delta`, `request` (one per open request), then
    `run` (the whole result) or `error` (a problem document: the run failed). A message refused
    before its run starts is its problem, with its status (403, 409, 422), as without streaming.
    """
    if stream:
        assert state.tasks is not None, "the server's lifespan has not started"
        return await stream_run(state.sayso, state.tasks, caller, body, via=via)
    return run_json(await start_run(state.sayso, caller, body, via=via))


@router.get(
    "/runs/{run_id}",
    response_model=RunOut,
    response_model_exclude_unset=True,
    tags=["runs"],
    operation_id="get_run",
    responses=problems(401, 404, 422, 503),
)
async def get_run(caller: Caller, sayso: Runtime, run_id: Id) -> JsonBody:
    """Where a run stands, with the requests it still waits on."""
    return run_json(await sayso.result(run_id, principal=caller))


@router.post(
    "/runs/{run_id}/resume",
    response_model=RunOut,
    response_model_exclude_unset=True,
    tags=["runs"],
    operation_id="resume_run",
    responses=problems(
        401,
        403,
        404,
        409,
        422,
        503,
        s403="Forced by someone who is not the thread's owner and may not decide a request still open.",
        s409="The run is not paused, another resume won, or requests are still open (use `force`).",
    ),
)
async def resume_run(
    caller: Caller, sayso: Runtime, run_id: Id, body: ResumeIn | None = None, via: Via = "rest"
) -> JsonBody:
    """Resume a paused run; with `force`, requests still open count as skipped, by the caller (the audit says so)."""
    return run_json(await sayso.resume(run_id, force=body.force if body else False, principal=caller, via=via))
