"""How a command that holds a server's live form waits for its answer: `sayso run` and `sayso chat`.

See docs/guides/mcp.md#which-answers-survive-a-restart.

A form an MCP server pushed on a live call of a tool that may not be called again can be handed
back only by the process holding the call. So the command that ran into it does not exit: it prints
the form and the exact `sayso decide` commands, and waits (`Sayso.hold`) while the person answers
from any process; the run carries on here. Ctrl-C closes the form as cancelled (the server hears
cancel) and says so.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
from rich.console import Console

from .._core.decisions import Cancel
from .._core.requests import ElicitationRequest, Request
from ..exceptions import DecisionRefused

if TYPE_CHECKING:
    from .._runtime import RunResult, Sayso


async def run_holding(
    runtime: Sayso,
    message: str,
    *,
    agent: str | None,
    thread_id: str | None,
    principal: str,
    config: str,
    to: tuple[Console | None, Console],
) -> RunResult:
    """`sayso run`: the run, then (while it waits on forms this process holds) the wait for their answers.

    `to` is (where results are shown, or `None` with `--json`; where the wait is said): with `--json`
    the one JSON object on stdout is the end, and the wait is said on stderr.
    """
    from ._render import print_result

    shown, said = to
    if shown is None:
        result = await runtime.run(message, agent=agent, thread_id=thread_id, principal=principal)
    else:
        with shown.status("working…"):
            result = await runtime.run(message, agent=agent, thread_id=thread_id, principal=principal)
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


def held_forms(result: RunResult) -> list[Request]:
    """The open requests of a paused run that only this process can deliver (a live form of an unsafe tool)."""
    if result.status != "paused":
        return []
    return [r for r in result.requests if isinstance(r, ElicitationRequest) and r.needs_holder]


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
            return await _cancel(runtime, result, held, console=console, principal=principal)
        if {r.request_id for r in result.requests} == asked and result.status == "paused":
            return result  # nothing held here any more (another process took it over): say where it stands
    return result


async def _hold(runtime: Sayso, result: RunResult, principal: str) -> tuple[bool, RunResult]:
    """`Sayso.hold`, unless Ctrl-C comes first: (whether it came, where the run stands)."""
    interrupted = False
    outcome = result
    async with anyio.create_task_group() as group:

        async def on_interrupt() -> None:
            nonlocal interrupted
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    interrupted = True
                    group.cancel_scope.cancel()
                    return

        group.start_soon(on_interrupt)
        outcome = await runtime.hold(result.run_id, principal=principal)
        group.cancel_scope.cancel()
    return interrupted, outcome


async def _cancel(
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
