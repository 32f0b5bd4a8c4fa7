"""`ListTasks`: the caller's tasks on one A2A endpoint, newest first, a page at a time.

A task is a top-level run of the endpoint's agent in one of the caller's threads; the runs of
a thread are read from its transcript. Paging and history length follow the a2a-sdk's own
helpers (`ListTasksCursor`, `apply_history_length`), so tokens mean what they mean elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2a.types import ListTasksRequest, ListTasksResponse, TaskState
from a2a.utils.task import (
    ListTasksCursor,
    apply_history_length,
    decode_list_tasks_cursor,
    encode_list_tasks_cursor,
    validate_history_length,
    validate_page_size,
)

from ..._core.access import Principal
from ..._runtime import RunRecord, ThreadSummary
from ...exceptions import InvalidInput, ThreadNotFound

if TYPE_CHECKING:
    from ._handler import SaysoRequestHandler

DEFAULT_PAGE_SIZE = 50
THREADS_READ = 1000
"""How many of the caller's threads one listing looks through (newest first)."""


async def list_tasks(handler: SaysoRequestHandler, params: ListTasksRequest, caller: Principal) -> ListTasksResponse:
    """The page of tasks `params` asks for."""
    from ._handler import STATES

    validate_history_length(params)
    page_size = params.page_size or DEFAULT_PAGE_SIZE
    validate_page_size(page_size)
    cursor = decode_list_tasks_cursor(params.page_token) if params.page_token else None
    if params.page_token and cursor is None:
        raise InvalidInput("the page token is not one this server gave", field="pageToken")
    runs = [
        run
        for run in await _runs(handler, caller, params.context_id or None)
        if (params.status == TaskState.TASK_STATE_UNSPECIFIED or STATES[run.status] == params.status)
        and (
            not params.HasField("status_timestamp_after")
            or run.updated_at * 1e9 >= params.status_timestamp_after.ToNanoseconds()
        )
    ]
    runs.sort(key=lambda r: _position(r).sort_key(), reverse=True)
    if cursor is not None:
        runs_after = [r for r in runs if _position(r).sort_key() < cursor.sort_key()]
    else:
        runs_after = runs
    page = runs_after[:page_size]
    tasks = []
    for run in page:
        task = apply_history_length(await handler.task_of(run), params)
        if not params.include_artifacts:
            del task.artifacts[:]
        tasks.append(task)
    more = len(runs_after) > page_size
    return ListTasksResponse(
        tasks=tasks,
        next_page_token=encode_list_tasks_cursor(_position(page[-1])) if more else "",
        page_size=page_size,
        total_size=len(runs),
    )


def _position(run: RunRecord) -> ListTasksCursor:
    return ListTasksCursor(timestamp_ns=int(run.updated_at * 1e9), task_id=run.run_id)


async def _runs(handler: SaysoRequestHandler, caller: Principal, context_id: str | None) -> list[RunRecord]:
    """The caller's top-level runs of the endpoint's agent, in one context or in all of theirs."""
    sayso = handler.sayso
    if context_id is not None:
        try:
            threads = [await sayso.thread(context_id, principal=caller)]
        except ThreadNotFound:
            return []
        agents = [t.agent for t in threads]
        thread_ids = [t.thread_id for t in threads]
    else:
        summaries: list[ThreadSummary] = await sayso.threads(principal=caller, limit=THREADS_READ)
        agents = [t.agent for t in summaries]
        thread_ids = [t.thread_id for t in summaries]
    runs: list[RunRecord] = []
    for thread_id, agent in zip(thread_ids, agents, strict=True):
        if agent != handler.agent:
            continue
        seen: dict[str, None] = {}
        for entry in await sayso.transcript(thread_id, principal=caller):
            seen.setdefault(entry.run_id, None)
        for run_id in seen:
            run = await sayso.run_record(run_id)
            if run.parent_run_id is None and run.agent == handler.agent:
                runs.append(run)
    return runs
