"""`sayso worker`: work on the runs of a Temporal-backed config (docs/guides/temporal.md)."""

from __future__ import annotations

import typer
from rich.markup import escape

from ..exceptions import ConfigError
from ._app import ConfigArg, app, console, errors
from ._command import Command
from ._exits import CANNOT_SERVE, WRONG


@app.command(cls=Command)
def worker(config: ConfigArg) -> None:
    """Work on the runs of a config with engine: temporal: their segments, decisions and timers."""
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
        anyio.run(lambda: run_worker(loaded, ready=ready))
    except KeyboardInterrupt:
        return
    except ConfigError as exc:  # what needs the agents' code: found when the worker builds them
        errors.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(WRONG) from None
    except RuntimeError as exc:  # the cluster cannot be reached
        errors.print(f"[red]error:[/red] cannot reach Temporal: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(CANNOT_SERVE) from None
