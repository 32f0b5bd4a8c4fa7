"""The AG-UI endpoint of each entry: `POST /ag-ui/{name}` takes a `RunAgentInput` and streams events over SSE.

Every agent and every orchestration (its lead agent answers) is served under its name. An
AG-UI thread is a sayso thread. A run's pause stays on the server: a resume names interrupts
by id and client tool calls by tool call id, both looked up in what the runtime shows the
caller, and answers the whole pause in one call (what it leaves out is skipped); a new message
sent beside it is answered after it. A user message reaches the agent once, by its AG-UI id
(`_taken`): one the thread already took is history, never new text, and an input that adds
nothing shows where the thread stands, streaming what the client's history lacks of it (a client
that dropped mid-run gets the answer when it sends its input again). Who may touch which thread
is the runtime's rule; the endpoint passes the caller on. With
`ag_ui.kaboo_compat`, remembered approvals are the host's (`forwardedProps.kaboo_grants`). Each
run ends with kaboo's session state (`_state`) unless `runtime.persist_session_state` is off.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypedDict

import anyio
from ag_ui.core import BaseEvent, RunAgentInput, RunErrorEvent, RunStartedEvent
from ag_ui.encoder import EventEncoder
from fastapi import APIRouter
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from pydantic_ai.messages import ModelMessage
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response

from ..._core.access import Principal, may_message
from ..._core.client_tools import check_client_tools
from ..._core.grants import Grant
from ..._core.ids import ID_PATTERN, is_id
from ..._core.limits import check_message
from ..._runtime import RunRecord, RunResult, Sayso, ThreadRecord, authenticate
from ...exceptions import (
    DecisionRefused,
    InvalidInput,
    NotAllowed,
    RequestNotFound,
    RunNotFound,
    ThreadBusy,
    ThreadNotFound,
)
from .._common import AgentEndpoint
from ._inbound import client_tools, decisions_from_resume, host_grants, moves_on
from ._mapping import (
    NOTHING_HELD,
    RESUME,
    THREAD,
    AnswerTooLate,
    Held,
    call_ids,
    error_event,
    finished_event,
    held,
    message_events,
    pending_call_events,
    refused,
)
from ._state import replay_refused, replayed, state_snapshot
from ._taken import NewInput, read_input, take

PING_SECONDS = 15.0
"""How often a quiet run's stream sends a comment line, so proxies keep the connection."""


class HostTerms(TypedDict, total=False):
    """The remembered-approval terms of one AG-UI run, as the runtime's `run`/`answer_pause` take them."""

    grants: Sequence[Grant]
    offer_wider_scopes: bool


class Shown(NamedTuple):
    """Messages one run added, from its `start`-th on: what a turn streams of it."""

    run_id: str
    start: int
    messages: list[ModelMessage]


@dataclass(frozen=True)
class Turn:
    """What one AG-UI run did: the runs' messages to stream, in order, and the outcome to finish with."""

    result: RunResult
    shown: list[Shown]
    unsent: bool = False
    """The answered run failed, so the new message sent with the answer was not sent."""
    held: Held = NOTHING_HELD
    """What the client holds already, not streamed to it again: when nothing ran (the input came before and the
    outcome is shown again), what its history has (a client merges a message streamed under an id it knows into
    the one it has, and appends the arguments streamed for a call it knows)."""


