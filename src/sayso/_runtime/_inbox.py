"""`Inbox`: a config's open requests over its store's inbox alone, for a caller that does nothing else.

`sayso inbox` only lists: a `Reader` would open the whole store port (its primitives, operations and
business verbs) and the runtime's kernel for one query. An `Inbox` opens the config and the store's
inbox port (`_store.inbox_from_url`: on SQL, `SqlInbox`), and lists through the same rule as
`Sayso.inbox` (`_listing.inbox_page`), so what a caller sees is the same. `reach` asks the same store only
whether it answers (`sayso check`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import anyio

from .._config.file import Config, load_config
from .._core import access
from .._core.store_urls import shown_url
from .._store import InboxFilter, InboxPage, InboxPort, inbox_from_url, refuse_missing_folder
from ..exceptions import StoreError
from . import _audit
from ._listing import PrincipalLike, inbox_page, principal_of

REACH_SECONDS = 5.0
"""How long `Inbox.reach` waits for the store: a database that does not answer in that long is as good as down."""


class Inbox:
    """The open requests of a config's store; use it as an async context manager."""

    def __init__(
        self, config: Config, *, store: InboxPort | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.config = config
        if store is None:
            refuse_missing_folder(config.store_url(), base_dir=config.base_dir)  # as `Sayso`'s config checks do
        self._store = store or inbox_from_url(config.store_url(), base_dir=config.base_dir)
        self._clock = clock

    @classmethod
    def from_yaml(cls, path: str | Path) -> Inbox:
        """Load a `sayso.yaml`; nothing of its agents is built."""
        return cls(load_config(path))

    async def __aenter__(self) -> Inbox:
        await self._store.open()
        await _audit.warn_unusable(self._store, _audit.audit_key(self.config), self.config)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._store.aclose()

    async def reach(self, *, within: float = REACH_SECONDS) -> None:
        """Check that the store answers within `within` seconds, without opening it (no `async with` needed).

        Opening would create a SQLite file that is not there yet and bring the schema up to date (on a new
        PostgreSQL database, create its tables): a check should leave the store as it found it, so the store is
        only reached (`InboxPort.reach`: a SQLite file's folder writable and the file, if any, a database; a
        PostgreSQL connection and `SELECT 1`), and the first command that works with it creates what it needs.

        Raises:
            StoreError: the store cannot be reached or opened, or did not answer in time, saying why in a line.
        """
        try:
            with anyio.fail_after(within):
                await self._store.reach()
        except TimeoutError:
            where = shown_url(self.config.store_url())
            raise StoreError(
                f"could not open the store at {where!r}: it did not answer within {within:g} seconds"
            ) from None

    async def inbox(
        self,
        query: InboxFilter | None = None,
        *,
        principal: PrincipalLike = access.LOCAL_NAME,
        limit: int = 50,
        cursor: str | None = None,
    ) -> InboxPage:
        """Open requests across threads that the caller may decide, oldest first, a page at a time."""
        who = principal_of(self.config, principal)
        return await inbox_page(self._store, self.config, who, query, now=self._clock(), limit=limit, cursor=cursor)
