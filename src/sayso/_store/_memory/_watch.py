"""In-memory reads of a watch's look: the outbox's events after a position, and requests whose time just ran out."""

from __future__ import annotations

from .._port_watch import FEED_PAGE
from .._records import EventsPage, FeedEvent
from ._tx import _MemoryBase


class _Watch(_MemoryBase):
    async def events_after(self, seq: int | None, *, limit: int = FEED_PAGE) -> EventsPage:
        async with self._lock:
            found = [] if seq is None else [e for e in self._outbox if e.seq > seq][:limit]
            head = self._outbox[-1].seq if self._outbox else 0
        return EventsPage(
            events=[
                FeedEvent(seq=e.seq, kind=e.kind, request_id=e.request_id, created_at=e.created_at, step=e.step)
                for e in found
            ],
            head=head,
        )

    async def requests_expired(self, *, after: float, until: float) -> list[str]:
        async with self._lock:
            found = sorted(
                (r.expires_at, r.request_id)
                for r in self._requests.values()
                if r.status == "open" and r.expires_at is not None and after < r.expires_at <= until
            )
        return [request_id for _, request_id in found]
