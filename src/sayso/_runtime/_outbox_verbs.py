"""`OutboxVerbs`: the facade's verbs of the outbox (webhooks, escalation notices, task updates), mixed into `Sayso`.

Events are committed with the writes that cause them, by any process; senders (webhooks, the
channels, A2A pushes) claim their deliveries here, settle them, keep their claims, and prune
what is done with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._config.file import Config
from .._store import DeliveryStatus
from ..exceptions import UsageError
from ._kernel import Kernel

if TYPE_CHECKING:
    from ._outbox import EscalationNotice, OutboundEvent, RunUpdate  # the verbs import it when called


class OutboxVerbs:
    """The facade's verbs of the outbox (mixed into `Sayso`)."""

    _k: Kernel
    config: Config

    if TYPE_CHECKING:

        def _check_open(self) -> None: ...  # `Reading`'s: refuses a runtime not open

    async def claim_events(
        self, hooks: Sequence[str], *, lease_seconds: float = 30.0, limit: int = 50
    ) -> list[OutboundEvent]:
        """Claim due webhook deliveries of events committed by any process (the outbox), for this runtime.

        New events are first fanned out to `hooks` (webhook keys; every replica with the same
        config names them the same). A claimed delivery is this runtime's for `lease_seconds`; settle
        it with `settle_event`, or it is claimed again (by anyone) once the claim lapses.
        """
        self._check_open()
        from . import _outbox

        return await _outbox.claim(self._k, hooks, lease_seconds=lease_seconds, limit=limit)

    async def claim_escalations(
        self, hook: str, *, lease_seconds: float = 30.0, limit: int = 50
    ) -> list[EscalationNotice]:
        """Claim due deliveries of escalation steps (`request.escalated`) for the sender `hook` (the channels).

        Each step fired once (by whichever runtime swept) and its event fans out once to each hook; settle a
        claimed one with `settle_event`, or it is claimed again once the claim lapses.
        """
        self._check_open()
        from . import _outbox

        return await _outbox.claim_escalations(self._k, hook, lease_seconds=lease_seconds, limit=limit)

    async def claim_run_updates(
        self, hook: str, *, lease_seconds: float = 30.0, limit: int = 50, marked: str | None = None
    ) -> list[RunUpdate]:
        """Claim due deliveries to `hook` of top-level runs' updates (paused, ended, cancelled) by any process.

        For senders of task updates (A2A push notifications); settle each with `settle_event`. With
        `marked` (a mark namespace, see `set_mark`), the updates of runs with no mark there are passed
        over for good: a sender whose receivers are kept as marks is handed only what it may send.
        """
        self._check_open()
        from . import _outbox

        return await _outbox.claim_run_updates(self._k, hook, lease_seconds=lease_seconds, limit=limit, marked=marked)

    async def settle_event(
        self,
        delivery_id: str,
        *,
        status: DeliveryStatus,
        retry_at: float | None = None,
        error: str | None = None,
    ) -> bool:
        """Record what became of a claimed delivery: `delivered`, `skipped`, `failed`, or `pending` until `retry_at`."""
        self._check_open()
        from . import _outbox

        return await _outbox.settle(self._k, delivery_id, status=status, retry_at=retry_at, error=error)

    async def renew_events(self, delivery_ids: Sequence[str], *, lease_seconds: float = 30.0) -> set[str]:
        """Keep this runtime's claims on deliveries it still works through for `lease_seconds` more.

        Returns the ids it still held: one whose claim lapsed and that another sender took is left to that sender.
        """
        self._check_open()
        from . import _outbox

        return await _outbox.renew(self._k, delivery_ids, lease_seconds=lease_seconds)

    async def prune_events(self, *, retention_days: float | None = None) -> int:
        """Delete webhook events and deliveries done with longer ago than the retention; returns how many rows went.

        Deliveries delivered, skipped or given up on, and events none of whose deliveries is left (or
        that no server with webhooks took), older than `retention_days` (default: the config's
        `webhooks_retention_days`); pending deliveries and their events stay. `sayso serve` calls this
        with its periodic sweep, so a long-lived server's outbox holds only its retention.
        """
        self._check_open()
        days = self.config.webhooks_retention_days if retention_days is None else retention_days
        if not days > 0:
            raise UsageError(f"retention_days must be positive, not {days!r}: it is how long events are kept")
        from . import _outbox

        return await _outbox.prune(self._k, retention_days=days)
