"""The outbox's primitives on SQLite and PostgreSQL: events fanned out to deliveries, claimed, settled and pruned.

A part of `SqlTx` (its base), kept apart because it is its own concept; each primitive is one
or two constant statements, found through the outbox's and deliveries' indexes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from .._dispatch import OpsTx
from .._ops import ClaimDelivery, FanOut, Settled
from .._primitives import Pruned
from .._records import DeliveryStatus, OutboxKind, PendingDelivery
from .._views import delivery_id
from ._tx import Sql, Tx

UNFANNED = Sql(
    "SELECT event_id, request_id FROM outbox WHERE fanned_out = :no AND kind IN (:k0, :k1, :k2, :k3) "
    "ORDER BY seq LIMIT :limit"
)
"""Events of up to four kinds (a shorter list repeats its last kind), so the statement stays constant."""
FAN_OUT = Sql("UPDATE outbox SET fanned_out = :yes WHERE event_id = :event_id AND fanned_out = :no")
"""Conditional: of two senders fanning out one event, one does it (the other's update waits, then matches nothing)."""
INSERT_DELIVERY = Sql(
    "INSERT INTO deliveries (delivery_id, event_id, hook, status, attempts, next_attempt_at) "
    "VALUES (:delivery_id, :event_id, :hook, 'pending', 0, :now)"
)
_FREE = "(d.claimed_until IS NULL OR d.claimed_until < :now)"


def _not_behind(row: str) -> str:
    """Whether no other sender than `:holder` has an earlier event of `row`'s request to `row`'s hook in flight.

    Found through `ix_outbox_request`: a request's events reach a receiver in order even from several senders,
    and one sender may claim a request's events together, to send them in order.
    """
    return (
        "NOT EXISTS (SELECT 1 FROM outbox mine JOIN outbox p ON p.request_id = mine.request_id AND p.seq < mine.seq "
        f"JOIN deliveries e ON e.event_id = p.event_id AND e.hook = {row}.hook "
        f"WHERE mine.event_id = {row}.event_id AND e.status = 'pending' AND e.claimed_until >= :now "
        "AND e.claimed_by <> :holder)"
    )


DUE = Sql(
    "SELECT d.delivery_id, d.event_id, d.hook, d.attempts, o.kind, o.request_id, o.created_at, o.step "
    "FROM deliveries d JOIN outbox o ON o.event_id = d.event_id "
    f"WHERE d.status = 'pending' AND d.next_attempt_at <= :now AND {_FREE} AND {_not_behind('d')} "
    "ORDER BY d.next_attempt_at, o.seq LIMIT :limit"
)
CLAIM = Sql(
    "UPDATE deliveries SET claimed_by = :holder, claimed_until = :until "
    "WHERE delivery_id = :delivery_id AND status = 'pending' AND (claimed_until IS NULL OR claimed_until < :now) "
    f"AND {_not_behind('deliveries')}"
)
"""Asked again as the row is claimed: another sender's claim committed after this one read `DUE` still counts."""
RENEW = Sql(
    "UPDATE deliveries SET claimed_until = :until "
    "WHERE delivery_id = :delivery_id AND status = 'pending' AND claimed_by = :holder"
)
"""A claim still `holder`'s (nobody took it over once it lapsed) lasts until `until`."""
SETTLE = Sql(
    "UPDATE deliveries SET status = :status, claimed_by = NULL, claimed_until = NULL, last_error = :error, "
    "next_attempt_at = COALESCE(:next_attempt_at, next_attempt_at), finished_at = COALESCE(:finished_at, finished_at), "
    "attempts = attempts + :attempted WHERE delivery_id = :delivery_id AND claimed_by = :holder"
)
COUNTS = Sql("SELECT status, COUNT(*) AS n FROM deliveries GROUP BY status")
# Each subquery picks at most `limit` rows through an index (`ix_deliveries_settled`, `ix_outbox_age`), unordered
# so that no backlog is sorted; the deletes then go by primary key.
PRUNE_DELIVERIES = Sql(
    "DELETE FROM deliveries WHERE delivery_id IN (SELECT delivery_id FROM deliveries "
    "WHERE status IN ('delivered', 'skipped', 'failed') AND finished_at < :before LIMIT :limit)"
)
PRUNE_FANNED_OUT = Sql(
    "DELETE FROM outbox WHERE seq IN (SELECT old.seq FROM outbox old WHERE old.fanned_out = :yes "
    "AND old.created_at < :before AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = old.event_id) "
    "LIMIT :limit) AND fanned_out = :yes"
)
PRUNE_NOT_FANNED_OUT = Sql(
    "DELETE FROM outbox WHERE seq IN (SELECT old.seq FROM outbox old WHERE old.fanned_out = :no "
    "AND old.created_at < :before LIMIT :limit) AND fanned_out = :no"
)
"""An event not fanned out is deleted only while it still is not: a sender fanning it out meanwhile keeps it
(PostgreSQL checks `fanned_out` again on the row it waited for)."""

_FLAGS = {"yes": True, "no": False}
_KINDS = 4
"""How many event kinds `UNFANNED` takes."""


class SqlOutboxTx(OpsTx):
    """The outbox primitives of `SqlTx`."""

    tx: Tx

    async def unfanned_events(self, limit: int, kinds: Sequence[OutboxKind]) -> list[tuple[str, str]]:
        padded = [*kinds, *[kinds[-1]] * (_KINDS - len(kinds))]
        if len(padded) != _KINDS:
            raise ValueError(f"one to {_KINDS} event kinds at a time, got {list(kinds)}")
        params = {**_FLAGS, "limit": limit, **{f"k{n}": kind for n, kind in enumerate(padded)}}
        return [(row["event_id"], row["request_id"]) for row in await self.tx.all(UNFANNED, params)]

    async def _outbox_change(self, change: FanOut | ClaimDelivery | Settled) -> bool:
        """A change to the outbox's rows (`StoreTx.change`)."""
        if isinstance(change, FanOut):
            return await self._fan_out(change.event_id, change.hooks, change.now)
        return await self._change_delivery(change.delivery_id, change.holder, change)

    async def _fan_out(self, event_id: str, hooks: Sequence[str], now: float) -> bool:
        if await self.tx.run(FAN_OUT, {**_FLAGS, "event_id": event_id}) != 1:
            return False
        rows = [{"delivery_id": delivery_id(event_id, h), "event_id": event_id, "hook": h, "now": now} for h in hooks]
        if rows:
            await self.tx.many(INSERT_DELIVERY, rows)
        return True

    async def due_deliveries(self, now: float, limit: int, holder: str) -> list[PendingDelivery]:
        return [
            PendingDelivery(
                delivery_id=row["delivery_id"],
                event_id=row["event_id"],
                hook=row["hook"],
                kind=row["kind"],
                request_id=row["request_id"],
                created_at=row["created_at"],
                attempts=row["attempts"],
                step=row["step"],
            )
            for row in await self.tx.all(DUE, {"now": now, "limit": limit, "holder": holder})
        ]

    async def _change_delivery(self, delivery_id: str, holder: str, change: ClaimDelivery | Settled) -> bool:
        params: dict[str, object] = {"delivery_id": delivery_id, "holder": holder}
        match change:
            case ClaimDelivery(until=until, renew=True):
                return await self.tx.run(RENEW, {**params, "until": until}) == 1
            case ClaimDelivery(now=now, until=until):
                return await self.tx.run(CLAIM, {**params, "now": now, "until": until}) == 1
            case Settled():
                params |= {
                    "status": change.status,
                    "error": change.error,
                    "next_attempt_at": change.next_attempt_at,
                    "finished_at": change.finished_at,
                    "attempted": 1 if change.attempted else 0,
                }
                return await self.tx.run(SETTLE, params) == 1
            case _:
                assert_never(change)

    async def delivery_counts(self) -> dict[DeliveryStatus, int]:
        return {row["status"]: int(row["n"]) for row in await self.tx.all(COUNTS)}

    async def prune(self, what: Pruned, before: float, limit: int) -> int:
        sql = {"deliveries": PRUNE_DELIVERIES, "fanned_out": PRUNE_FANNED_OUT, "not_fanned_out": PRUNE_NOT_FANNED_OUT}
        return await self.tx.run(sql[what], {**_FLAGS, "before": before, "limit": limit})
