"""`OutboxPort`: the store verbs of the outbox of events, delivered to webhooks by whichever server runs.

A part of the `RunStore` port (which inherits it), kept in its own module because it is its own
concept: events are written by the run verbs in the same commit as their change; these verbs fan
them out into deliveries, claim and settle those, and prune what is settled once it is old.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from ._records import REQUEST_KINDS, DeliveryStatus, OutboxKind, PendingDelivery

PRUNED_AT_ONCE = 1_000
"""Rows `prune_outbox` deletes in one call (one short transaction), unless told otherwise."""


class OutboxPort(ABC):
    """The outbox verbs every store implements (see `RunStore`)."""

    @abstractmethod
    async def fan_out_events(
        self,
        *,
        hooks: Sequence[str],
        now: float,
        limit: int = 200,
        kinds: Sequence[OutboxKind] = REQUEST_KINDS,
        marked: str | None = None,
    ) -> int:
        """Give each event of `kinds` not fanned out yet one pending delivery per key in `hooks`; returns how many.

        Every event (a request opened or decided) is written to the outbox by the verb that made the
        change, in the same commit. Fanning out happens once per event, whichever sender does it.
        With no hooks nothing happens (the events wait for a server that has some, until `prune_outbox`
        takes them once they are older than the retention). With `marked` (a mark namespace), only an
        event whose request or run has a mark there gets deliveries; the others are fanned out to no
        one, so a sender with nothing to send for them (a task's push configs are its marks) never
        claims and settles them one by one.
        """

    @abstractmethod
    async def claim_deliveries(
        self, *, holder: str, now: float, until: float, limit: int = 50, hooks: Sequence[str] | None = None
    ) -> list[PendingDelivery]:
        """Claim due pending deliveries (to `hooks`, else any) no live sender holds, oldest first, until `until`.

        A delivery is claimed by one sender at a time; a claim that lapsed (its sender died) is taken again.
        One behind an earlier event of the same request to the same hook in flight (claimed) is not due yet:
        a request's events reach each receiver in the order they were committed, whoever sends them.
        """

    @abstractmethod
    async def renew_deliveries(self, delivery_ids: Sequence[str], *, holder: str, until: float) -> set[str]:
        """Extend `holder`'s claims on these deliveries until `until`; returns those it still held (and now holds)."""

    @abstractmethod
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
        """Record what became of a claimed delivery: delivered, skipped, failed, or `pending` again at `retry_at`.

        Returns `False` (and changes nothing) when `holder` no longer holds the claim.
        """

    @abstractmethod
    async def delivery_counts(self) -> dict[DeliveryStatus, int]:
        """How many deliveries stand where (for health checks and tests)."""

    @abstractmethod
    async def prune_outbox(self, *, before: float, limit: int = PRUNED_AT_ONCE) -> int:
        """Delete what is done with and older than `before`, at most `limit` rows; returns how many went.

        First settled deliveries (delivered, skipped, or failed for good) that finished before `before`,
        then events created before `before` that no delivery is left for: all of theirs settled and
        deleted, or never fanned out (no server with webhooks took them in time). A pending delivery,
        claimed or not, is never touched, nor its event. Call it again while it returns `limit`.
        """
