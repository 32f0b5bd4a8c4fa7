"""An a2a-sdk `RequestHandler` over the sayso runtime: a task is a run, a context is a thread.

The SDK owns the envelope (JSON-RPC, protobuf JSON, SSE); this module owns the meaning:
which run a message starts or resumes, how a kagent HITL response becomes decisions, and
what a task looks like, always rebuilt from sayso's store so that any process can answer.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass

import anyio
import sqlalchemy as sa
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (
    AgentCard,
    Artifact,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
)

from ..._core.decisions import Decision, check_decision
from ..._results import RunResult
from ..._runtime import new_id
from ..._store import RunStatus
from ..._store._tables import a2a_pauses
from ...exceptions import ConfigError, DecisionRefused, NotFound, RunConflict
from .._auth import Caller
from .._common import AgentEndpoint
from ._mapping import (
    HitlRefused,
    ShownRequest,
    decisions_from_legacy,
    decisions_from_v1,
    legacy_decision,
    message_text,
    pause_message,
    pause_view,
    text_message,
    v1_payload,
)

CALLER_STATE = "sayso_caller"
"""Where the context builder puts the authenticated `Caller` in `ServerCallContext.state`."""

ACTIVATED_STATE = "sayso_hitl_activated"
"""Where the context builder says whether this call activated the HITL extension."""

_CONTEXT_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")

_STATES: dict[RunStatus, TaskState] = {
    "running": TaskState.TASK_STATE_WORKING,
    "paused": TaskState.TASK_STATE_INPUT_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}


def to_a2a_error(exc: Exception) -> A2AError:
    """The A2A error for one of ours: the one place our errors become JSON-RPC errors."""
    if isinstance(exc, A2AError):
        return exc
    if isinstance(exc, HitlRefused):
        return InvalidParamsError(message=f"HITL response refused: {exc.problem}; the task still waits")
    if isinstance(exc, DecisionRefused):
        return InvalidParamsError(message=f"decision refused: {exc}; the task still waits")
    if isinstance(exc, NotFound):
        return TaskNotFoundError(message=str(exc))
    if isinstance(exc, RunConflict):
        return InvalidRequestError(message=str(exc))
    if isinstance(exc, ConfigError):
        return InvalidParamsError(message=str(exc))
    raise exc


@dataclass(frozen=True, kw_only=True)
class _Turn:
    """What a message does, checked before anything runs."""

    task_id: str | None
    """The task it continues, known up front for a resume."""
    go: Callable[[], Awaitable[RunResult]]


class SaysoRequestHandler(AgentEndpoint, RequestHandler):
    """Serves one agent of a runtime over A2A."""

    # messages

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        try:
            turn = await self._turn(params.message, context)
            with anyio.CancelScope(shield=True):
                result = await turn.go()
            return await self._task_after(result, context)
        except Exception as exc:
            raise to_a2a_error(exc) from exc

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        try:
            turn = await self._turn(params.message, context)
        except Exception as exc:
            raise to_a2a_error(exc) from exc
        if turn.task_id is not None:
            run = await self.sayso.store.get_run(turn.task_id)
            yield Task(id=run.run_id, context_id=run.thread_id, status=self._status(TaskState.TASK_STATE_WORKING, None))
        try:
            # The run belongs to the server, not to the connection: a client that leaves does not cut it short.
            with anyio.CancelScope(shield=True):
                result = await turn.go()
            task = await self._task_after(result, context)
        except Exception as exc:
            raise to_a2a_error(exc) from exc
        if turn.task_id is None:
            yield Task(id=task.id, context_id=task.context_id, status=self._status(TaskState.TASK_STATE_WORKING, None))
        for artifact in task.artifacts:
            yield _artifact_event(task, artifact)
        yield TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)

    async def _turn(self, message: Message, context: ServerCallContext) -> _Turn:
        caller = _caller(context)
        if message.task_id:
            return await self._continue(message, caller)
        text = message_text(message)
        if not text.strip():
            raise InvalidParamsError(message="the message has no text part")
        thread_id = message.context_id or new_id("thr")
        thread = await self.sayso.store.get_thread(thread_id)
        if thread is None and not _CONTEXT_ID.match(thread_id):
            raise InvalidParamsError(message=f"contextId {thread_id!r} is not a usable id (letters, digits, _.:-)")
        if thread is not None:
            if not caller.may_act_on(owner=thread.owner, agent=thread.agent):
                raise InvalidParamsError(message=f"context {thread_id!r} belongs to someone else")
            if thread.agent != self.agent:
                raise InvalidParamsError(message=f"context {thread_id!r} is a conversation with agent {thread.agent!r}")

        async def go() -> RunResult:
            return await self.sayso.run(text, agent=self.agent, thread_id=thread_id, principal=caller.name)

        return _Turn(task_id=None, go=go)

    async def _continue(self, message: Message, caller: Caller) -> _Turn:
        run = await self._visible_run(message.task_id, caller)
        if message.context_id and message.context_id != run.thread_id:
            raise InvalidParamsError(message=f"task {run.run_id!r} belongs to context {run.thread_id!r}")
        payload = v1_payload(message)
        legacy = legacy_decision(message) if self.sayso.config.a2a.kagent_compat else None
        if run.status != "paused":
            raise InvalidRequestError(
                message=f"task {run.run_id!r} is {run.status}, not waiting for input; "
                "send a new message without taskId to continue the conversation"
            )
        result = await self.sayso.result(run.run_id)
        view = pause_view(run.run_id, result.requests)
        if payload is None and legacy is None:
            # Plain input to a waiting task: the person moved on (§3.3); the open requests are skipped.
            text = message_text(message)
            if not text.strip():
                raise InvalidParamsError(message="the message has no text part and no HITL response")

            async def new_message() -> RunResult:
                return await self.sayso.run(text, agent=self.agent, thread_id=run.thread_id, principal=caller.name)

            return _Turn(task_id=None, go=new_message)
        if view is None:
            raise InvalidParamsError(message=f"task {run.run_id!r} waits for nothing a HITL response can answer")
        pairs = decisions_from_v1(view, payload) if payload is not None else decisions_from_legacy(view, legacy or {})
        now = self._clock()
        for request, decision in pairs:
            # Every decision is checked before any is recorded: a refused response changes nothing.
            check_decision(request, decision, existing=None, now=now)

        async def decide() -> RunResult:
            return await self._decide(run.run_id, pairs, caller)

        return _Turn(task_id=run.run_id, go=decide)

    async def _decide(self, run_id: str, pairs: list[tuple[ShownRequest, Decision]], caller: Caller) -> RunResult:
        for request, decision in pairs:
            await self.sayso.decide(request.request_id, decision, principal=caller.name, resume=False)
        result = await self.sayso.result(run_id)
        if result.status == "paused" and not result.requests:
            return await self.sayso.resume(run_id)
        return result

    async def _visible_run(self, task_id: str, caller: Caller) -> _RunView:
        try:
            run = await self.sayso.store.get_run(task_id)
        except NotFound:
            raise TaskNotFoundError(message=f"no task has id {task_id!r}") from None
        thread = await self.sayso.store.get_thread(run.thread_id)
        if run.agent != self.agent or thread is None or not caller.may_act_on(owner=thread.owner, agent=run.agent):
            raise TaskNotFoundError(message=f"no task has id {task_id!r}")
        return _RunView(run_id=run.run_id, thread_id=run.thread_id, status=run.status, pause_id=run.pause_id)

    # tasks

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        run = await self._visible_run(params.id, _caller(context))
        return await self._task(await self.sayso.result(run.run_id), pause_id=run.pause_id)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        run = await self._visible_run(params.id, _caller(context))
        yield await self._task(await self.sayso.result(run.run_id), pause_id=run.pause_id)
        while run.status == "running":
            await anyio.sleep(0.2)
            run = await self._visible_run(params.id, _caller(context))
        task = await self._task(await self.sayso.result(run.run_id), pause_id=run.pause_id)
        yield TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        raise InvalidRequestError(message="ListTasks is not offered; read the thread over sayso's REST API")

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        await self._visible_run(params.id, _caller(context))
        raise TaskNotCancelableError(message="sayso runs are not cancelled over A2A; answer or move on instead")

    async def _task_after(self, result: RunResult, context: ServerCallContext) -> Task:
        """The task after a call; a pause remembers whether this call activated the extension."""
        run = await self.sayso.store.get_run(result.run_id)
        if result.status == "paused" and run.pause_id is not None:
            await self._mark(result.run_id, run.pause_id, activated=bool(context.state.get(ACTIVATED_STATE)))
        return await self._task(result, pause_id=run.pause_id)

    async def _task(self, result: RunResult, *, pause_id: str | None) -> Task:
        state = _STATES[result.status]
        status_message: Message | None = None
        artifacts: list[Artifact] = []
        if result.status == "paused":
            activated = await self._activated(result.run_id, pause_id)
            status_message = pause_message(
                pause_view(result.run_id, result.requests),
                task_id=result.run_id,
                context_id=result.thread_id,
                activated=activated,
                legacy=self.sayso.config.a2a.kagent_compat,
            )
        elif result.status == "completed" and result.output is not None:
            status_message = text_message(
                result.output, task_id=result.run_id, context_id=result.thread_id, message_id=f"out-{result.run_id}"
            )
            artifacts.append(
                Artifact(artifact_id=f"{result.run_id}-response", name="response", parts=[Part(text=result.output)])
            )
        elif result.status == "failed":
            status_message = text_message(
                result.error or "the run failed",
                task_id=result.run_id,
                context_id=result.thread_id,
                message_id=f"err-{result.run_id}",
            )
        return Task(
            id=result.run_id,
            context_id=result.thread_id,
            status=self._status(state, status_message),
            artifacts=artifacts,
        )

    def _status(self, state: TaskState, message: Message | None) -> TaskStatus:
        status = TaskStatus(state=state, message=message)
        status.timestamp.FromNanoseconds(int(self._clock() * 1e9))
        return status

    # activation marks

    async def _mark(self, run_id: str, pause_id: str, *, activated: bool) -> None:
        async with self.sayso.store.engine.begin() as conn:
            await conn.execute(sa.delete(a2a_pauses).where(a2a_pauses.c.run_id == run_id))
            await conn.execute(sa.insert(a2a_pauses).values(run_id=run_id, pause_id=pause_id, activated=activated))

    async def _activated(self, run_id: str, pause_id: str | None) -> bool:
        """Whether the pause's payload was attached: yes unless an A2A call without the header reported it."""
        async with self.sayso.store.engine.connect() as conn:
            row = (await conn.execute(sa.select(a2a_pauses).where(a2a_pauses.c.run_id == run_id))).first()
        return row is None or row.pause_id != pause_id or bool(row.activated)

    # what sayso does not offer over A2A

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError


@dataclass(frozen=True, kw_only=True)
class _RunView:
    run_id: str
    thread_id: str
    status: RunStatus
    pause_id: str | None


def _caller(context: ServerCallContext) -> Caller:
    caller = context.state.get(CALLER_STATE)
    assert isinstance(caller, Caller), "the A2A route authenticates before dispatching"
    return caller


def _artifact_event(task: Task, artifact: Artifact) -> Event:
    return TaskArtifactUpdateEvent(task_id=task.id, context_id=task.context_id, artifact=artifact, last_chunk=True)
