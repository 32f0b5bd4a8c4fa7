"""The outbox, read for webhooks: events committed with their changes, claimed and settled by a sender.

The store writes an outbox event in the same commit as each request it saves and each decision it
records, whichever process made the change (a server, the CLI, a Python embedder). A sender (the
server's webhook dispatcher) fans events out to its webhooks, claims due deliveries, sends them
and settles each; a delivery left by a sender that died is claimed again once its claim lapses,
so every event is delivered at least once, under the same delivery id. What is done with is pruned
once older than the retention (`webhooks_retention_days`). A top-level run's pause, end or
cancellation is an event too (`run.updated`), claimed by A2A push notifications, never by webhooks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._core.requests import DelegateRequest
from .._store import PRUNED_AT_ONCE, DeliveryStatus, PendingDelivery
from ._events import EventData, RequestEvent, decided_event, opened_data

if TYPE_CHECKING:
    from ._kernel import Kernel


@dataclass(frozen=True, kw_only=True)
class OutboundEvent:
    """One event claimed for one webhook: what to send, and the ids that make a retry recognisable."""

    delivery_id: str
    """The same on every attempt and from every sender: receivers drop duplicates by it."""
    hook: str
    """The webhook's key, as the sender named it when claiming."""
    event: RequestEvent
    created_at: float
    """When the change was committed."""
    data: EventData
    """The request (and for a decision: the decision, who took it and the principal)."""
    attempts: int
    """Attempts made before this one."""


async def claim(k: Kernel, hooks: Sequence[str], *, lease_seconds: float, limit: int) -> list[OutboundEvent]:
    """Fan new events out to `hooks`, claim due deliveries for this runtime, and build what each says.

    Events about a delegate's own call (not a request for a person) are settled as skipped here.
    """
    now = k.clock()
    await k.store.fan_out_events(hooks=hooks, now=now)
    claimed = await k.store.claim_deliveries(
        holder=k.holder, now=now, until=now + lease_seconds, limit=limit, hooks=hooks
    )
    events: list[OutboundEvent] = []
    for pending in claimed:
        built = await _build(k, pending)
        if built is None:
            await k.store.settle_delivery(pending.delivery_id, holder=k.holder, status="skipped", now=k.clock())
        else:
            events.append(built)
    return events


@dataclass(frozen=True, kw_only=True)
class RunUpdate:
    """A top-level run paused, ended or was cancelled, claimed for one sender (A2A push notifications)."""

    delivery_id: str
    """The same on every attempt and from every sender: receivers drop duplicates by it."""
    run_id: str
    created_at: float
    """When the change was committed."""
    attempts: int
    """Attempts made before this one."""


async def claim_run_updates(k: Kernel, hook: str, *, lease_seconds: float, limit: int) -> list[RunUpdate]:
    """Fan new run updates out to `hook` and claim its due deliveries for this runtime."""
    now = k.clock()
    await k.store.fan_out_events(hooks=[hook], now=now, kinds=("run.updated",))
    claimed = await k.store.claim_deliveries(
        holder=k.holder, now=now, until=now + lease_seconds, limit=limit, hooks=[hook]
    )
    return [
        RunUpdate(delivery_id=p.delivery_id, run_id=p.request_id, created_at=p.created_at, attempts=p.attempts)
        for p in claimed
    ]


async def settle(
    k: Kernel, delivery_id: str, *, status: DeliveryStatus, retry_at: float | None = None, error: str | None = None
) -> bool:
    """Record what became of a delivery this runtime claimed; `False` when its claim was lost meanwhile."""
    return await k.store.settle_delivery(
        delivery_id, holder=k.holder, status=status, now=k.clock(), retry_at=retry_at, error=error
    )


async def prune(k: Kernel, *, retention_days: float) -> int:
    """Delete deliveries settled and events done with more than `retention_days` ago; returns how many went.

    One short transaction per batch, until a batch comes back short, so writers wait on none for long.
    """
    before = k.clock() - retention_days * 86_400
    pruned = 0
    while True:
        batch = await k.store.prune_outbox(before=before, limit=PRUNED_AT_ONCE)
        pruned += batch
        if batch < PRUNED_AT_ONCE:
            return pruned


async def _build(k: Kernel, pending: PendingDelivery) -> OutboundEvent | None:
    state = await k.store.get_request(pending.request_id)
    if state is None or isinstance(state.request, DelegateRequest):
        return None
    if pending.kind == "request.opened":
        event: RequestEvent = "request.opened"
        data = opened_data(state.request)
    elif state.decision is not None:
        event, data = decided_event(state.request, state.decision)
    else:
        return None
    return OutboundEvent(
        delivery_id=pending.delivery_id,
        hook=pending.hook,
        event=event,
        created_at=pending.created_at,
        data=data,
        attempts=pending.attempts,
    )
