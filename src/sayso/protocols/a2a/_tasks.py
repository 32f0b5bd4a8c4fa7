"""A2A tasks read from the runtime: what one looks like (`TaskReader`), and `ListTasks`.

A task is a top-level run; everything about it (status, the answer as an artifact, the pause
as it was shown, the history) is rebuilt from the runtime's records, so any process answers
alike. `ListTasks` gives the caller's tasks on one endpoint, newest first, a page at a time:
the runtime pages the top-level runs in the store (`Sayso.top_runs`), and tokens and history
length follow the a2a-sdk's own helpers (`ListTasksCursor`, `apply_history_length`), so tokens
mean what they mean elsewhere.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from a2a.server.jsonrpc_models import InvalidParamsError
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.types import Artifact, ListTasksRequest, ListTasksResponse, Message, Part, Task, TaskState, TaskStatus
from a2a.utils.errors import UnsupportedOperationError
from a2a.utils.task import (
    ListTasksCursor,
    apply_history_length,
    decode_list_tasks_cursor,
    encode_list_tasks_cursor,
    validate_history_length,
    validate_page_size,
)
from starlette.responses import JSONResponse

from ..._core.access import Principal
from ..._core.requests import DelegateRequest, Request
from ..._runtime import RunQuery, RunRecord, RunResult, RunStatus, Sayso
from ...exceptions import InvalidInput
from ._mapping import PauseView, history, pause_message, pause_view, text_message

ACTIVATION_MARKS = "a2a.activation"
"""The runtime's mark namespace for whether a pause's HITL payload was attached (key: the run id)."""

STATES: dict[RunStatus, TaskState] = {
    "running": TaskState.TASK_STATE_WORKING,
    "paused": TaskState.TASK_STATE_INPUT_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}

ANSWER_ARTIFACT = "response"
"""The name of a task's one answer artifact: streamed in chunks as it is written, then read with the task."""


def answer_artifact_id(run_id: str) -> str:
    """The id of a task's answer artifact, the same in a stream and in `GetTask`."""
    return f"{run_id}-response"


DEFAULT_PAGE_SIZE = 50
RUN_STATUSES: dict[TaskState, RunStatus] = {state: status for status, state in STATES.items()}
"""The run status each task state a run can be in stands for (the others list no task)."""
LARGEST_TIMESTAMP_NS = 10**25
"""Past this a page token's time is no run's (nor a float's once in seconds): no token this server gave."""


async def list_tasks(
    sayso: Sayso, reader: TaskReader, agent: str, params: ListTasksRequest, caller: Principal
) -> ListTasksResponse:
    """The page of tasks of `agent`'s endpoint `params` asks for: the store pages them, newest update first."""
    validate_history_length(params)
    if (problem := unknown_status(params.status)) is not None:
        raise InvalidInput(problem, field="status")
    page_size = params.page_size or DEFAULT_PAGE_SIZE
    validate_page_size(page_size)
    cursor = decode_list_tasks_cursor(params.page_token) if params.page_token else None
    if params.page_token and (cursor is None or abs(cursor.timestamp_ns or 0) > LARGEST_TIMESTAMP_NS):
        raise InvalidInput("the page token is not one this server gave", field="pageToken")
    status = RUN_STATUSES.get(params.status)
    if params.status != TaskState.TASK_STATE_UNSPECIFIED and status is None:  # a state no run is in
        return ListTasksResponse(page_size=page_size)
    after_ns = params.status_timestamp_after.ToNanoseconds() if params.HasField("status_timestamp_after") else None
    query = RunQuery(
        agent=agent,
        thread_id=params.context_id or None,
        status=status,
        updated_from=None if after_ns is None else _earliest_second(after_ns),
    )
    before = None if cursor is None else (_earliest_second(cursor.timestamp_ns or 0), cursor.task_id)
    page = await sayso.top_runs(query, principal=caller, limit=page_size, before=before)
    runs = page.runs if cursor is None or cursor.timestamp_ns is not None else []  # no task sorts after those
    tasks = []
    for run in runs:
        task = apply_history_length(await reader.task(await sayso.result(run.run_id)), params)
        if not params.include_artifacts:
            del task.artifacts[:]
        tasks.append(task)
    more = page.more and bool(runs)
    return ListTasksResponse(
        tasks=tasks,
        next_page_token=encode_list_tasks_cursor(_position(runs[-1])) if more else "",
        page_size=page_size,
        total_size=page.total,
    )