class AgUiAgent(AgentEndpoint):
    """Runs one agent of a runtime for AG-UI clients."""

    @property
    def kaboo(self) -> bool:
        """Whether this endpoint speaks kaboo's dialect (`ag_ui.kaboo_compat`)."""
        return self.sayso.config.ag_ui.kaboo_compat

    async def events(self, run_input: RunAgentInput, caller: Principal) -> AsyncIterator[BaseEvent]:
        """Every event of one AG-UI run, from `RUN_STARTED` to `RUN_FINISHED` or `RUN_ERROR`."""
        yield RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)
        try:
            # The run belongs to the server, not to the connection: a client that leaves does not cut it short.
            with anyio.CancelScope(shield=True):
                turn = await self._turn(run_input, caller)
        except Exception as exc:
            yield error_event(exc)
            return
        for shown in turn.shown:
            for event in message_events(shown.messages, id_prefix=shown.run_id, start=shown.start, held=turn.held):
                yield event
        result = turn.result
        if result.status == "failed":
            unsent = "; the new message was not sent (send it again)" if turn.unsent else ""
            yield RunErrorEvent(message=(result.error or "the run failed") + unsent, code="run_failed")
            return
        for event in pending_call_events(result.requests, run_id=result.run_id, kaboo=self.kaboo, held=turn.held):
            yield event
        if self.sayso.config.runtime.persist_session_state:
            run = await self.sayso.run_record(result.run_id)
            yield state_snapshot(run_input.state, run, result.requests, kaboo=self.kaboo)
        yield finished_event(
            thread_id=run_input.thread_id,
            run_id=run_input.run_id,
            requests=result.requests,
            output=result.output,
            sayso_run_id=result.run_id,
            kaboo=self.kaboo,
            votes=result.votes,
        )

    async def _turn(self, run_input: RunAgentInput, caller: Principal) -> Turn:
        """Answer the thread's pause, send the person's new message, or both (the answer first).

        An input that adds nothing the thread lacks (it came before) shows where the thread stands.
        """
        thread = await self._thread(run_input.thread_id, caller)
        paused = None
        if thread is not None and thread.active_run_id is not None:
            active = await self.sayso.result(thread.active_run_id, principal=caller)
            paused = active if active.status == "paused" else None
        new = await read_input(self.sayso, run_input.thread_id, run_input.messages, known=thread is not None)
        hosted = self._host_terms(run_input, caller)
        text = new.text
        # Moving on (docs/concepts/decisions.md#resume-rules) cancels every open interrupt (the HttpAgent
        # starts no run while one is unanswered) and sends the new message: that is a new message, whose run
        # supersedes the pause (what was open is skipped, never run) and answers it in this same AG-UI run.
        moving_on = moves_on(run_input.resume or [], text) and not new.answers
        if (run_input.resume and not moving_on) or (paused is not None and new.answers):
            if thread is None or paused is None:
                raise InvalidInput(await self._nothing_waits(run_input, caller), field=THREAD)
            return await self._answer(run_input, caller, thread, paused, new, hosted)
        if text is None and new.taken_by is not None and thread is not None:
            return await self._as_it_stands(thread, new.taken_by, caller, held(run_input.messages))
        if text is None or not text.strip():
            raise InvalidInput(
                "the last message must be the person's, with text, or the input must resume a pause", field="messages"
            )
        return await self._say(text, new, run_input, caller, hosted)

    async def _answer(
        self,
        run_input: RunAgentInput,
        caller: Principal,
        thread: ThreadRecord,
        paused: RunResult,
        new: NewInput,
        hosted: HostTerms,
    ) -> Turn:
        """Answer the pause with the resume's entries and the tool messages, then send the new message if any.

        The message is checked before the answer is recorded, so it is never refused after the pause moved on.
        A message sent after the answer moves on from what the run asks next, as any new message does.
        """
        if thread.agent != self.agent:
            raise InvalidInput(f"thread {thread.thread_id!r} is a conversation with agent {thread.agent!r}")
        waiting = await self.sayso.run_record(paused.run_id)
        text = new.text if new.text and new.text.strip() else None  # a message with no text says nothing new
        if text is not None:
            self._check_message(text, run_input, caller, thread)
        try:
            if (named := replayed(run_input.state, waiting)) is not None:
                ours = await self._runs_on(named.get("run_id"), thread.thread_id, caller)
                raise replay_refused(named, waiting, this_threads=ours)
            so_far = await self.sayso.run_messages(paused.run_id)
            decisions = decisions_from_resume(
                paused.requests,
                run_input.resume or [],
                new.answers,
                run_id=paused.run_id,
                streamed_calls=call_ids(so_far),
                kaboo=self.kaboo,
            )
            if not decisions:
                raise refused("the resume answers none of the open requests")
            # A request the resume leaves out counts as skipped, never as approved.
            result = await self.sayso.answer_pause(
                paused.run_id, decisions, principal=caller, rest="skip", via="ag-ui", **hosted
            )
        except (InvalidInput, DecisionRefused) as exc:
            if (isinstance(exc, DecisionRefused) or exc.field == RESUME) and not await self._waits(waiting, caller):
                raise AnswerTooLate(exc) from exc
            raise
        # The run went on: only what it added from here is new to the client.
        before = len(so_far)
        answered = Shown(result.run_id, before, (await self.sayso.run_messages(result.run_id))[before:])
        if text is None:
            return Turn(result, [answered])
        if result.status == "failed":
            return Turn(result, [answered], unsent=True)
        then = await self._say(text, new, run_input, caller, hosted)
        return Turn(then.result, [answered, *then.shown])

    async def _say(
        self, text: str, new: NewInput, run_input: RunAgentInput, caller: Principal, hosted: HostTerms
    ) -> Turn:
        """Send the person's new messages, kept as taken by the run that answers them."""
        run_id = await take(self.sayso, run_input.thread_id, new.ids)
        result = await self.sayso.run(
            text,
            agent=self.agent,
            thread_id=run_input.thread_id,
            principal=caller,
            client_tools=client_tools(run_input.tools or [], run_input.context or []),
            run_id=run_id,
            via="ag-ui",
            **hosted,
        )
        return Turn(result, [Shown(result.run_id, 0, await self.sayso.run_messages(result.run_id))])

    async def _as_it_stands(self, thread: ThreadRecord, taken_by: str, caller: Principal, client: Held) -> Turn:
        """An input the thread already took, come again: nothing runs; the outcome is the thread's now.

        While the thread waits, that is its open interrupts (and pending browser calls) again;
        once its runs ended, the last run's outcome. What the run that took the input (and the one
        the thread waits in, when another) said, called and got back is streamed as well, less what
        the `client` holds: a client that dropped mid-run lacks it, and resends its input for it.
        """
        result = await self.sayso.result(thread.active_run_id or taken_by, principal=caller)
        if result.status == "running":
            raise ThreadBusy(
                result.run_id, f"thread {thread.thread_id!r} has a run in progress; this message is already taken"
            )
        runs = [taken_by] if result.run_id == taken_by else [taken_by, result.run_id]
        return Turn(result, [Shown(run, 0, await self.sayso.run_messages(run)) for run in runs], held=client)

    async def _runs_on(self, run_id: object, thread_id: str, caller: Principal) -> bool:
        """Whether `run_id` (as a client's state names it) is a run of `thread_id` that the caller may see."""
        if not isinstance(run_id, str) or not is_id(run_id):
            return False
        try:
            return (await self.sayso.run_record(run_id, principal=caller)).thread_id == thread_id
        except RunNotFound:
            return False

    async def _waits(self, paused: RunRecord, caller: Principal) -> bool:
        """Whether the pause `paused` holds still waits for an answer (another may have moved the run on meanwhile)."""
        now = await self.sayso.result(paused.run_id, principal=caller)
        record = await self.sayso.run_record(paused.run_id)
        return now.status == "paused" and bool(now.requests) and record.pause_id == paused.pause_id

    def _check_message(self, text: str, run_input: RunAgentInput, caller: Principal, thread: ThreadRecord) -> None:
        """Refuse, before anything is recorded, a message `Sayso.run` would refuse: the same checks, done early."""
        if not may_message(caller, owner=thread.owner):
            raise NotAllowed(
                thread.thread_id,
                f"only the thread's owner may send messages into it, not {caller.name!r}",
                subject="thread",
            )
        check_message(text, self.sayso.config.limits.to_limits())
        check_client_tools(client_tools(run_input.tools or [], run_input.context or []))

    def _host_terms(self, run_input: RunAgentInput, caller: Principal) -> HostTerms:
        """In kaboo's dialect the host keeps remembered approvals: the ones it sends, and none stored here.

        A host that sends no `kaboo_grants` remembers nothing, so only `once` is offered.
        """
        if not self.kaboo:
            return {}
        grants = host_grants(
            run_input.forwarded_props, principal=caller, agent=self.agent, thread_id=run_input.thread_id
        )
        return {"grants": grants or [], "offer_wider_scopes": grants is not None}

    async def _nothing_waits(self, run_input: RunAgentInput, caller: Principal) -> str:
        """Why a resume finds no pause: what became of the first interrupt it names on this thread, when it is one.

        A late answer to an input that expired (and that the sweep closed, so the run went on) is told so, not
        just that the thread waits on nothing.
        """
        nothing = f"nothing waits on thread {run_input.thread_id!r}"
        for entry in run_input.resume or []:
            try:
                state = await self.sayso.request(entry.interrupt_id, principal=caller)
            except RequestNotFound:
                continue
            if (state.request.chat_thread_id or state.request.thread_id) != run_input.thread_id:
                continue
            record = state.decision
            if record is not None and record.by == "expiry":
                why = "expired before it was answered"
            elif record is not None and not record.closed:
                why = "was answered already"
            else:
                why = "was closed unanswered: the run went on without it"
            return f"interrupt {entry.interrupt_id!r} {why}; {nothing}"
        return nothing

    async def _thread(self, thread_id: str, caller: Principal) -> ThreadRecord | None:
        """The thread, or `None` when it is new (or not the caller's to see, which looks the same)."""
        try:
            return await self.sayso.thread(thread_id, principal=caller)
        except ThreadNotFound:
            return None


