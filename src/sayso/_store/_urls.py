"""The store a configured URL names: the whole port (`store_from_url`), or its inbox alone (`inbox_from_url`).

A configured store is SQL (SQLite or PostgreSQL; which URLs sayso takes is `_core.store_urls`'s
rule); the in-memory store is built by hand (`MemoryRunStore()`), for tests and embedding. Each
side is imported once asked for: a command that only lists open requests (`sayso inbox`) loads
`SqlInbox`, not the write side of `SqlRunStore`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .._core.store_urls import no_folder, store_url

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


def refuse_missing_folder(url: str, *, base_dir: Path | None = None) -> None:
    """Refuse a SQLite file whose folder does not exist as the configuration error it is, before anything opens.

    `Sayso` refuses it so (its config's checks); a `Reader` or an `Inbox`, which check nothing else, failed
    only when opening, as a store error: `sayso inbox` exited 1 where `sayso run` exited 2. A folder that
    goes away after that is still a `StoreError` at opening.

    Raises:
        ConfigError: the URL names no store sayso takes, or a SQLite file in a folder that does not exist.
    """
    store = store_url(url, base_dir=base_dir)
    if store.path is not None and not store.path.parent.is_dir():
        raise no_folder(store).error()