def _earliest_second(ns: int) -> float:
    """The earliest time in seconds whose A2A timestamp (`int(seconds * 1e9)`, as `_position`) is at least `ns`.

    The store compares runs' times in seconds; this bound makes its `>=` and `<` mean what they mean between
    A2A timestamps, so a page token or `statusTimestampAfter` lists exactly the runs it did when they were compared
    in nanoseconds.
    """
    seconds = ns / 1e9
    while int(seconds * 1e9) >= ns:
        seconds = math.nextafter(seconds, -math.inf)
    while int(seconds * 1e9) < ns:
        seconds = math.nextafter(seconds, math.inf)
    return seconds


def unknown_status(value: object) -> str | None:
    """What is wrong with a `ListTasks` status filter, or `None` when it names a task state (or none).

    protobuf's JSON reading turns a misspelt state into "unspecified", which would list every task:
    the JSON-RPC endpoint asks this of the status as sent, and `list_tasks` of the number it got.
    """
    if value is None or (not isinstance(value, bool) and value in (*TaskState.keys(), *TaskState.values())):
        return None
    return f"{value!r} is not a task state; use one of {', '.join(TaskState.keys())}"


def status_refusal(method: str, request_id: str | int | None, call: Mapping[str, object]) -> JSONResponse | None:
    """The invalid-params answer to a JSON-RPC `ListTasks` whose status filter names no task state, or `None`."""
    params = call.get("params")
    if method != "ListTasks" or not isinstance(params, dict) or "status" not in params:
        return None
    if (problem := unknown_status(params["status"])) is None:
        return None
    error = InvalidParamsError(message=f"status: {problem}")
    return JSONResponse(build_error_response(request_id, error))  # answered 200, as the SDK answers its errors


def _position(run: RunRecord) -> ListTasksCursor:
    return ListTasksCursor(timestamp_ns=int(run.updated_at * 1e9), task_id=run.run_id)


@dataclass(frozen=True, kw_only=True)
class _ActivationMark:
    """Whether the A2A call that left a run paused activated the HITL extension, kept as a runtime mark.

    A pause shown without the extension stays text-only on later reads; the mark names its pause,
    so a later pause of the same run is not mistaken for it. `plain` keeps every request ever shown
    without it, so the task's history shows each earlier pause as its client saw it (kagent 0.x
    DataParts, or text) and not as a v1 payload.
    """

    pause_id: str
    activated: bool
    plain: tuple[str, ...] = ()

    def dump(self) -> str:
        return json.dumps({"pause_id": self.pause_id, "activated": self.activated, "plain": list(self.plain)})

    @classmethod
    def load(cls, raw: str) -> _ActivationMark:
        data = json.loads(raw)
        return cls(
            pause_id=str(data["pause_id"]),
            activated=bool(data["activated"]),
            plain=tuple(str(r) for r in data.get("plain", ())),
        )


