"""Signed webhooks from the store's outbox: every request opened, decided or expired, at least once.

See docs/guides/operations.md#webhooks.

An event is written to the outbox in the same commit as the change it reports, by whichever
process made it (this server, another replica, the CLI, an embedder). `WebhookDispatcher` runs in
every server: it claims due deliveries from the store (one sender per delivery at a time), POSTs
each signed in the Standard Webhooks format (see `sayso._core.signing`), and settles it: delivered, retried
later with exponential backoff, or given up on. A delivery whose sender died is claimed again once
its claim lapses, so events survive restarts and reach the receiver at least once, always under
the same `webhook-id` (receivers drop duplicates by it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from types import TracebackType

import anyio
import httpx
from anyio.abc import TaskGroup

from .._config.file import WebhookConfig, WebhookEvent
from .._core.channels import outbox_key
from .._core.signing import delivery_body, signed_headers, verify_headers
from .._runtime import DeliveryStatus, EventData, OutboundEvent, Sayso
from ..exceptions import SaysoError

logger = logging.getLogger("sayso.server.webhooks")

__all__ = ["WebhookDispatcher", "hook_key", "verify_headers"]

POLL_SECONDS = 1.0
"""How often a server looks for events other processes committed (its own wake it at once)."""


def hook_key(hook: WebhookConfig) -> str:
    """A webhook's key in the outbox: derived from its URL, so every replica with the same config agrees."""
    return outbox_key(hook.url)


class WebhookDispatcher:
    """Delivers outbox events to the configured webhooks while the server runs; use as an async context manager.

    Args:
        sayso: the runtime (opened by the server's lifespan before this starts).
        hooks: the webhooks.
        client: the HTTP client (one is made and closed when not given).
        clock: seconds since the epoch.
        poll_seconds: how often to look for events committed by other processes.
        drain_seconds: how long deliveries in flight get to finish when the server stops (the rest
            are claimed again by the next server once their claim lapses).
    """

    def __init__(
        self,
        sayso: Sayso,
        hooks: Sequence[WebhookConfig],
        *,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
        poll_seconds: float = POLL_SECONDS,
        drain_seconds: float = 10.0,
    ) -> None:
        self.sayso = sayso
        self.hooks = {hook_key(hook): hook for hook in hooks}
        for hook in self.hooks.values():
            hook.signing_secret()  # fail at start-up, not at the first event
        self._client = client
        self._own_client = client is None
        self._clock = clock
        self._poll = poll_seconds
        self._drain = drain_seconds
        self._wake = anyio.Event()
        self._tg: TaskGroup | None = None
        self._stopping = False
        self._stopped = anyio.Event()
        self.delivered = 0
        """Deliveries that got a 2xx answer (for tests and metrics)."""
        self.failed = 0
        """Deliveries given up on after their last attempt."""
        if self.hooks:
            # This process's own changes wake the loop at once; other processes' are found by polling.
            sayso.add_listener(self._on_event)

    def _on_event(self, event: WebhookEvent, data: EventData) -> None:
        self._wake.set()

    async def __aenter__(self) -> WebhookDispatcher:
        if not self.hooks:
            return self
        if self._client is None:
            self._client = httpx.AsyncClient()
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
        tg.cancel_scope.cancel()
        await tg.__aexit__(None, None, None)
        if self._own_client and self._client is not None:
            await self._client.aclose()

    async def _loop(self) -> None:
        # A claim outlives the slowest attempt, so no other server takes a delivery still in flight.
        lease = 2 * max(hook.timeout_seconds for hook in self.hooks.values()) + 1
        try:
            while not self._stopping:
                self._wake = anyio.Event()
                try:
                    claimed = await self.sayso.claim_events(list(self.hooks), lease_seconds=lease)
                except SaysoError:
                    logger.exception("could not read the outbox; retrying in %ss", self._poll)
                    claimed = []
                if claimed:
                    # One webhook's events go in the order they were committed; webhooks run side by side.
                    by_hook: dict[str, list[OutboundEvent]] = {}
                    for event in claimed:
                        by_hook.setdefault(event.hook, []).append(event)
                    async with anyio.create_task_group() as hooks:
                        for events in by_hook.values():
                            hooks.start_soon(self._attempt_in_order, events)
                    continue
                with anyio.move_on_after(self._poll):
                    await self._wake.wait()
        finally:
            self._stopped.set()

    async def _attempt_in_order(self, events: list[OutboundEvent]) -> None:
        for event in events:
            await self._attempt(event)

    async def _attempt(self, event: OutboundEvent) -> None:
        """One attempt at one delivery, settled: delivered, skipped (not subscribed), retried later or given up."""
        assert self._client is not None
        hook = self.hooks.get(event.hook)
        if hook is None or event.event not in hook.events:
            await self._settle(event, "skipped")
            return
        body = delivery_body(
            delivery_id=event.delivery_id, event=event.event, created_at=event.created_at, data=event.data
        )
        headers = signed_headers(
            hook.signing_secret(), body, event=event.event, delivery_id=event.delivery_id, now=self._clock()
        )
        try:
            response = await self._client.post(hook.url, content=body, headers=headers, timeout=hook.timeout_seconds)
        except httpx.HTTPError as exc:
            outcome, retry = f"{type(exc).__name__}: {exc}", True
        else:
            if response.is_success:
                self.delivered += 1
                await self._settle(event, "delivered")
                return
            outcome = f"HTTP {response.status_code}"
            # A 4xx other than timeout/rate-limit says the receiver will never take it.
            retry = response.status_code >= 500 or response.status_code in (408, 429)
        attempt = event.attempts + 1
        if not retry or attempt >= hook.max_attempts:
            self.failed += 1
            logger.warning("webhook %s to %s failed after %d attempt(s): %s", event.event, hook.url, attempt, outcome)
            await self._settle(event, "failed", error=outcome)
            return
        retry_at = self._clock() + hook.backoff_seconds * 2 ** (attempt - 1)
        await self._settle(event, "pending", retry_at=retry_at, error=outcome)

    async def _settle(
        self, event: OutboundEvent, status: DeliveryStatus, *, retry_at: float | None = None, error: str | None = None
    ) -> None:
        try:
            await self.sayso.settle_event(event.delivery_id, status=status, retry_at=retry_at, error=error)
        except SaysoError:
            # The claim lapses and the delivery is tried again: at least once, never lost.
            logger.exception("could not record the delivery %s; it will be sent again", event.delivery_id)
