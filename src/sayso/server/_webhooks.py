"""Signed webhooks (§6.8): an event per request opened, decided or expired, delivered with retries.

Each delivery is a JSON POST signed with HMAC-SHA256 over `"{timestamp}.{body}"`:

```text
Sayso-Event: request.decided
Sayso-Delivery: dlv_…              (the same on every retry, so receivers can drop duplicates)
Sayso-Timestamp: 1767225600        (seconds since the epoch, when this attempt was signed)
Sayso-Signature: sha256=<hex>
```

Receivers check the signature with `verify_signature` and reject old timestamps. Delivery
runs in the background and never delays or fails the API call that caused it; failed
attempts are retried with exponential backoff, and what is still pending at shutdown gets
a bounded grace period. Events are not persisted: a process that dies loses undelivered ones.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import anyio
import httpx
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._config import WebhookConfig, WebhookEvent

logger = logging.getLogger("sayso.server.webhooks")


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The `Sayso-Signature` value for `body` sent at `timestamp`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"


def verify_signature(
    secret: str,
    body: bytes,
    *,
    timestamp: str,
    signature: str,
    tolerance_seconds: float = 300,
    now: float | None = None,
) -> bool:
    """Whether a delivery is genuine and recent: for receivers of sayso's webhooks."""
    if not timestamp.isdigit():
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance_seconds:
        return False
    return hmac.compare_digest(sign(secret, int(timestamp), body), signature)


@dataclass(frozen=True, kw_only=True)
class Delivery:
    """One event bound for one webhook."""

    delivery_id: str
    event: WebhookEvent
    body: bytes
    hook: WebhookConfig


class WebhookEmitter:
    """Delivers events to the configured webhooks in the background; use as an async context manager.

    Leaving the context stops taking events and gives pending deliveries (retries included)
    up to `drain_seconds` to finish.
    """

    def __init__(
        self,
        hooks: Sequence[WebhookConfig],
        *,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
        drain_seconds: float = 10.0,
    ) -> None:
        self.hooks = list(hooks)
        for hook in self.hooks:
            hook.signing_secret()  # fail at start-up, not at the first event
        self._client = client
        self._own_client = client is None
        self._clock = clock
        self._drain = drain_seconds
        self._send: MemoryObjectSendStream[Delivery] | None = None
        self._receive: MemoryObjectReceiveStream[Delivery] | None = None
        self._tg: TaskGroup | None = None
        self._pending = 0
        self.delivered = 0
        """Deliveries that got a 2xx answer (for tests and metrics)."""
        self.failed = 0
        """Deliveries given up on after their last attempt."""

    async def __aenter__(self) -> WebhookEmitter:
        if not self.hooks:
            return self
        if self._client is None:
            self._client = httpx.AsyncClient()
        self._send, self._receive = anyio.create_memory_object_stream[Delivery](max_buffer_size=math.inf)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._dispatch, self._receive)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._tg is None:
            return
        assert self._send is not None
        self._send.close()
        with anyio.move_on_after(self._drain):
            while self._pending:
                await anyio.sleep(0.02)
        if self._pending:
            logger.warning("%d webhook deliveries still pending at shutdown were dropped", self._pending)
        tg, self._tg = self._tg, None
        tg.cancel_scope.cancel()
        await tg.__aexit__(None, None, None)
        if self._own_client and self._client is not None:
            await self._client.aclose()

    def wants(self, event: WebhookEvent) -> bool:
        """Whether some webhook is subscribed to `event` (so its data is worth gathering)."""
        return any(event in hook.events for hook in self.hooks)

    def emit(self, event: WebhookEvent, data: dict[str, Any]) -> None:
        """Queue `event` for every webhook subscribed to it; never blocks and never raises."""
        if self._send is None:
            return
        created_at = self._clock()
        for hook in self.hooks:
            if event not in hook.events:
                continue
            delivery_id = f"dlv_{secrets.token_urlsafe(12)}"
            body = json.dumps(
                {"id": delivery_id, "type": event, "created_at": created_at, "data": data}, separators=(",", ":")
            ).encode()
            try:
                self._send.send_nowait(Delivery(delivery_id=delivery_id, event=event, body=body, hook=hook))
                self._pending += 1
            except anyio.ClosedResourceError:
                logger.warning("webhook event %s emitted during shutdown was dropped", event)

    async def _dispatch(self, receive: MemoryObjectReceiveStream[Delivery]) -> None:
        assert self._tg is not None
        tg = self._tg
        async with receive:
            async for delivery in receive:
                tg.start_soon(self._deliver, delivery)

    async def _deliver(self, delivery: Delivery) -> None:
        try:
            await self._attempts(delivery)
        finally:
            self._pending -= 1

    async def _attempts(self, delivery: Delivery) -> None:
        assert self._client is not None
        hook = delivery.hook
        for attempt in range(1, hook.max_attempts + 1):
            timestamp = int(self._clock())
            headers = {
                "Content-Type": "application/json",
                "User-Agent": "sayso-webhooks",
                "Sayso-Event": delivery.event,
                "Sayso-Delivery": delivery.delivery_id,
                "Sayso-Timestamp": str(timestamp),
                "Sayso-Signature": sign(hook.signing_secret(), timestamp, delivery.body),
            }
            try:
                response = await self._client.post(
                    hook.url, content=delivery.body, headers=headers, timeout=hook.timeout_seconds
                )
            except httpx.HTTPError as exc:
                outcome = f"{type(exc).__name__}: {exc}"
                retry = True
            else:
                if response.is_success:
                    self.delivered += 1
                    return
                outcome = f"HTTP {response.status_code}"
                # A 4xx other than timeout/rate-limit says the receiver will never take it.
                retry = response.status_code >= 500 or response.status_code in (408, 429)
            if not retry or attempt == hook.max_attempts:
                self.failed += 1
                logger.warning(
                    "webhook %s to %s failed after %d attempt(s): %s", delivery.event, hook.url, attempt, outcome
                )
                return
            await anyio.sleep(hook.backoff_seconds * 2 ** (attempt - 1))
