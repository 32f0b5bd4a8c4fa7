"""Ctrl-C while an agent works (`run`, `decide`, `resume`, `expire`, `recover`): the work stops, one line says where.

asyncio's own Ctrl-C cancels the command's task outright: a sync tool's thread ran on and its result was
thrown away (carried on later, the call read "outcome unknown" although it had finished), and the
command ended with exit 130 and not a word, its run left `running` and its thread refusing messages.
Here Ctrl-C cancels the work's scope instead, which waits for what cannot be cancelled (a sync tool in
its thread) and so lets the runtime record that call's result in the ledger as the segment is left;
then the command names the run and the thread, where they stand, and how to carry on (`sayso recover`).
A command that works on several runs in turn (`expire`, `recover`) names the one it was on, and the
ones it had worked on before it (what they came to is not printed, as the command did not finish).
A message to a thread whose run was left so is refused (`ThreadBusy`) with the same way out.
"""

from __future__ import annotations

import asyncio
import math
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, TypeVar

import anyio

from ..exceptions import ThreadBusy
from ._exits import INTERRUPTED
from ._open import fail
from ._pasted import config_word, sayso_command

if TYPE_CHECKING:
    from .._core.decisions import Decision
    from .._core.requests import Request
    from .._runtime import DecideResult, RunRecord, Sayso

T = TypeVar("T")


@contextmanager
def on_ctrl_c(act: Callable[[], None]) -> Iterator[None]:
    """While inside, Ctrl-C calls `act` in the event loop instead of cancelling the command's task outright.

    Nested ones take it in turn, the innermost acting; each gives back the handler it found (anyio's
    signal receivers gave back none, leaving a second Ctrl-C to raise wherever the loop stood).
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # a command run off the main thread (by a host, in a test) hears no signal to begin with
        return
    loop = asyncio.get_running_loop()

    def heard(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(act)

    previous = signal.signal(signal.SIGINT, heard)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass
class Where:
    """The run and the thread the work is on, once it has them (a message taken, a request read)."""

    noted: tuple[str, str] | None = None
    before: list[str] = field(default_factory=list)
    """The runs it was on before, each noted in turn (`expire`, `recover`): what they came to is not printed."""

    def note(self, run_id: str, thread_id: str) -> None:
        if self.noted is not None and self.noted[0] != run_id and self.noted[0] not in self.before:
            self.before.append(self.noted[0])
        self.noted = (run_id, thread_id)


def deciding(
    runtime: Sayso, request: Request, decision: Decision, principal: str
) -> Callable[[Where], Awaitable[DecideResult]]:
    """A decision's work (`sayso decide`, `chat`), noting the request's run and the chat's thread as it starts."""

    def work(where: Where) -> Awaitable[DecideResult]:
        where.note(request.run_id, request.chat_thread_id or request.thread_id)
        return runtime.decide(request.request_id, decision, principal=principal, via="cli")

    return work


async def interruptible(runtime: Sayso, work: Callable[[Where], Awaitable[T]], *, config: str, as_json: bool) -> T:
    """`work`, unless Ctrl-C stops it: then where its run was left is said, and the command exits 130.

    `work` notes the run and thread it is on (`Where.note`) as soon as it knows them.
    """
    where = Where()
    with anyio.CancelScope() as scope, on_ctrl_c(scope.cancel):
        return await busy_explained(runtime, work(where), config)
    fail("Interrupted", await _left(runtime, where, config), code=INTERRUPTED, as_json=as_json)


async def busy_explained(runtime: Sayso, work: Awaitable[T], config: str) -> T:
    """`work`; a message its thread refuses while a run is in progress says how that run is carried on.

    Such a run may be working in another process, or left running by one that stopped (Ctrl-C, a crash):
    then nothing but `recover` frees the thread, which the refusal alone did not say.
    """
    try:
        return await work
    except ThreadBusy as busy:
        record = await runtime.run_record(busy.run_id)
        if record.status != "running":
            raise
        how = recover_hint(record, config, when="on its host now")
        problem = f"{busy.problem}; if the process working on it stopped (Ctrl-C, a crash), {how}"
        raise ThreadBusy(busy.run_id, problem) from None


def recover_hint(record: RunRecord, config: str, *, when: str) -> str:
    """How a running run whose process stopped is carried on: `sayso recover`, now or once its lease lapses.

    `recover` takes a run over at once from the host its process ran on (it sees the process gone),
    and from any other once the lease that process kept renewing lapses.
    """
    command = f"`{sayso_command()} recover {config_word(config)}` carries it on"
    left = (record.lease_expires_at or 0.0) - time.time()
    if left <= 0:
        return f"{command} now (its lease has lapsed)"
    return f"{command} ({when}; from another host once its lease lapses, in {math.ceil(left)} s)"


async def _left(runtime: Sayso, where: Where, config: str) -> str:
    """One line: the run and thread the interrupted work was on, where they stand, and how to carry on."""
    if where.noted is None:
        return "interrupted before anything was recorded; nothing changed"
    said = await _standing(runtime, *where.noted, config)
    if not where.before:
        return said
    return f"{said}; before it, this command worked on {len(where.before)} other run(s): {', '.join(where.before)}"


async def _standing(runtime: Sayso, noted_run: str, thread_id: str, config: str) -> str:
    """Where the run and thread the work was last on stand, and how to carry them on."""
    # A decision on a delegate's request notes the delegate's run and the chat's thread: the chat's run is the one
    # carried on, and the one a new message on the thread waits for.
    run_id = (await runtime.thread(thread_id)).active_run_id or noted_run
    record = await runtime.run_record(run_id)
    said = f"interrupted: run {run_id} on thread {thread_id}"
    if record.status == "running":
        how = recover_hint(record, config, when="from this host now that this command has stopped")
        return (
            f"{said} was stopped mid-step and is still running (a call that finished is kept; one cut off will "
            f"read as outcome unknown); its thread takes no new message until {how}"
        )
    if record.status == "paused":
        return f"{said} is paused, nothing lost; `{sayso_command()} inbox {config_word(config)}` lists what it waits on"
    return f"{said} had already ended ({record.status})"
