"""`OutboxSender`: the lifecycle every outbox sender shares (webhooks, notices to rules' `notify` targets).

A sender runs while a server runs, as an async context manager. It claims due deliveries of its keys
from the store with a lease that outlives its slowest attempt, renewed while it works through the
batch (`KeptClaim`: one sender per delivery at a time, across replicas), sends each key's deliveries
in the order they were committed (keys side by side; the store holds a request's later events back
while another sender has an earlier one in flight), and settles each: delivered, skipped, retried
later with exponential backoff, or given up on. This process's own changes wake it at once; other
processes' are found by polling. On exit, what is in flight gets `drain_seconds` to finish; a
delivery still cut off is claimed again once its claim lapses, so it is sent (at least once), never
lost. What a delivery *is* (an HTTP POST, a mail, a Slack message) is the subclass's `attempt`.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Generic, Protocol, Self, TypeVar

import anyio
from anyio.abc import TaskGroup

from .._core.retries import retry_wait
from .._store import DeliveryStatus
from ..exceptions import SaysoError
from ._events import EventData, RequestEvent
from ._outage import Outage
from ._outbox import OutboundEvent

if TYPE_CHECKING:
    from ._facade import Sayso

POLL_SECONDS = 1.0
"""How often a sender looks for events other processes committed (its own wake it at once)."""


class Claimed(Protocol):
    """A delivery a sender claimed (an outbound event, a task update)."""

    @property
    def delivery_id(self) -> str: ...


D = TypeVar("D", bound=Claimed)


class KeptClaim(Generic[D]):
    """Deliveries claimed together and sent one after another, handed out while this sender still holds them.

    A claim outlives one attempt, not a batch to a slow receiver: before each delivery the claim is
    renewed unless it surely outlasts one more attempt. What is no longer this sender's (the renewal
    failed, or another sender took a lapsed claim) ends the batch there, so nothing is sent twice at
    once and nothing after it is sent before it. A fast receiver's batch ends before any renewal.

    Args:
        sayso: the runtime that claimed them.
        deliveries: in the order they are to be sent.
        since: `anyio.current_time()` just before the claim was asked for.
        lease_seconds: how long the claim lasts, and each renewal.
        attempt_seconds: the longest one attempt (and its settling) takes.
        logger: where a renewal the store refused is said.
    """

    def __init__(
        self,
        sayso: Sayso,
        deliveries: Sequence[D],
        *,
        since: float,
        lease_seconds: float,
        attempt_seconds: float,
        logger: logging.Logger,
    ) -> None:
        self.sayso = sayso
        self._left = list(deliveries)
        self._until = since + lease_seconds
        self._lease = lease_seconds
        self._attempt = attempt_seconds
        self._log = logger

    async def __aiter__(self) -> AsyncIterator[D]:
        while self._left:
            now = anyio.current_time()
            if now + self._attempt + 1 > self._until and not await self._renew(now):
                return
            yield self._left.pop(0)

    async def _renew(self, now: float) -> bool:
        try:
            held = await self.sayso.renew_events([d.delivery_id for d in self._left], lease_seconds=self._lease)
        except SaysoError:
            self._log.warning(
                "could not keep the claim on %d deliveries; they are sent once it lapses", len(self._left)
            )
            return False
        self._until = now + self._lease
        kept = 0
        while kept < len(self._left) and self._left[kept].delivery_id in held:
            kept += 1
        del self._left[kept:]  # another sender has the rest, from the first it took: its to send, in order
        return kept > 0


class Retries(Protocol):
    """How often a destination is tried (a webhook's config, a notice channel)."""

    @property
    def max_attempts(self) -> int: ...
    @property
    def backoff_seconds(self) -> float: ...


class OutboxSender(ABC):
    """Claims, sends in order and settles the outbox's deliveries for `keys` while it is entered.

    Args:
        sayso: the runtime (opened by the server's lifespan before this starts).
        keys: the outbox keys it sends for; none, and entering it starts nothing.
        timeout_seconds: the slowest attempt; a claim lasts twice that and a second.
        logger: where what could not be read, recorded or sent is said.
        clock: seconds since the epoch.
        poll_seconds: how often to look for events committed by other processes.
        drain_seconds: how long deliveries in flight get to finish on exit.
    """

    def __init__(
        self,
        sayso: Sayso,
        keys: Sequence[str],
        *,
        timeout_seconds: float,
        logger: logging.Logger,
        clock: Callable[[], float] = time.time,
        poll_seconds: float = POLL_SECONDS,
        drain_seconds: float = 10.0,
    ) -> None:
        self.sayso = sayso
        self._keys = list(keys)
        self._lease = 2 * timeout_seconds + 1
        self._timeout = timeout_seconds
        self._log = logger
        self._clock = clock
        self._poll = poll_seconds
        self._drain = drain_seconds
        self._wake = anyio.Event()
        self._tg: TaskGroup | None = None
        self._stopping = False
        self._stopped = anyio.Event()
        self.delivered = 0
        """Deliveries that went out (for tests and metrics)."""
        self.failed = 0
        """Deliveries given up on after their last attempt."""
        if self._keys:
            sayso.add_listener(self._on_event)

    def _on_event(self, event: RequestEvent, data: EventData) -> None:
        self._wake.set()

    async def _opened(self) -> None:
        """What a sender opens before its first attempt (an HTTP client); by default, nothing."""
        return None

    async def _closed(self) -> None:
        """What it closes after its last; by default, nothing."""
        return None

    @abstractmethod
    async def attempt(self, event: OutboundEvent) -> None:
        """One attempt at one delivery, ending in `settle` (directly or through `retry_or_give_up`)."""

    async def __aenter__(self) -> Self:
        if not self._keys:
            return self
        await self._opened()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._loop)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._tg is None:
            return
        tg, self._tg = self._tg, None
        self._stopping = True
        self._wake.set()
        with anyio.move_on_after(self._drain):
            await self._stopped.wait()
        tg.cancel_scope.cancel()  # a delivery still cut off is claimed again once its claim lapses: sent, not lost
        await tg.__aexit__(None, None, None)
        await self._closed()

    async def _loop(self) -> None:
        outage = Outage(self._log, "reading the outbox")
        try:
            while not self._stopping:
                self._wake = anyio.Event()
                since = anyio.current_time()
                try:
                    claimed = await self.sayso.claim_events(self._keys, lease_seconds=self._lease)
                except SaysoError:
                    outage.failed(self._poll)
                    claimed = []
                else:
                    outage.succeeded()
                if claimed:
                    by_key: dict[str, list[OutboundEvent]] = {}
                    for event in claimed:
                        by_key.setdefault(event.hook, []).append(event)
                    async with anyio.create_task_group() as sending:
                        for events in by_key.values():
                            sending.start_soon(self._in_order, events, since)
                    continue
                with anyio.move_on_after(self._poll):
                    await self._wake.wait()
        finally:
            self._stopped.set()

    async def _in_order(self, events: list[OutboundEvent], since: float) -> None:
        kept = KeptClaim(
            self.sayso, events, since=since, lease_seconds=self._lease, attempt_seconds=self._timeout, logger=self._log
        )
        async for event in kept:  # one key's deliveries in the order they were committed: a post before its update
            await self.attempt(event)

    async def retry_or_give_up(
        self, event: OutboundEvent, problem: str, *, retry: bool, policy: Retries, to: str
    ) -> None:
        """Settle a failed attempt: tried again after `retry_wait` (doubling, an hour at most), or given up on."""
        attempt = event.attempts + 1
        if not retry or attempt >= policy.max_attempts:
            self.failed += 1
            self._log.warning("%s to %s failed after %d attempt(s): %s", event.event, to, attempt, problem)
            await self.settle(event, "failed", error=problem)
            return
        retry_at = self._clock() + retry_wait(policy.backoff_seconds, attempt)
        await self.settle(event, "pending", retry_at=retry_at, error=problem)

    async def settle(
        self, event: OutboundEvent, status: DeliveryStatus, *, retry_at: float | None = None, error: str | None = None
    ) -> None:
        """Record how a delivery went; one that cannot be recorded is claimed again once its claim lapses."""
        if status == "delivered":
            self.delivered += 1
        try:
            await self.sayso.settle_event(event.delivery_id, status=status, retry_at=retry_at, error=error)
        except SaysoError:
            self._log.exception("could not record the delivery %s; it will be sent again", event.delivery_id)
