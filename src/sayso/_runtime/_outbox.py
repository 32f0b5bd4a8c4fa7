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
from typing import TYPE_CHECKING, Literal

from .._config.checks_channels import all_targets
from .._core.channels import Target
from .._core.escalation import EscalationStep
from .._core.requests import ApprovalRequest, DelegateRequest, InputRequest, Request, RuleTerms
from .._core.votes import Vote
from .._store import PRUNED_AT_ONCE, DeliveryStatus, OutboxKind, PendingDelivery
from . import _notices
from ._events import EventData, RequestEvent, decided_event, opened_data, voted_data

if TYPE_CHECKING:
    from ._kernel import Kernel


@dataclass(frozen=True, kw_only=True)
class OutboundEvent:
    """One event claimed for one webhook: what to send, and the ids that make a retry recognisable."""

    delivery_id: str
    """The same on every attempt and from every sender: receivers drop duplicates by it."""
    hook: str
    """The webhook's key, as the sender named it when claiming."""
    event: RequestEvent | Literal["request.voted", "request.escalated"]
    """What happened; `request.voted` (one vote toward a quorum) reaches webhooks only, `request.escalated` (a step
    of the rule's `escalate:` fired) notices only."""
    created_at: float
    """When the change was committed."""
    data: EventData
    """The request (and for a decision: the decision, who took it and the principal)."""
    attempts: int
    """Attempts made before this one."""
    target: str | None = None
    """For a notice (a delivery to a rule's `notify` target, not a webhook): the target, `email:ADDRESS` and so on."""
    still_open: bool = True
    """Whether the request still waits for a decision (a notice of a decided request updates, never asks)."""
    reason: str | None = None
    """For `request.escalated`: the step in words (`no decision after 1h: notify slack:#ops`)."""


async def claim(k: Kernel, hooks: Sequence[str], *, lease_seconds: float, limit: int) -> list[OutboundEvent]:
    """Fan new events out to `hooks`, claim due deliveries for this runtime, and build what each says.

    Events about a delegate's own call (not a request for a person) are settled as skipped here, as are
    notices for targets the request's rule does not name, and a request's opening announced to a target
    once it is decided. Events are fanned out to every destination of the config as well as to `hooks`
    (see `_notices`), so webhooks and notices each get theirs whichever sender fans out first.
    """
    now = k.clock()
    await k.store.fan_out_events(hooks=_notices.destinations(k.config, hooks), now=now, kinds=_ANNOUNCED)
    claimed = await k.store.claim_deliveries(
        holder=k.holder, now=now, until=now + lease_seconds, limit=limit, hooks=hooks
    )
    events: list[OutboundEvent] = []
    notify = all_targets(k.config)
    for pending in claimed:
        built = await _build(k, pending, notify)
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


async def claim_run_updates(
    k: Kernel, hook: str, *, lease_seconds: float, limit: int, marked: str | None = None
) -> list[RunUpdate]:
    """Fan new run updates out to `hook` and claim its due deliveries for this runtime.

    With `marked`, only the updates of runs that have a mark in that namespace are fanned out to `hook`.
    """
    now = k.clock()
    await k.store.fan_out_events(hooks=[hook], now=now, kinds=("run.updated",), marked=marked)
    claimed = await k.store.claim_deliveries(
        holder=k.holder, now=now, until=now + lease_seconds, limit=limit, hooks=[hook]
    )
    return [
        RunUpdate(delivery_id=p.delivery_id, run_id=p.request_id, created_at=p.created_at, attempts=p.attempts)
        for p in claimed
    ]


@dataclass(frozen=True, kw_only=True)
class EscalationNotice:
    """A `request.escalated` event claimed for one sender (the channels): which step of which request fired."""

    delivery_id: str
    """The same on every attempt and from every sender: receivers drop duplicates by it."""
    request: ApprovalRequest | InputRequest
    step: int
    """Which step (0 for the first)."""
    escalation: EscalationStep
    """What the step says: remind the approvers, notify these targets, add these approvers."""
    reason: str
    """The step in words: `no decision after 1h: notify slack:#ops`."""
    created_at: float
    attempts: int


