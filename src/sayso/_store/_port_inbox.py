"""`InboxPort`: what listing open requests needs of a store — open it, read the inbox, its votes, the audit head.

A part of the `RunStore` port (which inherits it), kept apart because a caller that only lists open
requests (`sayso inbox`) opens a store that implements just this: on SQL the `SqlInbox`, which loads
none of the store's primitives or business verbs. The audit head is here because listing, like every
command, says when the audit log cannot be appended to as configured (`_runtime/_audit.warn_unusable`).
"""

from __future__ import annotations

from abc import abstractmethod
from types import TracebackType
from typing import Self

from .._core.audit import AuditHead
from ._port_routing import RoutingPort
from ._records import InboxFilter, InboxPage


class InboxPort(RoutingPort):
    """The open requests of a store, a page at a time, with their votes (see `RunStore`)."""

    async def open(self) -> None:  # an optional hook: stores with nothing to connect keep it
        """Connect and bring the schema up to date; calling it again does nothing."""

    async def aclose(self) -> None:  # an optional hook, as `open`
        """Release connections; the store can be opened again afterwards."""

    async def reach(self) -> None:  # an optional hook, as `open`: a store with nothing to connect is always there
        """Check that the store could be opened, without opening it: nothing is created, migrated or written.

        Raises:
            StoreError: it cannot be reached or opened, saying why in a line.
        """

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @abstractmethod
    async def inbox(self, query: InboxFilter, *, now: float, limit: int, cursor: str | None = None) -> InboxPage:
        """Open, unexpired requests of open pauses across threads, oldest first, one page at a time.

        Raises:
            InvalidCursor: `cursor` is not the `next_cursor` of a page.
        """

    @abstractmethod
    async def audit_head(self) -> AuditHead | None:
        """The chain's head as checkpointed with the last append (`None` before the first record)."""
