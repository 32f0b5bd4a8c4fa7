"""The verbs of the outbox: fanning events out to webhooks, claiming deliveries, settling and pruning them, once."""

from __future__ import annotations

from collections.abc import Sequence

from ..._core.finite import storable_text
from .._ops import ClaimDelivery, FanOut, Settled
from .._port_outbox import PRUNED_AT_ONCE
from .._primitives import StoreTx, TxStore
from .._records import REQUEST_KINDS, DeliveryStatus, OutboxKind, PendingDelivery


class OutboxVerbs(TxStore):
    """`RunStore`'s outbox verbs (`OutboxPort`).

    Fanning out, claiming and settling commit without waiting for the disk (`durable=False`): the
    events themselves were made durable with the change that wrote them, and a bookkeeping commit lost
    with the machine only repeats work under the same delivery id (an event fanned out again, a
    delivery claimed again once its claim lapses, a settled one sent or skipped again), which
    receivers already drop as a duplicate. Waiting for the disk here cost a server about four fsyncs
    per run cycle on SQLite, every top-level run's pause and end being an A2A push event.
    """

    async def fan_out_events(
        self,
        *,
        hooks: Sequence[str],
        now: float,
        limit: int = 200,
        kinds: Sequence[OutboxKind] = REQUEST_KINDS,
        marked: str | None = None,
    ) -> int:
        if not hooks:
            return 0
        unique = list(dict.fromkeys(hooks))

        async def work(tx: StoreTx) -> int:
            # Of two senders fanning out the same event, one does it (the other's conditional update waits
            # for the first to commit, then matches nothing).
            fanned = 0
            for event_id, subject in await tx.unfanned_events(limit, kinds):
                wanted = marked is None or await tx.document(marked, subject) is not None
                fanned += await tx.change(FanOut(event_id, unique if wanted else (), now))
            return fanned

        async def lost(tx: StoreTx) -> int:
            return 0  # another sender fanned these events out first

        return await self._write(work, race=lost, durable=False)

    async def claim_deliveries(
        self, *, holder: str, now: float, until: float, limit: int = 50, hooks: Sequence[str] | None = None
    ) -> list[PendingDelivery]:
        async def due(tx: StoreTx) -> list[PendingDelivery]:
            # Another sender's deliveries (webhooks vs A2A pushes) are passed over here, so look a little further.
            found = await tx.due_deliveries(now, limit if hooks is None else limit * 4, holder)
            return [d for d in found if hooks is None or d.hook in hooks][:limit]

        async def work(tx: StoreTx) -> list[PendingDelivery]:
            claims = [(d, ClaimDelivery(d.delivery_id, holder, now=now, until=until)) for d in await due(tx)]
            return [d for d, claim in claims if await tx.change(claim)]

        # Most looks find nothing due: a read says so without taking the write lock.
        return await self._write(work, durable=False) if await self._read(due) else []

    async def renew_deliveries(self, delivery_ids: Sequence[str], *, holder: str, until: float) -> set[str]:
        async def work(tx: StoreTx) -> set[str]:
            renewals = [
                ClaimDelivery(d, holder, now=until, until=until, renew=True) for d in dict.fromkeys(delivery_ids)
            ]
            return {r.delivery_id for r in renewals if await tx.change(r)}

        return await self._write(work, durable=False) if delivery_ids else set()

    async def settle_delivery(
        self,
        delivery_id: str,
        *,
        holder: str,
        status: DeliveryStatus,
        now: float,
        retry_at: float | None = None,
        error: str | None = None,
    ) -> bool:
        pending = status == "pending"
        outcome = Settled(
            delivery_id=delivery_id,
            holder=holder,
            status=status,
            error=storable_text(error),  # a receiver's words: kept, as every store can
            next_attempt_at=(retry_at if retry_at is not None else now) if pending else None,
            finished_at=None if pending else now,
            attempted=status != "skipped",
        )

        async def work(tx: StoreTx) -> bool:
            return await tx.change(outcome)

        return await self._write(work, durable=False)

    async def delivery_counts(self) -> dict[DeliveryStatus, int]:
        async def work(tx: StoreTx) -> dict[DeliveryStatus, int]:
            return await tx.delivery_counts()

        return await self._read(work)

    async def prune_outbox(self, *, before: float, limit: int = PRUNED_AT_ONCE) -> int:
        async def work(tx: StoreTx) -> int:
            gone = await tx.prune("deliveries", before, limit)
            # Fanned-out events get no new deliveries, so one none is left for is done with. An event not fanned
            # out is deleted only while it still is not: a sender fanning it out meanwhile keeps it.
            for events in ("fanned_out", "not_fanned_out"):
                if gone < limit:
                    gone += await tx.prune(events, before, limit - gone)
            return gone

        return await self._write(work)