def ag_ui_router(sayso: Sayso) -> APIRouter:
    """`POST /ag-ui/{name}` for every entry of `sayso`: its agents, orchestrations and workflows."""
    router = APIRouter()
    for name, agent in sayso.config.entries().items():
        router.add_route(
            f"/ag-ui/{name}", _endpoint(AgUiAgent(sayso, agent)), methods=["POST"], include_in_schema=False
        )
    return router


def _endpoint(runner: AgUiAgent) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        # Refused before any event is streamed: a plain HTTP answer, the server's problem document (the app's
        # handlers map `Unauthenticated` and a body's validation error as for REST); refusals after this are
        # `RUN_ERROR`s.
        caller = authenticate(runner.sayso, request.headers.get("authorization"))
        run_input = _run_input(await request.body())
        encoder = EventEncoder(accept=request.headers.get("accept") or "text/event-stream")

        async def body() -> AsyncIterator[bytes]:
            async for event in runner.events(run_input, caller):
                yield encoder.encode(event).encode()  # the protocol's own framing, passed through as it is

        # sse-starlette sends the stream: comment-line pings on a quiet run, and a client that left ends it.
        return EventSourceResponse(
            body(), media_type=encoder.get_content_type(), headers={"Cache-Control": "no-cache"}, ping=PING_SECONDS
        )

    return endpoint


def _run_input(body: bytes) -> RunAgentInput:
    """The body as a `RunAgentInput`.

    Raises:
        RequestValidationError: it is none (empty, not an object, a field missing or of the wrong type), or its
            `threadId` is not an id as REST's `thread_id` must be (`ID_PATTERN`: the thread is stored under it and
            looked up by it); each problem is located under `body` as FastAPI locates a REST body's.
    """
    if not body.strip():
        raise RequestValidationError([{"type": "missing", "loc": ("body",), "msg": "Field required"}])
    try:
        run_input = RunAgentInput.model_validate_json(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        raise RequestValidationError([{**error, "loc": ("body", *error["loc"])} for error in errors]) from None
    if not is_id(run_input.thread_id):
        mismatch = f"String should match pattern '{ID_PATTERN}'"
        raise RequestValidationError(
            [{"type": "string_pattern_mismatch", "loc": ("body", "threadId"), "msg": mismatch}]
        )
    return run_input
