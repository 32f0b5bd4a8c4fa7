"""An a2a-sdk `RequestHandler` over the sayso runtime: a task is a run, a context is a thread.

The SDK owns the envelope (JSON-RPC, protobuf JSON, SSE, push delivery); this module owns the
meaning: which run a message starts or resumes and how a kagent HITL response becomes the
answers to a pause; what a task looks like is `_tasks.TaskReader`'s, always rebuilt through the
runtime's verbs so that any process can answer. Who may touch which task is the runtime's rule: the handler passes the
caller on, and every verb turns what the runtime refuses into A2A errors in one place (`_errors_mapped`,
over `to_a2a_error`'s table).

Every message's work runs in the router's task group (`Background`), not in the request: a
client that leaves does not cut a run short, `returnImmediately` returns the task while it
works, and a stream sends the run's text as the model writes it.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

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
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import ExtendedAgentCardNotConfiguredError, PushNotificationNotSupportedError, TaskNotFoundError
from a2a.utils.task import apply_history_length, validate_history_length
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..._core.access import Principal
from ..._core.decisions import Decision
from ..._core.ids import is_id
from ..._runtime import RunRecord, RunResult, Sayso, new_id
from ...exceptions import InvalidInput, RunConflict, RunNotFound, StoreError
from .._common import AgentEndpoint
from ._mapping import (
    LegacyInput,
    PauseView,
    data_parts,
    decision_from_input,
    decisions_from_legacy,
    decisions_from_v1,
    legacy_input,
    message_text,
    no_answer_reason,
    not_an_answer,
    sayso_extras,
    to_a2a_error,
    v1_payload,
)
from ._push import MarkPushConfigStore
from ._push_delivery import PushDispatcher
from ._tasks import ANSWER_ARTIFACT, TaskReader, answer_artifact_id, list_tasks, still_streams

CALLER_STATE = "sayso_caller"
"""Where the context builder puts the authenticated `Principal` in `ServerCallContext.state`."""

ACTIVATED_STATE = "sayso_hitl_activated"
"""Where the context builder says whether this call activated the HITL extension."""

_TextSink = Callable[[str], Awaitable[None]]
"""Where a launched run's text goes as the model writes it (the task's artifact updates)."""


_POLL_SECONDS = 0.02
"""How often a launch looks whether its run is under way yet."""

logger = logging.getLogger("sayso.a2a")


@dataclass
class Background:
    """What outlives one A2A call: the router's task group, and the push dispatcher (both set by its lifespan)."""

    tasks: TaskGroup | None = None
    push: PushDispatcher | None = None

    def start_soon(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        assert self.tasks is not None, "the A2A router's lifespan has not started"
        self.tasks.start_soon(work)


@dataclass(kw_only=True)
class _Launch:
    """A message's work, started in the background: its task, its text as it comes, and its end."""

    run_id: str
    context_id: str
    message: Message
    chunks: MemoryObjectReceiveStream[str]
    finished: anyio.Event = field(default_factory=anyio.Event)
    outcome: RunResult | None = None
    error: Exception | None = None

    async def result(self) -> RunResult:
        await self.finished.wait()
        if self.error is not None:
            raise self.error
        assert self.outcome is not None
        return self.outcome


def _mapped(verb: Callable[..., Any], *, cancelling: bool) -> Callable[..., Any]:
    """`verb` with what it raises of sayso's turned into A2A errors on the way out (a stream's too)."""
    if inspect.isasyncgenfunction(verb):

        @functools.wraps(verb)
        async def stream(*args: Any, **kwargs: Any) -> AsyncGenerator[Any]:
            try:
                async for event in verb(*args, **kwargs):
                    yield event
            except Exception as exc:
                raise _a2a_error(verb, exc, cancelling) from exc

        return stream

    @functools.wraps(verb)
    async def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return await verb(*args, **kwargs)
        except Exception as exc:
            raise _a2a_error(verb, exc, cancelling) from exc

    return call


def _a2a_error(verb: Callable[..., Any], exc: Exception, cancelling: bool) -> Exception:
    if isinstance(exc, StoreError):  # the caller is told to try again; the operator, here, what failed
        logger.warning("A2A %s: %s unavailable: %s", verb.__name__, exc.service, exc)
    return to_a2a_error(exc, cancelling=cancelling)


_Handler = TypeVar("_Handler", bound=RequestHandler)


def _errors_mapped(handler: type[_Handler]) -> type[_Handler]:
    """Every A2A verb (`on_*`) of `handler` answers sayso's errors as A2A errors: mapped here, once."""
    for name, verb in list(vars(handler).items()):
        if name.startswith("on_") and (inspect.iscoroutinefunction(verb) or inspect.isasyncgenfunction(verb)):
            setattr(handler, name, _mapped(verb, cancelling=name == "on_cancel_task"))
    return handler


@_errors_mapped
class SaysoRequestHandler(AgentEndpoint, RequestHandler):
    """Serves one entry of a runtime (an agent, or an orchestration led by `agent`) over A2A."""

    def __init__(
        self,
        sayso: Sayso,
        agent: str,
        *,
        background: Background | None = None,
        push_store: MarkPushConfigStore | None = None,
    ) -> None:
        super().__init__(sayso, agent)
        self.background = background or Background()
        self.push_store = push_store
        self.legacy = sayso.config.a2a.kagent_compat or sayso.config.a2a.legacy_only
        self.tasks = TaskReader(sayso, legacy=self.legacy, clock=self._clock)

    # messages

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        configuration = params.configuration if params.HasField("configuration") else None
        validate_history_length(configuration)
        launch = await self._launch(params.message, context, configuration)
        launch.chunks.close()  # a blocking call sends no text as it comes
        if configuration is not None and configuration.return_immediately:
            return apply_history_length(await self._current(launch), configuration)
        return apply_history_length(await self.tasks.task(await launch.result()), configuration)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        configuration = params.configuration if params.HasField("configuration") else None
        launch = await self._launch(params.message, context, configuration)
        async with launch.chunks:
            status = self.tasks.status(TaskState.TASK_STATE_WORKING, None)
            yield Task(id=launch.run_id, context_id=launch.context_id, status=status, history=[launch.message])
            # The run's text as the model writes it: the task's one answer artifact, appended to chunk by chunk.
            # One chunk is held back, so that the last one can be marked once the run's end is known.
            sent: list[str] = []
            held: str | None = None
            async for chunk in launch.chunks:
                if held is not None:
                    yield self._chunk(launch, held, append=bool(sent))
                    sent.append(held)
                held = chunk
        task = await self.tasks.task(await launch.result())
        answer = task.artifacts[0] if task.artifacts else None
        if answer is not None and held is not None and "".join([*sent, held]) == _text_of(answer):
            yield self._chunk(launch, held, append=bool(sent), last=True)
        elif answer is not None:
            # What was streamed is not the answer (nothing streamed, or text beside tool calls): replaced whole.
            yield TaskArtifactUpdateEvent(
                task_id=task.id, context_id=task.context_id, artifact=answer, append=False, last_chunk=True
            )
        elif held is not None:
            yield self._chunk(launch, held, append=bool(sent))
        yield TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)

    def _chunk(self, launch: _Launch, text: str, *, append: bool, last: bool = False) -> TaskArtifactUpdateEvent:
        artifact_id = answer_artifact_id(launch.run_id)
        artifact = Artifact(artifact_id=artifact_id, name=ANSWER_ARTIFACT, parts=[Part(text=text)])
        return TaskArtifactUpdateEvent(
            task_id=launch.run_id, context_id=launch.context_id, artifact=artifact, append=append, last_chunk=last
        )

    async def _launch(
        self, message: Message, context: ServerCallContext, configuration: SendMessageConfiguration | None
    ) -> _Launch:
        """Start what a message does in the background; return once its run is working or already done.

        Everything that can be refused is refused here, before anything runs: the answers are
        checked against the pause, and the runtime checks them again before recording any.
        """
        caller = _caller(context)
        activated = bool(context.state.get(ACTIVATED_STATE)) and not self.sayso.config.a2a.legacy_only
        work, run_id, context_id, pause_id = await self._plan(message, caller)
        message.task_id, message.context_id = run_id, context_id
        if configuration is not None and configuration.HasField("task_push_notification_config"):
            await self._push_store().set_info(run_id, configuration.task_push_notification_config, context)
        send, receive = anyio.create_memory_object_stream[str](max_buffer_size=math.inf)
        launch = _Launch(run_id=run_id, context_id=context_id, message=message, chunks=receive)
        self.background.start_soon(lambda: self._work(launch, work, send, activated))
        try:
            await self._started(launch, pause_id)
        except BaseException:
            receive.close()
            raise
        return launch

    async def _plan(
        self, message: Message, caller: Principal
    ) -> tuple[Callable[[_TextSink], Awaitable[RunResult]], str, str, str | None]:
        """What a message does (start a run, answer the task's pause, or move on from it), checked, not yet run.

        Returns the work, the task it belongs to, its context, and the pause it answers (if any).
        """
        if not message.task_id:
            text = message_text(message)
            if not text.strip():
                raise InvalidInput("the message has no text part", field="message")
            thread_id = message.context_id or new_id("thr")
            if not is_id(thread_id):
                raise InvalidInput(f"{thread_id!r} is not a usable id (letters, digits, _.:-)", field="contextId")
            run_id = new_id("run")
            return self._run_work(text, thread_id, caller, run_id), run_id, thread_id, None
        run = await self._visible_run(message.task_id, caller)
        if message.context_id and message.context_id != run.thread_id:
            raise InvalidInput(f"task {run.run_id!r} belongs to context {run.thread_id!r}", field="contextId")
        payload = v1_payload(message)
        legacy = legacy_input(data_parts(message)) if self.legacy else None
        if run.status != "paused":
            raise RunConflict(
                run.run_id,
                f"the task is {run.status}, not waiting for input; "
                "send a new message without taskId to continue the conversation",
            )
        view = await self.tasks.view(run.run_id, (await self.sayso.result(run.run_id, principal=caller)).requests)
        if view is not None and view.kind == "input":
            # A workflow's question: the message is its answer (kagent's answers, a DataPart, or text),
            # checked before it runs.
            pairs = decision_from_input(view, message, legacy=self.legacy)
            given = {request.request_id: decision for request, decision in pairs}

            async def provide(on_text: _TextSink) -> RunResult:
                return await self.sayso.answer_pause(run.run_id, given, principal=caller, rest="wait", on_text=on_text)

            return provide, run.run_id, run.thread_id, run.pause_id
        if payload is None and not legacy:
            # No answer sent to a waiting task: refused, and the task still waits (kagent's behaviour). Moving on
            # is a message on the context without the task id (see docs/concepts/decisions.md#resume-rules), so a
            # client polling the task keeps it.
            raise not_an_answer(run.run_id, run.thread_id, view, no_answer_reason(message))
        answers = self._answers(run, view, message, payload, legacy)

        async def answer(on_text: _TextSink) -> RunResult:
            return await self.sayso.answer_pause(
                run.run_id, answers, principal=caller, rest="wait", via="a2a", on_text=on_text
            )

        return answer, run.run_id, run.thread_id, run.pause_id

    def _run_work(
        self, text: str, thread_id: str, caller: Principal, run_id: str
    ) -> Callable[[_TextSink], Awaitable[RunResult]]:
        async def start(on_text: _TextSink) -> RunResult:
            return await self.sayso.run(
                text, agent=self.agent, thread_id=thread_id, principal=caller, run_id=run_id, on_text=on_text, via="a2a"
            )

        return start

    def _answers(
        self,
        run: RunRecord,
        view: PauseView | None,
        message: Message,
        payload: dict[str, Any] | None,
        legacy: LegacyInput | None,
    ) -> dict[str, Decision]:
        """The answers a HITL response takes for the view shown now, by request id (every shown call decided)."""
        if view is None:
            raise InvalidInput(f"task {run.run_id!r} waits for nothing a HITL response can answer", field="message")
        extras = sayso_extras(message)
        if payload is not None:
            pairs = decisions_from_v1(view, payload, extras)
        else:
            assert legacy is not None
            pairs = decisions_from_legacy(view, legacy, extras)
        return {request.request_id: decision for request, decision in pairs}

    async def _work(
        self,
        launch: _Launch,
        work: Callable[[_TextSink], Awaitable[RunResult]],
        send: MemoryObjectSendStream[str],
        activated: bool,
    ) -> None:
        async def on_text(chunk: str) -> None:
            try:
                send.send_nowait(chunk)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the client left; the run carries on and its outcome is in the store

        with send:
            try:
                outcome = await work(on_text)
                # Before the caller reads the task: whether its pause carries the payload.
                await self.tasks.remember_activation(outcome, activated)
                launch.outcome = outcome
            except Exception as exc:
                launch.error = exc
            finally:
                launch.finished.set()
        if self.background.push is not None:
            self.background.push.wake()  # the update is in the outbox; the dispatcher sends it

    async def _started(self, launch: _Launch, pause_id: str | None) -> None:
        """Wait until the launched work is under way in the store, or over (its refusal is raised here)."""
        while not launch.finished.is_set():
            try:
                run = await self.sayso.run_record(launch.run_id)
            except RunNotFound:
                run = None
            if run is not None and (run.status != "paused" or run.pause_id != pause_id):
                return
            with anyio.move_on_after(_POLL_SECONDS):
                await launch.finished.wait()
        if launch.error is not None:
            raise launch.error

    async def _current(self, launch: _Launch) -> Task:
        """The task as it stands now: working with the person's message, or already done."""
        if launch.finished.is_set():
            return await self.tasks.task(await launch.result())
        return Task(
            id=launch.run_id,
            context_id=launch.context_id,
            status=self.tasks.status(TaskState.TASK_STATE_WORKING, None),
            history=[launch.message],
        )

    async def _visible_run(self, task_id: str, caller: Principal) -> RunRecord:
        """The run a task id names on this endpoint; `RunNotFound` when the caller may not see it."""
        if not task_id:  # a field left out reads as "" from the request's protobuf: malformed, not unknown
            raise InvalidInput("the request names no task id")
        if not is_id(task_id):  # no task has it (a NUL in it is not even looked up in PostgreSQL)
            raise RunNotFound(task_id)
        run = await self.sayso.run_record(task_id, principal=caller)
        if run.agent != self.agent:
            raise RunNotFound(task_id)
        return run

    # tasks

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        validate_history_length(params)
        run = await self._visible_run(params.id, _caller(context))
        return apply_history_length(await self.tasks.task(await self.sayso.result(run.run_id)), params)

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        return await list_tasks(self.sayso, self.tasks, self.agent, params, _caller(context))

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """The task, then (while it works) its status once it stops working; a paused task's Task says so once.

        A task that ended has nothing more to stream: A2A's unsupported operation (`still_streams`).
        """
        run = await self._visible_run(params.id, _caller(context))
        yield still_streams(await self.tasks.task(await self.sayso.result(run.run_id)))
        if run.status != "running":
            return
        while run.status == "running":
            await anyio.sleep(0.2)
            run = await self._visible_run(params.id, _caller(context))
        task = await self.tasks.task(await self.sayso.result(run.run_id))
        yield TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        """Cancel a waiting or working task: its open requests close as skipped and nothing more runs."""
        caller = _caller(context)
        run = await self._visible_run(params.id, caller)
        task = await self.tasks.task(await self.sayso.cancel(run.run_id, principal=caller, via="a2a"))
        if self.background.push is not None:
            self.background.push.wake()
        return task

    async def task_of(self, run: RunRecord) -> Task:
        """A visible run's task, with its whole history."""
        return await self.tasks.task(await self.sayso.result(run.run_id))

        # push notification configs (the SDK's store port, kept with sayso's state)

    def _push_store(self) -> MarkPushConfigStore:
        if self.push_store is None:
            raise PushNotificationNotSupportedError
        return self.push_store

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        await self._visible_run(params.task_id, _caller(context))
        return await self._push_store().set_info(params.task_id, params, context)

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        await self._visible_run(params.task_id, _caller(context))
        configs = await self._push_store().get_info(params.task_id, context)
        found = next((c for c in configs if c.id == (params.id or params.task_id)), None)
        if found is None:
            raise TaskNotFoundError(message=f"task {params.task_id!r} has no push config {params.id!r}")
        return found

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        await self._visible_run(params.task_id, _caller(context))
        configs = await self._push_store().get_info(params.task_id, context)
        return ListTaskPushNotificationConfigsResponse(configs=configs)

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        await self._visible_run(params.task_id, _caller(context))
        await self._push_store().delete_info(params.task_id, context, params.id or None)

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError


def _text_of(artifact: Artifact) -> str:
    return "".join(part.text for part in artifact.parts if part.HasField("text"))


def _caller(context: ServerCallContext) -> Principal:
    caller = context.state.get(CALLER_STATE)
    assert isinstance(caller, Principal), "the A2A route authenticates before dispatching"
    return caller
