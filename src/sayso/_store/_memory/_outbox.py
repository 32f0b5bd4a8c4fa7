"""In-memory verbs of the outbox: fanning events out to webhooks, claiming deliveries, settling and pruning them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .._port_outbox import PRUNED_AT_ONCE
from .._records import DeliveryStatus, PendingDelivery
from .._views import delivery_id
from ._base import _Delivery
from ._tx import _MemoryBase


class _Outbox(_MemoryBase):
    async def fan_out_events(self, *, hooks: Sequence[str], now: float, limit: int = 200) -> int:
        if not hooks:
            return 0
        async with self._lock:
            waiting = [e for e in self._outbox if not e.fanned_out][:limit]
            for event in waiting:
                event.fanned_out = True
                for hook in dict.fromkeys(hooks):
                    self._deliveries[delivery_id(event.event_id, hook)] = _Delivery(
                        event=event, hook=hook, next_attempt_at=now
                    )
            return len(waiting)

    async def claim_deliveries(self, *, owner: str, now: float, until: float, limit: int = 50) -> list[PendingDelivery]:
        async with self._lock:
            due = [
                (key, d)
                for key, d in self._deliveries.items()
                if d.status == "pending"
                and d.next_attempt_at <= now
                and (d.claimed_until is None or d.claimed_until < now)
            ]
            due.sort(key=lambda item: item[1].next_attempt_at)
            claimed: list[PendingDelivery] = []
            for key, d in due[:limit]:
                d.claimed_by, d.claimed_until = owner, until
                claimed.append(
                    PendingDelivery(
                        delivery_id=key,
                        event_id=d.event.event_id,
                        hook=d.hook,
                        kind=d.event.kind,
                        request_id=d.event.request_id,
                        created_at=d.event.created_at,
                        attempts=d.attempts,
                    )
                )
            return claimed

    async def settle_delivery(
        self,
        delivery_id: str,
        *,
        owner: str,
        status: DeliveryStatus,
        now: float,
        retry_at: float | None = None,
        error: str | None = None,
    ) -> bool:
        async with self._lock:
            d = self._deliveries.get(delivery_id)
            if d is None or d.claimed_by != owner:
                return False
            d.status, d.claimed_by, d.claimed_until, d.last_error = status, None, None, error
            if status == "pending":
                d.next_attempt_at = retry_at if retry_at is not None else now
            else:
                d.finished_at = now
            if status != "skipped":
                d.attempts += 1
            return True

    async def delivery_counts(self) -> dict[DeliveryStatus, int]:
        async with self._lock:
            return dict(Counter(d.status for d in self._deliveries.values()))

    async def prune_outbox(self, *, before: float, limit: int = PRUNED_AT_ONCE) -> int:
        async with self._lock:
            settled = [
                key
                for key, d in self._deliveries.items()
                if d.status != "pending" and d.finished_at is not None and d.finished_at < before
            ][:limit]
            for key in settled:
                del self._deliveries[key]
            left = {d.event.event_id for d in self._deliveries.values()}
            events = [e for e in self._outbox if e.created_at < before and e.event_id not in left]
            gone = {id(e) for e in events[: limit - len(settled)]}
            self._outbox = [e for e in self._outbox if id(e) not in gone]
            return len(settled) + len(gone)
