"""A top-level run's text reaches the front as the model writes it on a worker (issue 26: every interface unchanged).

The worker runs in this process (`run_worker`), so its model can be a pydantic-ai `FunctionModel`
that writes its first word, then waits until the front heard it before it writes the rest: a
front that did not hear the text while its call waited would leave the model waiting, and get
the text in one piece at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    StartWorkflowUpdateInput,
    WorkflowHandle,
    WorkflowUpdateHandle,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError, RPCStatusCode

from sayso import Approve, Sayso
from sayso._config.file import Config, load_config
from sayso._temporal import run_worker

from ..conftest import LiveServer
from ..protocols.a2a_helpers import HEADERS, user_message
from ..protocols.conftest import protocol_app
from .conftest import Project, workflows_on

BODY = """
agents:
  files:
    tools: [text_tools:remove]
    interrupt: {tools: [remove]}
    delegates: [{agent: helper, description: Writes notes}]
  helper:
    internal: true
"""

TOOLS = '''
async def remove(name: str) -> str:
    """Remove a file."""
    return f"removed {name}"
'''

GREETING = "Hello there, this text is written on a worker a word at a time."
REMOVED = "Removed a.txt, as you approved it a moment ago."
NOTE = "The helper's own note, for the coordinator only."
REPORTED = "My helper wrote its note, and this is my report of it."


@dataclass
class Writer:
    """A model that streams its reply a word at a time, and waits after the first word until the front heard it."""

    heard: asyncio.Event = field(default_factory=asyncio.Event)
    words_before_waiting: int = 1
    """How many words the model writes before it waits to be heard."""
    unheard: bool = False
    """Whether the model gave up waiting to be heard (the text reached nobody while the run worked)."""
    word_seconds: float = 0.0
    """How long the model takes for each word after the first ones."""
    go_on: asyncio.Event | None = None
    """If set: after the first word is heard, the model also waits for it before it writes on."""
    cut_once: bool = False
    """Whether the next streamed reply breaks off after three words (its request then retried by Temporal)."""

    def model(self) -> FunctionModel:
        return FunctionModel(self._respond, stream_function=self._stream)

    def _said(self, messages: list[ModelMessage]) -> str | ToolCallPart:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returned = [p.tool_name for p in last.parts if isinstance(p, ToolReturnPart)]
        if returned:
            return REPORTED if returned == ["helper"] else REMOVED
        said = " ".join(str(p.content) for p in last.parts if isinstance(p, UserPromptPart))
        if "remove" in said:
            return ToolCallPart("remove", {"name": "a.txt"})
        if "helper" in said:
            return ToolCallPart("helper", {"task": "write a note"})
        return GREETING

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        said = self._said(messages)
        return ModelResponse(parts=[TextPart(said) if isinstance(said, str) else said])

    async def _stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        said = self._said(messages)
        if isinstance(said, ToolCallPart):
            yield {0: DeltaToolCall(name=said.tool_name, json_args=said.args_as_json_str())}
            return
        words = re.findall(r"\s*\S+", said)
        first, rest = words[: self.words_before_waiting], words[self.words_before_waiting :]
        for word in first:
            yield word
        try:
            await asyncio.wait_for(self.heard.wait(), 30)
        except TimeoutError:
            self.unheard = True  # never heard: the test fails on the pieces it got, or on this
        if self.go_on is not None:
            await self.go_on.wait()
        for index, word in enumerate(rest):
            if index == 2 and self.cut_once:
                self.cut_once = False
                raise RuntimeError("the connection to the model dropped")
            await asyncio.sleep(self.word_seconds)
            yield word


@dataclass
class Heard:
    """A front's text sink: the pieces in order; the first one lets the model write on."""

    writer: Writer
    pieces: list[str] = field(default_factory=list[str])

    async def __call__(self, piece: str) -> None:
        self.pieces.append(piece)
        self.writer.heard.set()


@dataclass
class SlowHeard(Heard):
    """A front still busy with the first piece when the run ends on the worker (the model writes on meanwhile)."""

    async def __call__(self, piece: str) -> None:
        await super().__call__(piece)
        if len(self.pieces) == 1:
            await asyncio.sleep(2)


