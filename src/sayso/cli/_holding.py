"""How a command that holds a server's live form waits for its answer: `sayso run`, `decide` and `chat`.

See docs/guides/mcp.md#which-answers-survive-a-restart.

A form an MCP server pushed on a live call of a tool that may not be called again can be handed
back only by the process holding the call. So the command that ran into it does not exit: it prints
the form and the exact `sayso decide` commands, and waits (`Sayso.hold`) while the person answers
from any process; the run carries on here. Ctrl-C closes the form as cancelled (the server hears
cancel) and says so.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
from rich.console import Console

from .._core.decisions import Cancel, Decision
from .._core.requests import ElicitationRequest, Request
from .._runtime import RunResult
from ..exceptions import DecisionRefused
from ._interrupts import on_ctrl_c

if TYPE_CHECKING:
    from .._runtime import Sayso


async def run_holding(
    runtime: Sayso,
    message: str,
    *,
    agent: str | None,
    thread_id: str | None,
    principal: str,
    config: str,
    to: tuple[Console | None, Console],
    on_start: Callable[[str, str], None] | None = None,
) -> RunResult:
    """`sayso run`: the run, then (while it waits on forms this process holds) the wait for their answers.

    `to` is (where results are shown, or `None` with `--json`; where the wait is said): with `--json`
    the one JSON object on stdout is the end, and the wait is said on stderr. `on_start` hears the
    new run and its thread once the message is taken (`Sayso.run`).
    """
    shown, _ = to

    async def run() -> RunResult:
        return await runtime.run(
            message, agent=agent, thread_id=thread_id, principal=principal, via="cli", on_start=on_start
        )

    if shown is None:
        result = await run()
    else:
        with shown.status("working…"):
            result = await run()
    return await held_to_the_end(runtime, result, principal=principal, config=config, to=to)


async def held_to_the_end(
    runtime: Sayso, result: RunResult, *, principal: str, config: str, to: tuple[Console | None, Console]
) -> RunResult:
    """`result`, or (while it waits on forms this process holds) where the run stands once they were answered.

    Whatever carried the run on here (a message, a decision that resumed it) may have run into such a
    form: the command that did must not exit and take the call with it. `to` is as for `run_holding`.
    """
    from ._render import print_result

    shown, said = to
    if not held_forms(result):
        return result
    return await hold_until_answered(
        runtime,
        result,
        console=said if shown is None else shown,
        principal=principal,
        config=config,
        on_paused=None if shown is None else lambda paused: print_result(shown, paused, config=config),
    )


def is_held(request: Request) -> bool:
    """Whether only the process holding the live call that asked `request` can deliver its answer."""
    return isinstance(request, ElicitationRequest) and request.needs_holder


def held_forms(result: RunResult) -> list[Request]:
    """The open requests of a paused run that only this process can deliver (a live form of an unsafe tool)."""
    if result.status != "paused":
        return []
    return [r for r in result.requests if is_held(r)]


async def hold_until_answered(
    runtime: Sayso,
    result: RunResult,
    *,
    console: Console,
    principal: str,
    config: str | None,
    on_paused: Callable[[RunResult], None] | None = None,
) -> RunResult:
    """Wait while the run waits on forms this process holds, answered from anywhere; Ctrl-C closes them as cancelled.

    Each time the run waits on such a form, `on_paused` shows it (else the `sayso decide` commands
    are printed on `console`). Returns where the run stands once it no longer waits on one (or
    right after Ctrl-C).
    """
    from ._render import answer_commands

    while held := held_forms(result):
        if on_paused is not None:
            on_paused(result)
        for request in held:
            console.print(
                f"[yellow]waiting[/yellow]: this process holds the call that asked request {request.request_id} "
                "(it cannot be called again), so it waits here for the answer, from any terminal or the web UI; "
                "Ctrl-C closes the form as cancelled",
                soft_wrap=True,
                highlight=False,
            )
            if config is not None and on_paused is None:
                for command in answer_commands(request, config):
                    console.print(f"  {command}", soft_wrap=True, highlight=False, markup=False)
        asked = {r.request_id for r in result.requests}
        interrupted, result = await _hold(runtime, result, principal)
        if interrupted:
            return await cancel_held(runtime, result, held, console=console, principal=principal)
        if {r.request_id for r in result.requests} == asked and result.status == "paused":
            return result  # nothing held here any more (another process took it over): say where it stands
    return result


async def _hold(runtime: Sayso, result: RunResult, principal: str) -> tuple[bool, RunResult]:
    """`Sayso.hold`, unless Ctrl-C comes first: (whether it came, where the run stands)."""
    outcome = result
    with anyio.CancelScope() as scope, on_ctrl_c(scope.cancel):
        outcome = await runtime.hold(result.run_id, principal=principal)
    return scope.cancel_called, outcome


async def cancel_held(
    runtime: Sayso, result: RunResult, held: list[Request], *, console: Console, principal: str
) -> RunResult:
    """Ctrl-C: each held form closes as cancelled (the server hears cancel) and the run carries on."""
    for request in held:
        try:
            outcome = await runtime.decide(request.request_id, Cancel(), principal=principal, via="cli")
        except DecisionRefused as refused:
            console.print(f"request {request.request_id} was not cancelled: {refused.problem}", soft_wrap=True)
            continue
        result = outcome.run
        console.print(
            f"Ctrl-C: closed request {request.request_id} as cancelled; its server was told cancel",
            soft_wrap=True,
            highlight=False,
        )
    return result


class GaveUp(Exception):
    """The prompt was given up: the form was answered in another process, or Ctrl-C closed it."""


class LineReader:
    """Lines typed on stdin, read in a worker thread so that waiting for one can be given up.

    A held form is asked in a worker thread, so the event loop stays free to renew the hold and
    to notice an answer given elsewhere; `give_up` then ends the prompt (within a tenth of a
    second) instead of leaving a thread blocked on stdin that would swallow the next line.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._stop = threading.Event()

    def reset(self) -> None:
        self._stop.clear()

    def give_up(self) -> None:
        self._stop.set()

    def readline(self) -> str:
        """The next line, without its newline.

        Raises:
            EOFError: end of input (Ctrl-D).
            GaveUp: `give_up` was called.
        """
        fd = sys.stdin.fileno()
        while b"\n" not in self._buffer:
            if self._stop.is_set():
                raise GaveUp
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                if self._buffer:
                    break
                raise EOFError
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace").rstrip("\r")


