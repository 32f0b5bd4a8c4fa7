"""Where a watch stands in the store's outbox: what it read, and which missing positions it still waits for.

The outbox's positions mostly grow with each commit, and a watch reads on from the last it read.
Two things break the plain rule, and this is the one place that allows for them (no I/O here): on
PostgreSQL an event can become visible after one written later (its transaction committed later),
so a missing position is waited for a while before the watch reads on past it; and on SQLite, once
a prune took the newest events, positions start again from the highest left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .._store import FeedEvent

GAP_WAIT = 30.0
"""Seconds a missing position is waited for, from the look that first read past it, before it is taken for a
rolled-back transaction's (never filled) and the watch reads on past it."""


@dataclass
class Feed:
    """Every position up to `after` was read or given up on; `read` holds those past it read already."""

    after: int
    looked_at: float
    """When the last look began: requests whose time ran out since are the next look's."""
    read: set[int] = field(default_factory=set)
    reached: list[tuple[float, int]] = field(default_factory=list)
    """`(when, position)`: by that look the watch had read up to that position; in order."""
    lifting: bool = False
    """The positions started again: the first event read shows where they start now."""
    closed: set[str] = field(default_factory=set)
    """Requests said closed as their time ran out: the expiry the sweep records later is not said again."""

    def take(self, events: Sequence[FeedEvent], now: float) -> list[FeedEvent]:
        """The events not read before, in order; moves on past what is read and past gaps waited for long enough."""
        if self.lifting and events:
            self.after, self.lifting = max(self.after, events[0].seq - 1), False
        fresh = [e for e in events if e.seq > self.after and e.seq not in self.read]
        self.read.update(e.seq for e in fresh)
        top = max(self.read, default=self.after)
        if top > (self.reached[-1][1] if self.reached else self.after):
            self.reached.append((now, top))
        while self.read:
            following = self.after + 1
            if following in self.read:
                self.read.discard(following)
                self.after = following
                continue
            missing_since = next(at for at, upto in self.reached if upto >= following)
            if now - missing_since < GAP_WAIT:
                break
            self.after = min(self.read) - 1  # the whole gap below the next position read: never filled
        self.reached = [(at, upto) for at, upto in self.reached if upto > self.after]
        return fresh

    def restart(self) -> float:
        """The head fell below `after`: positions start again. Events written before the returned time were read."""
        self.after, self.read, self.reached, self.lifting = 0, set(), [], True
        return self.looked_at - GAP_WAIT
