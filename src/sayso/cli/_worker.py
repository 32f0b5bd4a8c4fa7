"""`sayso worker`: work on the runs of a Temporal-backed config (docs/guides/temporal.md).

SIGTERM (how Kubernetes, systemd and docker stop a process) and Ctrl-C stop the worker gracefully:
it takes no more tasks, lets the activities in flight finish (up to their grace), closes its runtime
and exits 0. A second signal during that wait ends the process at once, as the signal does by default.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from ..exceptions import ConfigError
from ._app import ConfigArg, app, console, errors
from ._command import Command
from ._exits import CANNOT_SERVE, WRONG

if TYPE_CHECKING:
    from anyio import Event


@app.command(cls=Command)
def worker(config: ConfigArg) -> None:
    """Work on the runs of a config with engine: temporal: their segments, decisions and timers.

    SIGTERM or Ctrl-C stops it gracefully (the activities in flight finish first); a second one stops it at once.
    """
    import anyio

    from .._config.file import load_config

    try:
        loaded = load_config(config)
        if loaded.engine.temporal is None:
            raise ConfigError(
                f"{config}: sayso worker needs 'engine: {{temporal: {{address, namespace, task_queue}}}}'"
            )
        from .._temporal import run_worker
    except ConfigError as exc:
        errors.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(WRONG) from None
    except ImportError:
        extra = escape("pip install 'sayso[temporal]'")  # rich would read `[temporal]` as markup
        errors.print(f"[red]error:[/red] sayso worker needs the Temporal extra: {extra}")
        raise typer.Exit(WRONG) from None

    async def ready(note: str) -> None:
        console.print(f"sayso worker: {escape(note)}", soft_wrap=True)

    try:
        anyio.run(until_signalled, lambda stop: run_worker(loaded, ready=ready, stop=stop), ready)
    except ConfigError as exc:  # what needs the agents' code: found when the worker builds them
        errors.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(WRONG) from None
    except RuntimeError as exc:  # the cluster cannot be reached
        errors.print(f"[red]error:[/red] cannot reach Temporal: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(CANNOT_SERVE) from None
    console.print("sayso worker: stopped")


async def until_signalled(work: Callable[[Event], Awaitable[None]], say: Callable[[str], Awaitable[None]]) -> None:
    """`work(stop)`, with `stop` set on the first SIGTERM or SIGINT; a second one ends the process at once."""
    import anyio

    stop = anyio.Event()
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        try:
            async with anyio.create_task_group() as group:

                async def on_signal() -> None:
                    async for signum in signals:
                        if stop.is_set():
                            await say("stopping at once")
                            signal.signal(signum, signal.SIG_DFL)
                            os.kill(os.getpid(), signum)
                        stop.set()
                        await say("stopping: finishing the work in flight (signal again to stop at once)")

                group.start_soon(on_signal)
                await work(stop)
                group.cancel_scope.cancel()
        except BaseExceptionGroup as failed:  # the group wraps what `work` raised, the one thing that can raise here
            raise failed.exceptions[0] from None