LINES = LineReader()
"""The one reader of a held form's prompts (stdin is one stream)."""


@dataclass(frozen=True)
class Cancelled:
    """Ctrl-C closed a held form as cancelled; where the run stands afterwards."""

    result: RunResult


def say_held(console: Console, request: Request, config: str | None) -> None:
    """Tell the person at a chat's prompt that the form can be answered here or from any other terminal."""
    console.print(
        "[dim]This chat holds the call that asked (it cannot be called again): answer here, or from another "
        "terminal; Ctrl-C closes the form as cancelled.[/dim]"
    )
    if config is not None:
        from ._render import answer_commands

        for command in answer_commands(request, config):
            console.print(f"  {command}", soft_wrap=True, highlight=False, markup=False)


async def ask_held(
    runtime: Sayso,
    console: Console,
    result: RunResult,
    request: Request,
    ask: Callable[[Request], Decision],
    *,
    principal: str,
) -> Decision | RunResult | Cancelled:
    """Ask a form this process holds at the prompt, while it can also be answered elsewhere.

    `ask` prompts the person (run in a worker thread, reading `LINES`). Returns the person's
    decision; or where the run stands when the form was answered in another process (the run
    carried on here); or, on Ctrl-C, the form closed as cancelled (`Cancelled`).
    """
    outcome: list[Decision | RunResult | None] = []
    failure: list[BaseException] = []
    LINES.reset()

    def interrupt() -> None:
        outcome.append(None)
        LINES.give_up()
        scope.cancel()

    with anyio.CancelScope() as scope, on_ctrl_c(interrupt):
        async with anyio.create_task_group() as group:

            async def prompt() -> None:
                try:
                    outcome.append(await anyio.to_thread.run_sync(ask, request))
                except GaveUp:
                    return
                except Exception as exc:  # the person's way out (a new message, end of input): raised below
                    failure.append(exc)
                group.cancel_scope.cancel()

            async def elsewhere() -> None:
                moved = await runtime.hold(result.run_id, principal=principal)
                outcome.append(moved)
                LINES.give_up()
                group.cancel_scope.cancel()  # the prompt's thread ends first: it was told to give up

            group.start_soon(prompt)
            group.start_soon(elsewhere)
    if failure:
        raise failure[0]
    asked = outcome[0]
    if asked is None:
        console.print()
        return Cancelled(await cancel_held(runtime, result, [request], console=console, principal=principal))
    if isinstance(asked, RunResult):
        console.print(f"request {request.request_id} was answered elsewhere", highlight=False)
    return asked
