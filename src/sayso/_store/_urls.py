"""Which store a configured URL names: the whole port (`store_from_url`), or its inbox alone (`inbox_from_url`).

Each backend is imported once a URL names it: a command on a SQL store loads no in-memory store, and
one that only lists open requests (`sayso inbox`) loads `SqlInbox`, not the write side of
`SqlRunStore`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..exceptions import ConfigError

if TYPE_CHECKING:
    from ._port import RunStore
    from ._port_inbox import InboxPort

MEMORY_URL = "memory://"


def _backend(url: str) -> Literal["memory", "sql"]:
    """The backend a URL names.

    Raises:
        ConfigError: the URL names no store sayso has.
    """
    if url.startswith(MEMORY_URL):
        return "memory"
    if url.startswith(("sqlite", "postgresql", "postgres://")):
        return "sql"
    raise ConfigError(f"store {url!r} is not one sayso has; use sqlite:///…, postgresql://… or {MEMORY_URL}")


def store_from_url(url: str, *, base_dir: Path | None = None) -> RunStore:
    """The store a configured URL names: `sqlite:///…` or `postgresql://…` in SQL, `memory://` in memory.

    Relative SQLite paths are taken from `base_dir` (the config file's folder).

    Raises:
        ConfigError: the URL names no store sayso has.
    """
    if _backend(url) == "memory":
        from ._memory import MemoryRunStore

        return MemoryRunStore()
    from ._sql._store import SqlRunStore

    return SqlRunStore(url, base_dir=base_dir)


def inbox_from_url(url: str, *, base_dir: Path | None = None) -> InboxPort:
    """`store_from_url`'s store as far as listing open requests goes (what `sayso inbox` opens).

    Raises:
        ConfigError: the URL names no store sayso has.
    """
    if _backend(url) == "memory":
        from ._memory import MemoryRunStore

        return MemoryRunStore()  # a fresh one: nothing is open in a store no other process shares
    from ._sql._inbox import SqlInbox

    return SqlInbox(url, base_dir=base_dir)
