"""An a2a-sdk `RequestHandler` over the sayso runtime: a task is a run, a context is a thread.

The SDK owns the envelope (JSON-RPC, protobuf JSON, SSE); this module owns the meaning:
which run a message starts or resumes, how a kagent HITL response becomes the answers to a
pause, and what a task looks like, always rebuilt through the runtime's verbs so that any
process can answer. Who may touch which task is the runtime's rule: the handler passes the
caller on and turns what the runtime refuses into A2A errors (`to_a2a_error`).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass

import anyio
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
    ExtendedAgentCardNotConfiguredError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
)

from ..._core.access import Principal
from ..._results import RunResult
from ..._runtime import RunRecord, RunStatus, new_id
from ...exceptions import InvalidInput, RunConflict, RunNotFound
from .._common import AgentEndpoint
from ._mapping import (
    decisions_from_legacy,
    decisions_from_v1,
    legacy_decision,
    message_text,
    pause_message,
    pause_view,
    text_message,
    to_a2a_error,
    v1_payload,
)

CALLER_STATE = "sayso_caller"
"""Where the context builder puts the authenticated `Principal` in `ServerCallContext.state`."""

ACTIVATED_STATE = "sayso_hitl_activated"
"""Where the context builder says whether this call activated the HITL extension."""

ACTIVATION_MARKS = "a2a.activation"
"""The runtime's mark namespace for whether a pause's HITL payload was attached (key: the run id)."""

_CONTEXT_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")

_STATES: dict[RunStatus, TaskState] = {
    "running": TaskState.TASK_STATE_WORKING,
    "paused": TaskState.TASK_STATE_INPUT_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}


class SaysoRequestHandler(AgentEndpoint, RequestHandler):
    """Serves one agent of a runtime over A2A."""

    # messages

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        try:
            return await self._task_after(await self._send(params.message, context), context)
        except Exception as exc:
            raise to_a2a_error(exc) from exc

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        try:
            task = await self._task_after(await self._send(params.message, context), context)
        except Exception as exc:
            raise to_a2a_error(exc) from exc
        yield Task(id=task.id, context_id=task.context_id, status=self._status(TaskState.TASK_STATE_WORKING, None))
        for artifact in task.artifacts:
            yield _artifact_event(task, artifact)
        yield TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)

    async def _send(self, message: Message, context: ServerCallContext) -> RunResult:
        """What a message does: start a run, answer the task's pause, or move on from it.

        A refused message changes nothing: the runtime checks every answer before recording any.
        """
        caller = _caller(context)
        if message.task_id:
            # The run belongs to the server, not to the connection: a client that leaves does not cut it short.
            with anyio.CancelScope(shield=True):
                result = await self._continue(message, caller)
            return result
        text = message_text(message)
        if not text.strip():
            raise InvalidInput("the message has no text part", field="message")
        thread_id = message.context_id or new_id("thr")
        if not _CONTEXT_ID.match(thread_id):
            raise InvalidInput(f"{thread_id!r} is not a usable id (letters, digits, _.:-)", field="contextId")
        with anyio.CancelScope(shield=True):
            result = await self.sayso.run(text, agent=self.agent, thread_id=thread_id, principal=caller)
        return result

    async def _continue(self, message: Message, caller: Principal) -> RunResult:
        run = await self._visible_run(message.task_id, caller)
        if message.context_id and message.context_id != run.thread_id:
            raise InvalidInput(f"task {run.run_id!r} belongs to context {run.thread_id!r}", field="contextId")
        payload = v1_payload(message)
        legacy = legacy_decision(message) if self.sayso.config.a2a.kagent_compat else None
        if run.status != "paused":
            raise RunConflict(
                run.run_id,
                f"the task is {run.status}, not waiting for input; "
                "send a new message without taskId to continue the conversation",
            )
        if payload is None and legacy is None:
            # Plain input to a waiting task: the person moved on (§3.3); the open requests are skipped.
            text = message_text(message)
            if not text.strip():
                raise InvalidInput("the message has no text part and no HITL response", field="message")
            return await self.sayso.run(text, agent=self.agent, thread_id=run.thread_id, principal=caller)
        view = pause_view(run.run_id, (await self.sayso.result(run.run_id, principal=caller)).requests)
        if view is None:
            raise InvalidInput(f"task {run.run_id!r} waits for nothing a HITL response can answer", field="message")
        # kagent requires every shown call decided (checked by the mapping); what is not shown waits.
        pairs = decisions_from_v1(view, payload) if payload is not None else decisions_from_legacy(view, legacy or {})
        answers = {request.request_id: decision for request, decision in pairs}
        return await self.sayso.answer_pause(run.run_id, answers, principal=caller, rest="wait")

    async def _visible_run(self, task_id: str, caller: Principal) -> RunRecord:
        """The run a task id names on this agent's endpoint; `RunNotFound` when the caller may not see it."""
        run = await self.sayso.run_record(task_id, principal=caller)
        if run.agent != self.agent:
            raise RunNotFound(task_id)
        return run

    # tasks

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        try:
            run = await self._visible_run(params.id, _caller(context))
            return await self._task(await self.sayso.result(run.run_id), pause_id=run.pause_id)
        except Exception as exc:
            raise to_a2a_error(exc) from exc

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        try:
            run = await self._visible_run(params.id, _caller(context))
            yield await self._task(await self.sayso.result(run.run_id), pause_id=run.pause_id)
            while run.status == "running":
                await anyio.sleep(0.2)
                run = await self._visible_run(params.id, _caller(context))
            task = await self._task(await self.sayso.result(run.run_id), pause_id=run.pause_id)
        except Exception as exc:
            raise to_a2a_error(exc) from exc
        yield TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        raise InvalidRequestError(message="ListTasks is not offered; read the thread over sayso's REST API")

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        try:
            await self._visible_run(params.id, _caller(context))
        except Exception as exc:
            raise to_a2a_error(exc) from exc
        raise TaskNotCancelableError(message="sayso runs are not cancelled over A2A; answer or move on instead")

    async def _task_after(self, result: RunResult, context: ServerCallContext) -> Task:
        """The task after a call; a pause remembers whether this call activated the extension."""
        run = await self.sayso.run_record(result.run_id)
        if result.status == "paused" and run.pause_id is not None:
            mark = _ActivationMark(pause_id=run.pause_id, activated=bool(context.state.get(ACTIVATED_STATE)))
            await self.sayso.set_mark(ACTIVATION_MARKS, result.run_id, mark.dump())
        return await self._task(result, pause_id=run.pause_id)

    async def _task(self, result: RunResult, *, pause_id: str | None) -> Task:
        state = _STATES[result.status]
        status_message: Message | None = None
        artifacts: list[Artifact] = []
        if result.status == "paused":
            status_message = pause_message(
                pause_view(result.run_id, result.requests),
                task_id=result.run_id,
                context_id=result.thread_id,
                activated=await self._activated(result.run_id, pause_id),
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

    async def _activated(self, run_id: str, pause_id: str | None) -> bool:
        """Whether the pause's payload was attached: yes unless an A2A call without the header reported it."""
        raw = await self.sayso.get_mark(ACTIVATION_MARKS, run_id)
        if raw is None:
            return True
        mark = _ActivationMark.load(raw)
        return mark.pause_id != pause_id or mark.activated

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
class _ActivationMark:
    """Whether the A2A call that left a run paused activated the HITL extension, kept as a runtime mark.

    A pause shown without the extension stays text-only on later reads; the mark names its pause,
    so a later pause of the same run is not mistaken for it.
    """

    pause_id: str
    activated: bool

    def dump(self) -> str:
        return json.dumps({"pause_id": self.pause_id, "activated": self.activated})

    @classmethod
    def load(cls, raw: str) -> _ActivationMark:
        data = json.loads(raw)
        return cls(pause_id=str(data["pause_id"]), activated=bool(data["activated"]))


def _caller(context: ServerCallContext) -> Principal:
    caller = context.state.get(CALLER_STATE)
    assert isinstance(caller, Principal), "the A2A route authenticates before dispatching"
    return caller


def _artifact_event(task: Task, artifact: Artifact) -> Event:
    return TaskArtifactUpdateEvent(task_id=task.id, context_id=task.context_id, artifact=artifact, last_chunk=True)
