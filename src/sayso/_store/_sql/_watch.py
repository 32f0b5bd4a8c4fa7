"""SQL reads of a watch's look: the outbox's events after a position, and requests whose time just ran out.

Each is one constant statement through an index (the outbox's primary key, `ix_requests_expiring`), so a
look costs the same however many requests are open.
"""

from __future__ import annotations

from .._port_watch import FEED_PAGE
from .._records import EventsPage, FeedEvent
from ._conn import _SqlConn
from ._tx import Sql, Tx

EVENTS_AFTER = Sql(
    "SELECT seq, kind, request_id, created_at, step FROM outbox WHERE seq > :after ORDER BY seq LIMIT :limit"
)
HEAD = Sql("SELECT MAX(seq) AS head FROM outbox")
EXPIRED = Sql(
    "SELECT request_id FROM requests WHERE status = 'open' AND expires_at IS NOT NULL "
    "AND expires_at > :after AND expires_at <= :until ORDER BY expires_at, request_id"
)
"""Its conditions are `ix_requests_expiring`'s, so the partial index answers it."""


class _Watch(_SqlConn):
    async def events_after(self, seq: int | None, *, limit: int = FEED_PAGE) -> EventsPage:
        async def work(tx: Tx) -> EventsPage:
            rows = [] if seq is None else await tx.all(EVENTS_AFTER, {"after": seq, "limit": limit})
            head = await tx.one(HEAD)
            return EventsPage(
                events=[
                    FeedEvent(
                        seq=int(row["seq"]),
                        kind=row["kind"],
                        request_id=row["request_id"],
                        created_at=float(row["created_at"]),
                        step=row["step"],
                    )
                    for row in rows
                ],
                head=int(head["head"] or 0) if head is not None else 0,
            )

        return await self._raw_read(work)

    async def requests_expired(self, *, after: float, until: float) -> list[str]:
        async def work(tx: Tx) -> list[str]:
            return [row["request_id"] for row in await tx.all(EXPIRED, {"after": after, "until": until})]

        return await self._raw_read(work)