@dataclass
class Setup:
    config: Config
    writer: Writer


async def start_worker(config: Config, stop: anyio.Event | None = None) -> asyncio.Task[None]:
    """A worker for `config` in this process, once it polls."""
    started = asyncio.Event()

    async def ready(_: str) -> None:
        started.set()

    worker = asyncio.create_task(run_worker(config, ready=ready, stop=stop))
    waiting = asyncio.create_task(started.wait())
    await asyncio.wait([worker, waiting], timeout=60, return_when=asyncio.FIRST_COMPLETED)
    assert started.is_set(), worker.exception() if worker.done() else "the worker did not start"
    return worker


@pytest.fixture
def writing(tmp_path: Path, temporal: Project) -> Setup:
    """The config with its agent on the `Writer` model (no worker yet)."""
    config = load_config(temporal.config(tmp_path, BODY, {"text_tools.py": TOOLS}))
    writer = Writer()
    config.agents["files"].model = writer.model()
    config.agents["helper"].model = FunctionModel(lambda _m, _i: ModelResponse(parts=[TextPart(NOTE)]))
    return Setup(config, writer)


@pytest.fixture
async def setup(writing: Setup) -> AsyncIterator[Setup]:
    """The config with its agent on the `Writer` model, and a worker for it in this process."""
    config, writer = writing.config, writing.writer
    worker = await start_worker(config)
    try:
        yield Setup(config, writer)
    finally:
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker


async def activity_types(address: str, workflow_id: str) -> list[str]:
    handle = (await Client.connect(address)).get_workflow_handle(workflow_id)
    history = await handle.fetch_history()
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]


async def signals(address: str, workflow_id: str) -> list[str]:
    handle = (await Client.connect(address)).get_workflow_handle(workflow_id)
    history = await handle.fetch_history()
    return [
        e.workflow_execution_signaled_event_attributes.signal_name
        for e in history.events
        if e.HasField("workflow_execution_signaled_event_attributes")
    ]


async def greeted(setup: Setup, heard: Heard) -> str:
    """Say hello on a front whose sink is `heard`: the run's id, once its output and the pieces heard are whole."""
    async with Sayso(setup.config) as front:
        done = await front.run("hello", on_text=heard)
    assert (done.status, done.output) == ("completed", GREETING)
    assert len(heard.pieces) > 1 and not setup.writer.unheard
    assert "".join(heard.pieces) == GREETING
    return done.run_id


async def test_a_run_hears_its_text_in_pieces_while_the_worker_writes_it(setup: Setup, temporal: Project) -> None:
    """`Sayso.run(on_text=...)` on a Temporal front: the text in several pieces, in order, the output whole."""
    heard = Heard(setup.writer)
    run_id = await greeted(setup, heard)
    # The model request streamed, and its text crossed in batches (signals to the run's workflow).
    workflow = f"sayso-files-{run_id}"
    assert any(t.endswith("model_request_stream") for t in await activity_types(temporal.address, workflow))
    assert 0 < (await signals(temporal.address, workflow)).count("text") <= len(heard.pieces)


async def test_a_front_busy_when_the_run_ends_still_hears_the_rest_of_the_text(setup: Setup) -> None:
    """The run ends while its front is between two reads: its workflow waits for the read, no piece is lost."""
    await greeted(setup, SlowHeard(setup.writer))