async def claim_escalations(k: Kernel, hook: str, *, lease_seconds: float, limit: int) -> list[EscalationNotice]:
    """Fan new `request.escalated` events out to `hook` and claim its due deliveries, each with its step.

    A delivery whose request or step is gone (pruned, or not an approval) is settled as skipped here.
    """
    now = k.clock()
    await k.store.fan_out_events(hooks=[hook], now=now, kinds=("request.escalated",))
    claimed = await k.store.claim_deliveries(
        holder=k.holder, now=now, until=now + lease_seconds, limit=limit, hooks=[hook]
    )
    notices: list[EscalationNotice] = []
    for pending in claimed:
        state = await k.store.get_request(pending.request_id)
        request = state.request if state is not None else None
        step = pending.step
        if not isinstance(request, RuleTerms) or step is None or step >= len(request.escalation):
            await k.store.settle_delivery(pending.delivery_id, holder=k.holder, status="skipped", now=k.clock())
            continue
        notices.append(
            EscalationNotice(
                delivery_id=pending.delivery_id,
                request=request,
                step=step,
                escalation=request.escalation[step],
                reason=request.escalation[step].said,
                created_at=pending.created_at,
                attempts=pending.attempts,
            )
        )
    return notices


async def settle(
    k: Kernel, delivery_id: str, *, status: DeliveryStatus, retry_at: float | None = None, error: str | None = None
) -> bool:
    """Record what became of a delivery this runtime claimed; `False` when its claim was lost meanwhile."""
    return await k.store.settle_delivery(
        delivery_id, holder=k.holder, status=status, now=k.clock(), retry_at=retry_at, error=error
    )


async def renew(k: Kernel, delivery_ids: Sequence[str], *, lease_seconds: float) -> set[str]:
    """Extend this runtime's claims on `delivery_ids`; returns those it still held."""
    return await k.store.renew_deliveries(delivery_ids, holder=k.holder, until=k.clock() + lease_seconds)


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


_ANNOUNCED: tuple[OutboxKind, ...] = ("request.opened", "request.decided", "request.voted", "request.escalated")
"""The events `claim` fans out: webhooks take the first three (an escalation is not among their events), notices
all but the votes (a channel's message shows a decision, not each vote toward it)."""


async def _build(k: Kernel, pending: PendingDelivery, notify: dict[str, Target]) -> OutboundEvent | None:
    state = await k.store.get_request(pending.request_id)
    if state is None or isinstance(state.request, DelegateRequest):
        return None
    target = notify.get(pending.hook)
    if pending.kind == "request.escalated":
        return _escalated(k, pending, state.request, target, decided=state.decision is not None, votes=state.votes)
    if pending.kind == "request.voted":
        return None if target is not None else await _voted(k, pending, state.request)
    if target is not None:
        if target.text not in _notices.notify_targets(k.config, state.request):
            return None
        if pending.kind == "request.opened" and state.decision is not None:
            return None  # decided before its notice went out: nobody needs asking
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
        target=target.text if target is not None else None,
        still_open=state.decision is None,
    )


async def _voted(k: Kernel, pending: PendingDelivery, request: Request) -> OutboundEvent | None:
    """A vote's webhook event: the request as it stood once the vote was cast, and the vote."""
    votes = (await k.store.votes([request.request_id])).get(request.request_id, ())
    seq = pending.step
    if seq is None or seq >= len(votes):
        return None  # its request's votes are gone (pruned): nothing left to say
    return OutboundEvent(
        delivery_id=pending.delivery_id,
        hook=pending.hook,
        event="request.voted",
        created_at=pending.created_at,
        data=voted_data(request, votes, seq),
        attempts=pending.attempts,
    )


def _escalated(
    k: Kernel,
    pending: PendingDelivery,
    request: Request,
    target: Target | None,
    *,
    decided: bool,
    votes: Sequence[Vote],
) -> OutboundEvent | None:
    """An escalation step's notice, to the step's targets (and the rule's, for a reminder) while the request waits.

    It shows the request with its quorum: an edit vote since the opening changed the arguments a notice must show.
    """
    step = pending.step
    if decided or not isinstance(request, RuleTerms) or step is None or step >= len(request.escalation):
        return None
    if target is not None and target.text not in _notices.step_targets(k.config, request, step, votes):
        return None
    return OutboundEvent(
        delivery_id=pending.delivery_id,
        hook=pending.hook,
        event="request.escalated",
        created_at=pending.created_at,
        data=opened_data(request, votes),
        attempts=pending.attempts,
        target=target.text if target is not None else None,
        reason=request.escalation[step].said,
    )
