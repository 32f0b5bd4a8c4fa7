"""SQL verbs of the outbox: fanning events out to webhooks, claiming deliveries, settling and pruning them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection

from .. import _tables as t
from .._port_outbox import PRUNED_AT_ONCE
from .._records import REQUEST_KINDS, DeliveryStatus, OutboxKind, PendingDelivery
from .._views import delivery_id
from ._base import _SqlBase

_SETTLED: tuple[DeliveryStatus, ...] = ("delivered", "skipped", "failed")


class _Outbox(_SqlBase):
    async def fan_out_events(
        self, *, hooks: Sequence[str], now: float, limit: int = 200, kinds: Sequence[OutboxKind] = REQUEST_KINDS
    ) -> int:
        if not hooks:
            return 0
        o = t.outbox
        waiting = (
            sa.select(o.c.seq, o.c.event_id)
            .where(o.c.fanned_out.is_(False), o.c.kind.in_(list(kinds)))
            .order_by(o.c.seq)
            .limit(limit)
        )

        def work(conn: Connection) -> int:
            done = 0
            for row in conn.execute(waiting).all():
                # Conditional: of two senders fanning out the same event, one does it (the other's update
                # waits for the first to commit, then matches nothing).
                if (
                    conn.execute(
                        o.update().where(o.c.seq == row.seq, o.c.fanned_out.is_(False)).values(fanned_out=True)
                    ).rowcount
                    != 1
                ):
                    continue
                conn.execute(
                    t.deliveries.insert(),
                    [
                        {
                            "delivery_id": delivery_id(row.event_id, hook),
                            "event_id": row.event_id,
                            "hook": hook,
                            "status": "pending",
                            "attempts": 0,
                            "next_attempt_at": now,
                        }
                        for hook in dict.fromkeys(hooks)
                    ],
                )
                done += 1
            return done

        def lost(conn: Connection) -> int:
            return 0  # another sender fanned these events out first

        return await self._sa_write(work, race=lost)

    async def claim_deliveries(
        self, *, owner: str, now: float, until: float, limit: int = 50, hooks: Sequence[str] | None = None
    ) -> list[PendingDelivery]:
        d, o = t.deliveries, t.outbox
        free = sa.or_(d.c.claimed_until.is_(None), d.c.claimed_until < now)
        due = (
            sa.select(d, o.c.kind, o.c.request_id, o.c.created_at)
            .join(o, o.c.event_id == d.c.event_id)
            .where(d.c.status == "pending", d.c.next_attempt_at <= now, free)
            .order_by(d.c.next_attempt_at, o.c.seq)
            .limit(limit)
        )
        if hooks is not None:
            due = due.where(d.c.hook.in_(list(hooks)))

        def work(conn: Connection) -> list[PendingDelivery]:
            claimed: list[PendingDelivery] = []
            for row in conn.execute(due).all():
                taken = conn.execute(
                    d.update()
                    .where(d.c.delivery_id == row.delivery_id, d.c.status == "pending", free)
                    .values(claimed_by=owner, claimed_until=until)
                )
                if taken.rowcount == 1:
                    claimed.append(
                        PendingDelivery(
                            delivery_id=row.delivery_id,
                            event_id=row.event_id,
                            hook=row.hook,
                            kind=row.kind,
                            request_id=row.request_id,
                            created_at=row.created_at,
                            attempts=row.attempts,
                        )
                    )
            return claimed

        return await self._sa_write(work)

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
        d = t.deliveries
        values: dict[str, Any] = {"status": status, "claimed_by": None, "claimed_until": None, "last_error": error}
        if status == "pending":
            values["next_attempt_at"] = retry_at if retry_at is not None else now
        else:
            values["finished_at"] = now
        if status != "skipped":
            values["attempts"] = d.c.attempts + 1

        def work(conn: Connection) -> bool:
            settled = conn.execute(
                d.update().where(d.c.delivery_id == delivery_id, d.c.claimed_by == owner).values(**values)
            )
            return settled.rowcount == 1

        return await self._sa_write(work)

    async def delivery_counts(self) -> dict[DeliveryStatus, int]:
        query = sa.select(t.deliveries.c.status, sa.func.count()).group_by(t.deliveries.c.status)

        def work(conn: Connection) -> dict[DeliveryStatus, int]:
            return {row[0]: int(row[1]) for row in conn.execute(query).all()}

        return await self._sa_read(work)

    async def prune_outbox(self, *, before: float, limit: int = PRUNED_AT_ONCE) -> int:
        d, o = t.deliveries, t.outbox
        old = o.alias("old")
        # Each subquery picks at most `limit` rows through an index (`ix_deliveries_settled`, `ix_outbox_age`),
        # unordered so that no backlog is sorted; the deletes then go by primary key.
        settled = sa.select(d.c.delivery_id).where(d.c.status.in_(_SETTLED), d.c.finished_at < before)
        none_left = ~sa.exists().where(d.c.event_id == old.c.event_id)

        def events(fanned_out: bool, room: int) -> sa.Select[tuple[int]]:
            picked = sa.select(old.c.seq).where(old.c.fanned_out == fanned_out, old.c.created_at < before)
            return (picked.where(none_left) if fanned_out else picked).limit(room)

        def work(conn: Connection) -> int:
            gone = conn.execute(d.delete().where(d.c.delivery_id.in_(settled.limit(limit)))).rowcount
            # Fanned-out events get no new deliveries, so one none is left for is done with. An event not fanned
            # out is deleted only while it still is not: a sender fanning it out meanwhile keeps it (PostgreSQL
            # checks `fanned_out` again on the row it waited for).
            for fanned_out in (True, False):
                if gone < limit:
                    picked = events(fanned_out, limit - gone)
                    gone += conn.execute(o.delete().where(o.c.seq.in_(picked), o.c.fanned_out == fanned_out)).rowcount
            return gone

        return await self._sa_write(work)
