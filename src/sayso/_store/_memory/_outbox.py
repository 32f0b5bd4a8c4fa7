"""The outbox's primitives in memory: events fanned out to deliveries, claimed, settled and pruned, with undo.

A part of `MemoryTx` (its base), kept apart because it is its own concept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import assert_never

from .._dispatch import OpsTx
from .._ops import ClaimDelivery, FanOut, Settled
from .._primitives import Pruned
from .._records import DeliveryStatus, OutboxKind, PendingDelivery
from .._views import delivery_id
from ._base import _Changes, _Delivery, _Tables


class MemoryOutboxTx(_Changes, OpsTx):
    """The outbox primitives of `MemoryTx`, over its tables and undo log."""

    s: _Tables

    async def unfanned_events(self, limit: int, kinds: Sequence[OutboxKind]) -> list[tuple[str, str]]:
        return [(e.event_id, e.request_id) for e in self.s._outbox if not e.fanned_out and e.kind in kinds][:limit]

    async def _outbox_change(self, change: FanOut | ClaimDelivery | Settled) -> bool:
        """A change to the outbox's rows (`StoreTx.change`)."""
        match change:
            case FanOut(event_id=event_id, hooks=hooks, now=now):
                return self._fan_out(event_id, hooks, now)
            case ClaimDelivery(delivery_id=delivery_id, holder=holder):
                return self._change_delivery(delivery_id, holder, change)
            case Settled(delivery_id=delivery_id, holder=holder):
                return self._change_delivery(delivery_id, holder, change)
            case _:
                assert_never(change)

    def _fan_out(self, event_id: str, hooks: Sequence[str], now: float) -> bool:
        event = next((e for e in self.s._outbox if e.event_id == event_id), None)
        if event is None or event.fanned_out:
            return False
        self._set(event, fanned_out=True)
        for hook in hooks:
            delivery = _Delivery(event=event, hook=hook, next_attempt_at=now)
            self._put(self.s._deliveries, delivery_id(event_id, hook), delivery)
        return True

    async def due_deliveries(self, now: float, limit: int, holder: str) -> list[PendingDelivery]:
        deliveries = self.s._deliveries
        seq = {id(e): n for n, e in enumerate(self.s._outbox)}
        # Not behind a request's earlier event to the same hook in flight with another sender (see the SQL `DUE`).
        ahead: dict[tuple[str, str], int] = {}
        for d in deliveries.values():
            if d.status == "pending" and not _free(d, now) and d.claimed_by != holder:
                key, n = (d.hook, d.event.request_id), seq.get(id(d.event), -1)
                ahead[key] = min(ahead.get(key, n), n)

        def first(d: _Delivery) -> bool:
            return seq.get(id(d.event), -1) <= ahead.get((d.hook, d.event.request_id), seq.get(id(d.event), -1))

        due = [(key, d) for key, d in deliveries.items() if _free(d, now) and d.next_attempt_at <= now and first(d)]
        due.sort(key=lambda item: item[1].next_attempt_at)
        return [
            PendingDelivery(
                delivery_id=key,
                event_id=d.event.event_id,
                hook=d.hook,
                kind=d.event.kind,
                request_id=d.event.request_id,
                created_at=d.event.created_at,
                attempts=d.attempts,
                step=d.event.step,
            )
            for key, d in due[:limit]
        ]

    def _change_delivery(self, delivery_id: str, holder: str, change: ClaimDelivery | Settled) -> bool:
        d = self.s._deliveries.get(delivery_id)
        if isinstance(change, ClaimDelivery):
            if change.renew:
                if d is None or d.status != "pending" or d.claimed_by != holder:
                    return False
            elif d is None or not _free(d, change.now):
                return False
            self._set(d, claimed_by=holder, claimed_until=change.until)
            return True
        outcome = change
        if d is None or d.claimed_by != holder:
            return False
        values: dict[str, object] = {"status": outcome.status, "claimed_by": None, "claimed_until": None}
        values["last_error"] = outcome.error
        if outcome.next_attempt_at is not None:
            values["next_attempt_at"] = outcome.next_attempt_at
        if outcome.finished_at is not None:
            values["finished_at"] = outcome.finished_at
        if outcome.attempted:
            values["attempts"] = d.attempts + 1
        self._set(d, **values)
        return True

    async def delivery_counts(self) -> dict[DeliveryStatus, int]:
        return dict(Counter(d.status for d in self.s._deliveries.values()))

    async def prune(self, what: Pruned, before: float, limit: int) -> int:
        if what != "deliveries":
            return self._prune_events(before, limit, fanned_out=what == "fanned_out")
        deliveries = self.s._deliveries
        settled = [
            key
            for key, d in deliveries.items()
            if d.status != "pending" and d.finished_at is not None and d.finished_at < before
        ][:limit]
        for key in settled:
            self._pop(deliveries, key)
        return len(settled)

    def _prune_events(self, before: float, limit: int, *, fanned_out: bool) -> int:
        t = self.s
        left = {d.event.event_id for d in t._deliveries.values()}
        events = [
            e for e in t._outbox if e.fanned_out == fanned_out and e.created_at < before and e.event_id not in left
        ]
        gone = {id(e) for e in events[:limit]}
        if gone:
            old = t._outbox
            t._outbox = [e for e in old if id(e) not in gone]
            self.undo.append(lambda: setattr(t, "_outbox", old))
        return len(gone)


def _free(d: _Delivery, now: float) -> bool:
    """Pending, and claimed by no live sender."""
    return d.status == "pending" and (d.claimed_until is None or d.claimed_until < now)
