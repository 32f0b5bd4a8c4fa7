"""`WatchPort`: what a watch reads of a store at each look: the outbox's events since the last, and expiries.

A part of the `RunStore` port (which inherits it). A live page (`Sayso.watch`, `GET /v1/events`) looks
every second: reading where every open request stands would cost more the more are open, and one
connection's looks would soon cost a core. Instead it remembers where it stopped in the outbox, which
every change a person may notice already writes in its own commit, and reads only what came since,
through the outbox's primary key; and it asks which requests ran out of time since its last look,
the one change nothing is written for when it happens.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from ._records import EventsPage

FEED_PAGE = 500
"""Events `events_after` returns at once, unless told otherwise."""


class WatchPort(ABC):
    """The reads a watch makes at each look (see `RunStore`)."""

    @abstractmethod
    async def events_after(self, seq: int | None, *, limit: int = FEED_PAGE) -> EventsPage:
        """The outbox's events after position `seq`, oldest first, at most `limit`, and the newest one's position.

        `None` reads no event, only the head: where a new reader starts. A request opened, voted on,
        decided (expired and closed included) or escalated, a top-level run paused or ended: each
        writes one event per request (or run) in the commit that made the change. Positions grow
        with each event written, with two exceptions a reader allows for: on PostgreSQL an event can
        become visible after one written later (its transaction committed later), and a rolled-back
        one leaves a gap for good; on SQLite, once `prune_outbox` deleted the newest events, the next
        ones take positions again from the highest left (the head drops below where a reader stood).
        """

    @abstractmethod
    async def requests_expired(self, *, after: float, until: float) -> list[str]:
        """Every undecided request whose time ran out after `after` and by `until`, soonest first.

        Nothing is written when a request's time runs out (the expiry sweep records it later, and only
        once the whole pause has run out), yet it leaves every inbox then: a watch asks for it. As many
        as ran out in the span, however many are open.
        """
