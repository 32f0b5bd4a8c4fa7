"""How a command opens the runtime it needs, runs its work, and says sayso's errors as a message and an exit code.

Commands that run or decide open `Sayso` (every agent built); commands that only read the store open a
`Reader` (no agent, model or toolset; see `sayso._runtime._reader`), and `inbox` an `Inbox` (the store's
inbox alone; `sayso._runtime._inbox`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from ..exceptions import SaysoError
from ._exits import exit_code
from ._logs import log_to_terminal
from ._startup import collector_paused

if TYPE_CHECKING:
    from .._runtime import Inbox, Reader, Sayso

T = TypeVar("T")
Opened = TypeVar("Opened", bound="AbstractAsyncContextManager[Any]")

errors = Console(stderr=True)


def with_app(config: str, work: Callable[[Sayso], Awaitable[T]], *, as_json: bool = False) -> T:
    """Open the runtime, do the work, and turn sayso's errors into a message and an exit code."""
    with collector_paused():
        from .._runtime import Sayso

    return _ran(_opened(Sayso.from_yaml, config, work), as_json=as_json)


def with_reader(config: str, work: Callable[[Reader], Awaitable[T]], *, as_json: bool = False) -> T:
    """`with_app` for commands that only read the store: no agent, model or toolset is built."""
    with collector_paused():
        from .._runtime import Reader

    return _ran(_opened(Reader.from_yaml, config, work), as_json=as_json)


def with_inbox(config: str, work: Callable[[Inbox], Awaitable[T]], *, as_json: bool = False) -> T:
    """`with_reader` for listing open requests: the store's inbox alone, none of its writes or the runtime's kernel."""
    with collector_paused():
        from .._runtime import Inbox

    return _ran(_opened(Inbox.from_yaml, config, work), as_json=as_json)


def _opened(
    load: Callable[[str], Opened], config: str, work: Callable[[Opened], Awaitable[T]]
) -> Callable[[], Awaitable[T]]:
    """Load the config (its objects built with the collector paused), open what it gives, and do the work."""

    async def main() -> T:
        with collector_paused():
            opened = load(config)
        async with opened:
            return await work(opened)

    return main


def _ran(main: Callable[[], Awaitable[T]], *, as_json: bool) -> T:
    import anyio

    log_to_terminal()
    try:
        return anyio.run(main)
    except SaysoError as exc:
        fail(type(exc).__name__, str(exc), code=exit_code(exc), as_json=as_json)


def fail(kind: str, message: str, *, code: int, as_json: bool) -> NoReturn:
    """Stop a command on an error: `{"error": {"type", "message"}}` with `--json`, else `error: …` on stderr."""
    if as_json:
        print(json.dumps({"error": {"type": kind, "message": message}}, ensure_ascii=False))
    else:
        errors.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)
