"""`SqlInbox`: the SQL store as far as listing open requests goes, for a caller that writes nothing.

`sayso inbox` opens this instead of `SqlRunStore`: the same connections, listings and audit head
(`SqlRunStore` inherits them), without the primitives, the operations or the business verbs, so
the command never loads the store's write side.
"""

from __future__ import annotations

from ..._core.audit import AuditHead
from .._port_inbox import InboxPort
from . import _chain
from ._listings import _Listings


class SqlInbox(_Listings, InboxPort):
    """The inbox port on SQLite or PostgreSQL: `open()` as `SqlRunStore`'s, then reads only."""

    async def audit_head(self) -> AuditHead | None:
        return await self._raw_read(_chain.audit_head)
