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

import httpx

from .._config.file import WebhookConfig
from .._core.channels import outbox_key
from .._core.signing import delivery_body, signed_headers, verify_headers
from .._runtime import OutboundEvent, OutboxSender, Sayso

logger = logging.getLogger("sayso.server.webhooks")

__all__ = ["WebhookDispatcher", "hook_key", "verify_headers"]

POLL_SECONDS = 1.0
"""How often a server looks for events other processes committed (its own wake it at once)."""
# The claim, the order, the settling, the backoff and the drain: `sayso._runtime._sender.OutboxSender`.


def hook_key(hook: WebhookConfig) -> str:
    """A webhook's key in the outbox: derived from its URL, so every replica with the same config agrees."""
    return outbox_key(hook.url)


class WebhookDispatcher(OutboxSender):
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
        self.hooks = {hook_key(hook): hook for hook in hooks}
        for hook in self.hooks.values():
            hook.signing_secret()  # fail at start-up, not at the first event
        self._client = client
        self._own_client = client is None
        super().__init__(
            sayso,
            list(self.hooks),
            timeout_seconds=max((hook.timeout_seconds for hook in self.hooks.values()), default=0.0),
            logger=logger,
            clock=clock,
            poll_seconds=poll_seconds,
            drain_seconds=drain_seconds,
        )

    async def _opened(self) -> None:
        if self._client is None:
            self._client = httpx.AsyncClient()

    async def _closed(self) -> None:
        if self._own_client and self._client is not None:
            await self._client.aclose()

    async def attempt(self, event: OutboundEvent) -> None:
        """One attempt at one delivery, settled: delivered, skipped (not subscribed), retried later or given up."""
        assert self._client is not None
        hook = self.hooks.get(event.hook)
        if hook is None or event.event not in hook.events:
            await self.settle(event, "skipped")
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
                await self.settle(event, "delivered")
                return
            outcome = f"HTTP {response.status_code}"
            # A 4xx other than timeout/rate-limit says the receiver will never take it.
            retry = response.status_code >= 500 or response.status_code in (408, 429)
        await self.retry_or_give_up(event, outcome, retry=retry, policy=hook, to=f"webhook {hook.url}")
