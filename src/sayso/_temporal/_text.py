"""A top-level run's text on Temporal: streamed on a worker as the model writes it, heard by the front that asked.

In one process a caller's sink (`CallOptions.on_text`) hears the text as pydantic-ai streams it
(`_step.text_handler`). On Temporal the model request is an activity on some worker while the
caller waits in a front, so the sink stays in the front and the text is carried over Temporal
alone. A front with a sink names its call's text by a token (`text` in the call's options, sent
with its Update); a worker's runtime keeps the token as the segment's sink (`TextTo`) for a
top-level run only, as in one process (a delegate's text reaches its coordinator, not the
person), and the segment's loop then streams its model requests (`LoopInput.text`, `streaming`).
Inside each model-request activity `send_text` batches the text (`BATCH_SECONDS`) and signals each
batch to the workflow the loop runs in; the workflow keeps it under the token (`Texts`) until the
front read it; the front, while its Update waits, long-polls the `read_text` Update (`listen`) and
hands each piece to its sink in order, before its call returns. A run's workflow ends only once
its fronts read their text to the end (or a grace period passed): a front between two reads
when the run finished would otherwise lose the last pieces. A call without a sink streams
nothing and adds nothing to the run's history. A read that fails while the cluster is briefly out
of reach is asked again from where the front is; each read's Update id names its position, so a
read whose answer was lost gets the same answer again (`listen`).

A model request retried (its worker died mid-reply) writes its reply again: each batch carries
where it starts in its reply, and the workflow keeps only what goes past what earlier attempts
sent, so the sink never hears a piece twice. A segment redone on another worker (its worker
stopped or died) asks for the same loop (`_loop`: one Update id per segment), whose model request
goes on under the same activity id, so it is the same reply here too. A model that writes a different reply the second
time leaves the sink with the first attempt's beginning and the retry's remainder; the run's
result and transcript hold the retry's reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import AgentStreamEvent
from temporalio import activity, workflow
from temporalio.client import WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from .._runtime._runner import TextSink
from .._runtime._step import text_handler
from ._asking import asked_again

TEXT_SIGNAL = "text"
"""The signal a model-request activity sends a batch of text with, to the workflow its loop runs in."""

READ_UPDATE = "read_text"
"""The Update a front long-polls for the text of its call."""

BATCH_SECONDS = 0.08
"""How long a model-request activity gathers text before it signals it: a signal per batch, never per token."""

READ_PATIENCE = 30.0
"""How long (seconds) a front goes on asking for its call's text while every read fails for a reason that passes:
as long as an ended run's workflow waits for it (`_workflow.TEXT_READ_GRACE`)."""

_STREAMING: ContextVar[bool] = ContextVar("sayso_text_streaming", default=False)


@dataclass(frozen=True)
class TextTo:
    """(A worker's runtime) the sink of a call whose front listens: its token, carried into the segment's loop.

    Calling it does nothing: the text is sent from the model-request activities (`send_text`). An
    agent whose loop runs inside its segment's activity (one that binds MCP servers) streams no
    text on Temporal; its front gets the text with the segment's result.
    """

    token: str

    async def __call__(self, piece: str) -> None:
        return None


@dataclass
class TextBatch:
    """Text a model request wrote: which reply (its activity id, the same on every attempt), from where in it."""

    reply: str
    at: int
    """How many characters of the reply this attempt signalled before this batch."""
    pieces: list[str]


@dataclass
class TextAsk:
    """A front's read of its call's text: the pieces after the first `since`."""

    token: str
    since: int


@dataclass
class TextRead:
    """The pieces a front had not read yet, where the next read starts, and whether its call ended."""

    pieces: list[str]
    next: int
    ended: bool


def streaming() -> bool:
    """(Workflow code) whether the loop running now streams its model requests for a front."""
    return _STREAMING.get()


@dataclass
class _Kept:
    base: int = 0
    """How many pieces the front has read (and the workflow has let go of)."""
    pieces: list[str] = field(default_factory=list[str])
    ended: bool = False


