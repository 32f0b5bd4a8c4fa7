"""How a command opens the runtime it needs, runs its work, and says sayso's errors as a message and an exit code.

Commands that run or decide open `Sayso` (every agent built); commands that only read the store open a
`Reader` (no agent, model or toolset; see `sayso._runtime._reader`), and `inbox` an `Inbox` (the store's
inbox alone; `sayso._runtime._inbox`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar

import typer
from rich.markup import escape

from ..exceptions import InvalidInput, SaysoError
from ._console import SafeConsole
from ._exits import WRONG, exit_code
from ._logs import log_to_terminal
from ._startup import collector_paused

if TYPE_CHECKING:
    from types import TracebackType

    from .._config.file import Config
    from .._runtime import Inbox, Reader, Sayso

T = TypeVar("T")


class _Opens(Protocol):
    """What a command opens: a runtime, a reader or an inbox, each with its config."""

    @property
    def config(self) -> Config: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None, /
    ) -> Any: ...


Opened = TypeVar("Opened", bound=_Opens)

errors = SafeConsole(stderr=True)


def with_app(
    config: str, work: Callable[[Sayso], Awaitable[T]], *, as_json: bool = False, principal: str | None = None
) -> T:
    """Open the runtime, do the work, and turn sayso's errors into a message and an exit code.

    `principal`: the `--principal` the command was given, checked against the config first (`check_principal`).
    """
    with collector_paused():
        from .._runtime import Sayso

    return _ran(_opened(Sayso.from_yaml, config, work, principal), as_json=as_json)


def with_reader(
    config: str, work: Callable[[Reader], Awaitable[T]], *, as_json: bool = False, principal: str | None = None
) -> T:
    """`with_app` for commands that only read the store: no agent, model or toolset is built."""
    with collector_paused():
        from .._runtime import Reader

    return _ran(_opened(Reader.from_yaml, config, work, principal), as_json=as_json)


def with_inbox(
    config: str, work: Callable[[Inbox], Awaitable[T]], *, as_json: bool = False, principal: str | None = None
) -> T:
    """`with_reader` for listing open requests: the store's inbox alone, none of its writes or the runtime's kernel."""
    with collector_paused():
        from .._runtime import Inbox

    return _ran(_opened(Inbox.from_yaml, config, work, principal), as_json=as_json)


def check_principal(config: Config, name: str | None, *, option: str = "--principal") -> None:
    """Refuse a principal the config does not name (`local`, the default, aside).

    The runtime takes any name (a host names its own users), so a typo was taken for a stranger: an
    empty inbox, a decision refused as someone else's, a run started for nobody who can sign in.

    Raises:
        InvalidInput: the name is empty, or principals are configured and none has it.
    """
    from .._core.access import LOCAL_NAME

    if name is None:
        return
    if not name.strip():
        raise InvalidInput(f"{option} names nobody: give a principal's name")
    names = [p.name for p in config.principals]
    if names and name != LOCAL_NAME and name not in names:
        raise InvalidInput(f"{option} {name!r} is not a principal of the config; its principals: {', '.join(names)}")


def check_id(name: str, value: str | None, *, what: str, example: str, as_json: bool = False) -> None:
    """Refuse an id given on the command line that no id of sayso's looks like, as REST refuses it.

    Before anything is loaded or opened: an id holding a NUL or other odd text reached the store, which on
    PostgreSQL failed as a database error (a NUL cannot even be looked up). `name` is the argument or
    option as `--help` shows it (`REQUEST_ID`, `--thread`); `what` the kind of id, `example` the prefix
    of one sayso hands out.
    """
    from .._core.ids import ID_SHAPE, is_id

    if value is None or is_id(value):
        return
    shown = value if len(value) <= 70 else f"{value[:67]}…"
    said = f"{name} {shown!r} is not {what}: an id is {ID_SHAPE}, as in {example}…"
    fail("BadParameter", said, code=WRONG, as_json=as_json)


def _opened(
    load: Callable[[str], Opened], config: str, work: Callable[[Opened], Awaitable[T]], principal: str | None
) -> Callable[[], Awaitable[T]]:
    """Load the config (its objects built with the collector paused), open what it gives, and do the work."""

    async def main() -> T:
        with collector_paused():
            opened = load(config)
        check_principal(opened.config, principal)
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