class TaskReader:
    """What a task looks like, rebuilt from the runtime's records: status, answer, history, the pause as shown.

    Whether a pause carries the HITL payload depends on the A2A call that left it: kept as a runtime
    mark, so any process reads the same task.
    """

    def __init__(self, sayso: Sayso, *, legacy: bool, clock: Callable[[], float]) -> None:
        self.sayso = sayso
        self.legacy = legacy
        self._clock = clock

    async def view(self, task_id: str, requests: Sequence[Request]) -> PauseView | None:
        """The view of a pause to show now, with the remote task behind it when a remote delegate asked.

        The nested block names the agent that asked, however deep, with the task's own call to its
        direct child; when the asker is a remote agent, its own task, context and ids are shown.
        """
        depth = (await self.sayso.run_record(task_id)).path.count("/")
        delegates: list[DelegateRequest] = []
        if any(r.agent_path.count("/") > depth for r in requests):
            tree = await self.sayso.run_requests(task_id)
            delegates = [r for r in tree.requests if isinstance(r, DelegateRequest)]
        view = pause_view(task_id, requests, depth=depth, delegates=delegates)
        if view is not None and view.subagent is not None:
            remote = await self.sayso.remote_task(view.requests[0].run_id)
            if remote is not None:
                view = replace(view, remote=remote)
        return view

    async def remember_activation(self, result: RunResult, activated: bool) -> None:
        """A pause remembers whether the call that left it activated the extension."""
        run = await self.sayso.run_record(result.run_id)
        if run.status == "paused" and run.pause_id is not None:
            raw = await self.sayso.get_mark(ACTIVATION_MARKS, result.run_id)
            plain = _ActivationMark.load(raw).plain if raw is not None else ()
            if not activated:
                plain = tuple(dict.fromkeys([*plain, *(r.request_id for r in result.requests)]))
            mark = _ActivationMark(pause_id=run.pause_id, activated=activated, plain=plain)
            await self.sayso.set_mark(ACTIVATION_MARKS, result.run_id, mark.dump())

    async def task(self, result: RunResult) -> Task:
        """The task a run is, from the runtime's records: status, the answer as an artifact, and the history."""
        run = await self.sayso.run_record(result.run_id)
        activated = await self.activated(result.run_id, run.pause_id)
        legacy = self.legacy and not activated
        status_message: Message | None = None
        artifacts: list[Artifact] = []
        if result.status == "paused":
            shown = await self.view(result.run_id, result.requests)
            status_message = pause_message(
                replace(shown, votes=result.votes) if shown is not None and result.votes else shown,
                task_id=result.run_id,
                context_id=result.thread_id,
                activated=activated,
                legacy=legacy,
            )
        elif result.status == "completed" and result.output is not None:
            status_message = text_message(
                result.output, task_id=result.run_id, context_id=result.thread_id, message_id=f"out-{result.run_id}"
            )
            answer = Artifact(
                artifact_id=answer_artifact_id(result.run_id), name=ANSWER_ARTIFACT, parts=[Part(text=result.output)]
            )
            artifacts.append(answer)
        elif result.status == "failed":
            status_message = text_message(
                result.error or "the run failed",
                task_id=result.run_id,
                context_id=result.thread_id,
                message_id=f"err-{result.run_id}",
            )
        asked = await self.sayso.run_requests(result.run_id)
        plain = await self.plain_requests(result.run_id)
        return Task(
            id=result.run_id,
            context_id=result.thread_id,
            status=self.status(STATES[result.status], status_message, at=run.updated_at),
            artifacts=artifacts,
            history=history(
                run,
                asked.requests,
                asked.decisions,
                activated=lambda view: plain is not None and plain.isdisjoint(r.request_id for r in view.requests),
                legacy=self.legacy,
            ),
        )

    def status(self, state: TaskState, message: Message | None, *, at: float | None = None) -> TaskStatus:
        status = TaskStatus(state=state, message=message)
        status.timestamp.FromNanoseconds(int((self._clock() if at is None else at) * 1e9))
        return status

    async def plain_requests(self, run_id: str) -> frozenset[str] | None:
        """The requests of a run that were shown without the extension; `None`: every one (`legacy_only` mode)."""
        if self.sayso.config.a2a.legacy_only:
            return None
        raw = await self.sayso.get_mark(ACTIVATION_MARKS, run_id)
        return frozenset(_ActivationMark.load(raw).plain) if raw is not None else frozenset()

    async def activated(self, run_id: str, pause_id: str | None) -> bool:
        """Whether the pause's payload was attached: yes unless an A2A call without the header reported it."""
        if self.sayso.config.a2a.legacy_only:
            return False
        raw = await self.sayso.get_mark(ACTIVATION_MARKS, run_id)
        if raw is None:
            return True
        mark = _ActivationMark.load(raw)
        return mark.pause_id != pause_id or mark.activated


TERMINAL_STATES = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
    }
)
"""The states a task never leaves, as the a2a-sdk counts them."""


def still_streams(task: Task) -> Task:
    """`task`, when a subscriber may follow it: one that ended has nothing more to stream.

    Raises:
        UnsupportedOperationError: it ended, worded as the a2a-sdk's own handler words it (A2A's rule).
    """
    if task.status.state in TERMINAL_STATES:
        raise UnsupportedOperationError(
            message=f"Task {task.id} is in terminal state: {TaskState.Name(task.status.state)}"
        )
    return task