async def test_text_written_while_a_batch_is_on_its_way_is_sent_once_the_reply_ends(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch's signal takes a while, and the model ends its reply while one is on its way: the words it wrote
    meanwhile still reach the front, after it."""
    signal = WorkflowHandle.signal

    async def slow_signal(handle: WorkflowHandle[Any, Any], name: Any, *args: Any, **kwargs: Any) -> None:
        if name == "text":
            await asyncio.sleep(0.4)
        await signal(handle, name, *args, **kwargs)

    monkeypatch.setattr(WorkflowHandle, "signal", slow_signal)
    setup.writer.word_seconds = 0.02  # the rest of the reply, all of it written during the next batch's signal
    await greeted(setup, Heard(setup.writer))


async def test_a_model_request_retried_mid_reply_streams_no_piece_twice(setup: Setup) -> None:
    """The model's reply breaks off after three words and Temporal asks again: the front hears the text once."""
    setup.writer.cut_once = True
    heard = Heard(setup.writer)
    async with Sayso(setup.config) as front:
        done = await front.run("hello", on_text=heard)
    assert not setup.writer.cut_once  # the first attempt did break off
    assert (done.status, done.output) == ("completed", GREETING)
    assert "".join(heard.pieces) == GREETING


async def test_a_segment_carried_on_by_another_worker_mid_reply_streams_the_text_once(writing: Setup) -> None:
    """The worker stops while the model is mid-reply (its first word heard) and another worker carries the run on:
    the front hears the reply once, whole, from where it was: the same loop goes on, not a second one."""
    writer = writing.writer
    writer.go_on = asyncio.Event()
    stop = anyio.Event()
    first = await start_worker(writing.config, stop)
    heard = Heard(writer)
    second: list[asyncio.Task[None]] = []

    async def hand_over() -> None:
        await writer.heard.wait()
        stop.set()
        await first  # the segment handed back, the model request cut off after its grace
        second.append(await start_worker(writing.config))
        assert writer.go_on is not None
        writer.go_on.set()

    try:
        async with Sayso(writing.config) as front, anyio.create_task_group() as tasks:
            tasks.start_soon(hand_over)
            done = await front.run("hello", on_text=heard)
        assert (done.status, done.output) == ("completed", GREETING)
        assert heard.pieces[0] == "Hello" and len(heard.pieces) > 1
        assert "".join(heard.pieces) == GREETING
    finally:
        for worker in second:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker


@dataclass
class Unreachable(Interceptor):
    """A front's client whose reads of the text fail as they do while the cluster restarts or is out of reach.

    The first read after the first piece never reaches the cluster (the client gave up on it:
    UNAVAILABLE); the answer to the read that ends the call is lost on its way back (the call ran
    out of time), after the workflow let go of the text it handed out.
    """

    unsent: int = 0
    lost: int = 0

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _FailingReads(next, self)


class _FailingReads(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, faults: Unreachable) -> None:
        super().__init__(next)
        self._faults = faults

    async def start_workflow_update(self, input: StartWorkflowUpdateInput) -> WorkflowUpdateHandle[Any]:
        if input.update != "read_text":
            return await super().start_workflow_update(input)
        [asked] = input.args
        if getattr(asked, "since", 0) > 0 and not self._faults.unsent:
            self._faults.unsent += 1
            raise RPCError("connection refused: the cluster is restarting", RPCStatusCode.UNAVAILABLE, b"")
        sent = await super().start_workflow_update(input)
        if getattr(await sent.result(), "ended", False) and not self._faults.lost:
            self._faults.lost += 1
            raise WorkflowUpdateRPCTimeoutOrCancelledError()
        return sent


async def test_a_front_whose_reads_fail_for_a_while_hears_the_whole_text_once(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads of the text that fail while the cluster is out of reach are asked again from where the front is: the
    sink hears every piece once, in order, even the last ones whose first answer was lost."""
    faults = Unreachable()
    connect = Client.connect

    async def connecting(*args: Any, **kwargs: Any) -> Client:
        return await connect(*args, **kwargs, interceptors=[faults])

    monkeypatch.setattr(Client, "connect", connecting)
    await greeted(setup, Heard(setup.writer))
    assert (faults.unsent, faults.lost) == (1, 1)


async def test_a_run_nobody_listens_to_is_not_streamed(setup: Setup, temporal: Project) -> None:
    """Without a sink the model is asked as before: no streamed request, no text signal in the run's history."""
    setup.writer.heard.set()
    async with Sayso(setup.config) as front:
        done = await front.run("hello")
    assert (done.status, done.output) == ("completed", GREETING)
    workflow = f"sayso-files-{done.run_id}"
    kinds = await activity_types(temporal.address, workflow)
    assert any(t.endswith("model_request") for t in kinds)
    assert not any("stream" in t for t in kinds)
    assert "text" not in await signals(temporal.address, workflow)


async def test_a_decision_hears_the_resumed_runs_text_in_pieces(setup: Setup) -> None:
    """`Sayso.decide(on_text=...)`: the run resumed on a worker streams its text to the deciding front."""
    async with Sayso(setup.config) as front:
        asked = Heard(setup.writer)
        paused = await front.run("remove a.txt", on_text=asked)
        assert paused.status == "paused" and asked.pieces == []
        [request] = paused.requests
        heard = Heard(setup.writer)
        done = await front.decide(request.request_id, Approve(), on_text=heard)
    assert (done.run.status, done.run.output) == ("completed", REMOVED)
    assert len(heard.pieces) > 1
    assert "".join(heard.pieces) == REMOVED


async def test_answering_a_pause_hears_the_resumed_runs_text_in_pieces(setup: Setup) -> None:
    """`Sayso.answer_pause(on_text=...)` (A2A's and AG-UI's replies): the resumed run's text reaches the front."""
    async with Sayso(setup.config) as front:
        paused = await front.run("remove a.txt")
        [request] = paused.requests
        heard = Heard(setup.writer)
        done = await front.answer_pause(paused.run_id, {request.request_id: Approve()}, on_text=heard)
    assert (done.status, done.output) == ("completed", REMOVED)
    assert len(heard.pieces) > 1
    assert "".join(heard.pieces) == REMOVED


async def test_a_delegates_text_stays_with_its_coordinator(setup: Setup, temporal: Project) -> None:
    """Only the top-level run's text reaches the front, as in one process: the delegate's child workflow streams
    nothing."""
    heard = Heard(setup.writer)
    async with Sayso(setup.config) as front:
        done = await front.run("ask the helper", on_text=heard)
    assert (done.status, done.output) == ("completed", REPORTED)
    assert len(heard.pieces) > 1 and "".join(heard.pieces) == REPORTED
    [below] = [w for w in await workflows_on(temporal.address, temporal.task_queue) if w.startswith("sayso-helper-")]
    assert not any("stream" in t for t in await activity_types(temporal.address, below))
    assert "text" not in await signals(temporal.address, below)


async def sse(client: Any, path: str, body: dict[str, Any], *, seen: Callable[[dict[str, Any]], None]) -> list[Any]:
    """Every event of an SSE response, each handed to `seen` as it comes."""
    events: list[Any] = []
    async with client.stream("POST", path, json=body, headers=HEADERS) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
                seen(events[-1])
    return events


async def test_an_a2a_stream_sends_the_text_in_chunks_as_the_worker_writes_it(setup: Setup) -> None:
    """SendStreamingMessage on a Temporal front: the answer's artifact is appended to in several chunks, in order,
    while the run works, and adds up to the final message."""
    # The handler holds one chunk back (to mark the last one), so the client hears the first word once the second
    # reached the front: the model writes two before it waits.
    setup.writer.words_before_waiting = 2
    async with Sayso(setup.config) as front:
        # On a real socket: an in-process ASGI transport hands the client the response only once it is whole.
        served = await asyncio.to_thread(LiveServer.in_thread, protocol_app(front))
        try:
            message = user_message("hello")
            body = {"jsonrpc": "2.0", "id": "s1", "method": "SendStreamingMessage", "params": {"message": message}}

            def seen(event: dict[str, Any]) -> None:
                if "artifactUpdate" in event.get("result", {}):
                    setup.writer.heard.set()  # the first chunk reached the client: the model writes on

            async with httpx.AsyncClient(base_url=served.base_url, timeout=60) as client:
                events = await sse(client, "/a2a/files", body, seen=seen)
        finally:
            await asyncio.to_thread(served.stop)
    results = [e["result"] for e in events]
    chunks = [r["artifactUpdate"] for r in results if "artifactUpdate" in r]
    assert len(chunks) > 1 and not setup.writer.unheard
    # Each chunk appends to the answer: one that replaces it whole says the front missed text as it streamed.
    assert [bool(c.get("append")) for c in chunks] == [False] + [True] * (len(chunks) - 1)
    text = "".join(c["artifact"]["parts"][0]["text"] for c in chunks)
    final = results[-1]["statusUpdate"]["status"]
    assert final["state"] == "TASK_STATE_COMPLETED"
    assert text == final["message"]["parts"][0]["text"] == GREETING
