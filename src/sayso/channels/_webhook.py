"""`webhook:NAME` targets: a request's notice POSTed to a named `webhooks:` entry, in the Standard Webhooks format.

The body is sayso's delivery body (`type: request.notify`, the request as every interface shows
it), signed with the webhook's secret by `sayso._core.signing`, under the delivery's id on every
attempt, so a receiver drops a duplicate by its `webhook-id`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import httpx

from .._config.file import WebhookConfig
from .._core.channels import Target
from .._core.signing import delivery_body, signed_headers
from .._runtime import OutboundEvent
from ._dispatch import NoticeFailed, Outcome

NOTICE_EVENT = "request.notify"


class WebhookChannel:
    """Sends notices of opened requests to the webhooks rules name, each tried as its `webhooks:` entry says."""

    max_attempts = 6
    backoff_seconds = 2.0
    timeout_seconds = 10.0

    def __init__(
        self, hooks: Sequence[WebhookConfig], client: httpx.AsyncClient, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.hooks = {hook.name: hook for hook in hooks if hook.name}
        for hook in self.hooks.values():
            hook.signing_secret()
        self.client = client
        self._clock = clock
        self.timeout_seconds = max([WebhookChannel.timeout_seconds, *(h.timeout_seconds for h in self.hooks.values())])

    def delivery(self, target: Target) -> WebhookConfig | WebhookChannel:
        """The named webhook's own attempts, backoff and timeout (`webhooks:`); the channel's for a name it lacks."""
        return self.hooks.get(target.address) or self

    async def deliver(self, target: Target, event: OutboundEvent) -> Outcome:
        hook = self.hooks.get(target.address)
        if hook is None:
            raise NoticeFailed(f"no webhook is named {target.address!r}", retry=False)
        if event.event not in ("request.opened", "request.escalated") or not event.still_open:
            return "skipped"  # decisions reach webhooks subscribed to them (`events:`)
        data = {**event.data, **({"escalation": event.reason} if event.reason else {})}
        body = delivery_body(delivery_id=event.delivery_id, event=NOTICE_EVENT, created_at=event.created_at, data=data)
        headers = signed_headers(
            hook.signing_secret(), body, event=NOTICE_EVENT, delivery_id=event.delivery_id, now=self._clock()
        )
        try:
            response = await self.client.post(hook.url, content=body, headers=headers, timeout=hook.timeout_seconds)
        except httpx.HTTPError as exc:
            raise NoticeFailed(f"{type(exc).__name__}: {exc}") from exc
        if not response.is_success:
            retry = response.status_code >= 500 or response.status_code in (408, 429)
            raise NoticeFailed(f"HTTP {response.status_code}", retry=retry)
        return "delivered"