class Texts:
    """(Workflow code) the text of each call a front listens to, under its token, until the front has read it."""

    def __init__(self) -> None:
        self._kept: dict[str, _Kept] = {}
        self._writing: str | None = None
        self._taken: dict[str, int] = {}  # per reply of the loop running now: how much of it is kept

    def open(self, token: str | None) -> None:
        """A call whose front listens began (before the Update is accepted, so the front's reads find it)."""
        if token is not None:
            self._kept.setdefault(token, _Kept())

    def end(self, token: str | None) -> None:
        """The call ended: the front's next read returns what is left and lets go of it."""
        if token is not None and token in self._kept:
            self._kept[token].ended = True

    @contextlib.contextmanager
    def writing(self, token: str | None) -> Iterator[None]:
        """While one segment's loop runs here: its batches are kept under `token`, if a front still listens to it.

        The loop streams only then; what decides it is this workflow's history, so a replay decides alike.
        """
        self._writing = token if token in self._kept else None
        self._taken = {}
        streamed = _STREAMING.set(self._writing is not None)
        try:
            yield
        finally:
            _STREAMING.reset(streamed)
            self._writing, self._taken = None, {}

    def take(self, batch: TextBatch) -> None:
        """Keep a batch of the running loop's text: only what goes past what this reply's earlier attempts sent."""
        if self._writing is None:
            return  # no front listens, or the loop has ended (a late batch of a cut-off attempt)
        kept = self._kept[self._writing]
        taken, at = self._taken.get(batch.reply, 0), batch.at
        for piece in batch.pieces:
            end = at + len(piece)
            if end > taken:
                kept.pieces.append(piece[max(0, taken - at) :])
                taken = end
            at = end
        self._taken[batch.reply] = taken

    def all_read(self) -> bool:
        """Whether every front that listened read its call's text to the end (the workflow may end: none is lost)."""
        return not self._kept

    def check(self, asked: TextAsk) -> None:
        """(The read's validator) a token this workflow keeps no text under is refused: that call ended and was read."""
        if asked.token not in self._kept:
            raise ApplicationError(f"no text is kept under {asked.token!r}", non_retryable=True)

    async def read(self, asked: TextAsk) -> TextRead:
        """The pieces after `since`, once there are some or the call ended; those before it are let go of."""
        kept = self._kept[asked.token]
        del kept.pieces[: max(0, asked.since - kept.base)]
        kept.base = max(kept.base, asked.since)
        await workflow.wait_condition(lambda: kept.ended or bool(kept.pieces))
        read = TextRead(pieces=list(kept.pieces), next=kept.base + len(kept.pieces), ended=kept.ended)
        if kept.ended:
            self._kept.pop(asked.token, None)
        return read


async def send_text(ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
    """(In a model-request activity) signal the text the model writes, in batches, to the workflow of its loop."""
    if not activity.in_activity():
        async for _ in events:
            pass
        return
    info = activity.info()
    handle = activity.client().get_workflow_handle(info.workflow_id or "", run_id=info.workflow_run_id)
    batches = _Batches(handle, info.activity_id)
    flusher = asyncio.create_task(batches.flushing())
    try:
        await text_handler(batches.add)(ctx, events)
    finally:
        batches.stop.set()
        await flusher


class _Batches:
    """One reply's text on its way to the workflow: gathered, and signalled every `BATCH_SECONDS`."""

    def __init__(self, handle: WorkflowHandle[Any, Any], reply: str) -> None:
        self._handle = handle
        self._reply = reply
        self._pieces: list[str] = []
        self._at = 0
        self.stop = asyncio.Event()

    async def add(self, piece: str) -> None:
        self._pieces.append(piece)

    async def flushing(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), BATCH_SECONDS)
            ended = self.stop.is_set()
            await self._flush()
            if ended:
                # The reply had ended before this batch was taken, so it held the last pieces. Checked before the
                # signal, not after: pieces written while a batch was on its way go in the next one.
                return

    async def _flush(self) -> None:
        if not self._pieces:
            return
        pieces = list(self._pieces)
        batch = TextBatch(reply=self._reply, at=self._at, pieces=pieces)
        try:
            # Sent again while the cluster is briefly out of reach: the workflow keeps a batch's text once (`at`).
            await asked_again(functools.partial(self._handle.signal, TEXT_SIGNAL, batch), patience=READ_PATIENCE)
        except RPCError:
            return  # its workflow is gone (or out of reach for good): the reply itself is the activity's result
        del self._pieces[: len(pieces)]
        self._at += sum(len(p) for p in pieces)


async def listen(handle: WorkflowHandle[Any, Any], token: str, sink: TextSink) -> None:
    """(A front) hand the text of its call to `sink`, piece by piece in order, until the call ended.

    The text is a courtesy of the call, never its outcome: a read that cannot succeed (the
    workflow ended or is not found, the read refused as its text was read to the end) or a sink
    that raises stops the listening, and the call's result still holds the whole text. A read
    that fails for a while (the cluster restarting or out of reach, `_asking.transient`) is asked
    again from where the sink is, with a growing pause (`asked_again`), until its reads failed for
    `READ_PATIENCE` on end. Each read has an Update id of its own position, so a read asked again
    whose answer was lost (even the one that ended the call, after which the workflow lets go of
    the text) gets that same answer: no piece is lost or heard twice.
    """
    since = 0
    while True:
        asked, at = TextAsk(token=token, since=since), f"{token}-{since}"
        reading = functools.partial(handle.execute_update, READ_UPDATE, asked, id=at, result_type=TextRead)
        try:
            read: TextRead = await asked_again(reading, patience=READ_PATIENCE)
        except Exception:  # see above: the call's outcome is its Update's, not its text's
            return
        since = read.next
        try:
            for piece in read.pieces:
                await sink(piece)
        except Exception:
            return
        if read.ended:
            return


@contextlib.asynccontextmanager
async def listening(handle: WorkflowHandle[Any, Any], token: str | None, sink: TextSink | None) -> AsyncIterator[None]:
    """Listen to a call's text while the body waits for the call, and to its end after (nothing without a sink)."""
    if token is None or sink is None:
        yield
        return
    task = asyncio.create_task(listen(handle, token, sink))
    try:
        yield
    except BaseException:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise
    await task
