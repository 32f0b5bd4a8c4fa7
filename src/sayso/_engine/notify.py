"""Telling a tool's service how the person decided on its approval request, before the run goes on.

See docs/concepts/pauses.md#tools-whose-service-asks.
"""

from __future__ import annotations

import hashlib
import inspect
import time
from collections.abc import Callable
from typing import Any

import httpx

from .._core.audit import canonical_json
from .._core.service import ServiceNotice
from .._core.signing import delivery_body, secret_problem, signed_headers
from ..exceptions import ConfigError

SERVICE_EVENT = "service.decision"
"""The event a service's decision webhook receives (signed like every sayso webhook)."""


class DecisionNotifier:
    """Calls the configured `on_decision` callable and/or posts a signed webhook with each notice."""

    def __init__(
        self,
        *,
        on_decision: Callable[[ServiceNotice], Any] | None = None,
        webhook_url: str | None = None,
        webhook_secret: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        if webhook_url is not None and not webhook_secret:
            raise ConfigError(f"the decision webhook {webhook_url!r} needs a secret to sign with")
        if webhook_url is not None and webhook_secret and (problem := secret_problem(webhook_secret)) is not None:
            raise ConfigError(f"the decision webhook {webhook_url!r}: {problem}")
        self.on_decision = on_decision
        self.webhook_url = webhook_url
        self.webhook_secret = webhook_secret
        self.timeout = timeout

    @property
    def configured(self) -> bool:
        return self.on_decision is not None or self.webhook_url is not None

    async def notify(self, notice: ServiceNotice) -> str | None:
        """Deliver one notice; returns what went wrong, or `None` when it was delivered."""
        if self.on_decision is not None:
            outcome = self.on_decision(notice)
            if inspect.isawaitable(outcome):
                await outcome
        if self.webhook_url is None:
            return None
        assert self.webhook_secret is not None
        now = time.time()
        # One notice per decided request: its delivery id is the same if it is ever sent again.
        key = canonical_json({k: notice.get(k) for k in ("request", "thread_id", "decision")})
        delivery_id = f"dlv_svc_{hashlib.sha256(key.encode()).hexdigest()[:24]}"
        body = delivery_body(delivery_id=delivery_id, event=SERVICE_EVENT, created_at=now, data=notice)
        headers = signed_headers(self.webhook_secret, body, event=SERVICE_EVENT, delivery_id=delivery_id, now=now)
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                response = await client.post(self.webhook_url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        return None if response.is_success else f"HTTP {response.status_code}"
