"""The store a configured URL names: the whole port (`store_from_url`), or its inbox alone (`inbox_from_url`).

A configured store is SQL (SQLite or PostgreSQL; which URLs sayso takes is `_core.store_urls`'s
rule); the in-memory store is built by hand (`MemoryRunStore()`), for tests and embedding. Each
side is imported once asked for: a command that only lists open requests (`sayso inbox`) loads
`SqlInbox`, not the write side of `SqlRunStore`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._port import RunStore
    from ._port_inbox import InboxPort


def store_from_url(url: str, *, base_dir: Path | None = None) -> RunStore:
    """The store a configured URL names: `sqlite:///…` or `postgresql://…` (`_core.store_urls` says which URLs).

    Relative SQLite paths are taken from `base_dir` (the config file's folder).

    Raises:
        ConfigError: the URL names no store sayso takes.
    """
    from ._sql._store import SqlRunStore

    return SqlRunStore(url, base_dir=base_dir)


def inbox_from_url(url: str, *, base_dir: Path | None = None) -> InboxPort:
    """`store_from_url`'s store as far as listing open requests goes (what `sayso inbox` opens).

    Raises:
        ConfigError: the URL names no store sayso takes.
    """
    from ._sql._inbox import SqlInbox

    return SqlInbox(url, base_dir=base_dir)
