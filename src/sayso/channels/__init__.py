"""Channels where approvers are (docs/guides/channels.md): email with one-click links, Slack, named webhooks.

A rule's `notify` targets each get one notice per request through the store's outbox (once per
request and target, retried, surviving restarts); `channels_router` is what `sayso serve` mounts:
the notice sender in its lifespan, the mailed links' confirm page (`/v1/links/{token}`) and
Slack's interactions endpoint (`/v1/slack/interactions`). Each decision taken here goes through
the runtime's decide verb, recorded with `via` (`email`, `slack`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from .._core.channels import ChannelKind
from ..exceptions import ConfigError

if TYPE_CHECKING:
    from fastapi import APIRouter, FastAPI

    from .._runtime import Sayso
    from ._dispatch import Channel

FORM_PATHS = ("/v1/links/", "/v1/slack/")
"""Paths that take HTML forms (`application/x-www-form-urlencoded`) and authorize by what they carry: a mailed
link's signed token in its path, Slack's signature over its body; never by a cookie a cross-site page could ride."""


def channels_router(sayso: Sayso) -> APIRouter | None:
    """The channels' routes and notice sender, or `None` when no rule names a target.

    Raises:
        ConfigError: a channel's extra is not installed, or a secret it needs is not set.
    """
    from .._config.checks_channels import all_targets

    targets = all_targets(sayso.config)
    kinds = {target.channel for target in targets.values()}
    if not kinds and sayso.config.channels.slack is None:
        return None
    try:
        import anyio
        import httpx
        from fastapi import APIRouter

        from ._dispatch import NoticeDispatcher
        from ._links import links_router
        from ._webhook import WebhookChannel
    except ImportError as exc:  # pragma: no cover - fastapi and httpx are sayso's own dependencies
        raise ConfigError(f"channels need {exc.name}") from exc
    client = httpx.AsyncClient()
    channels: dict[ChannelKind, Channel] = {}
    routers: list[APIRouter] = []
    config = sayso.config.channels
    if "webhook" in kinds:
        channels["webhook"] = WebhookChannel(sayso.config.webhooks, client)
    if "email" in kinds and config.email is not None:
        try:
            from ._email import EmailChannel
        except ImportError as exc:
            raise ConfigError("email notices need aiosmtplib: pip install 'sayso[channels]'") from exc
        channels["email"] = EmailChannel(sayso, config, config.email)
        routers.append(links_router(sayso))
    interactions = None
    if config.slack is not None:
        try:
            from ._interactions import Interactions, interactions_router
            from ._slack import SlackChannel
        except ImportError as exc:
            raise ConfigError("Slack needs slack-sdk and aiohttp: pip install 'sayso[channels]'") from exc
        slack = SlackChannel(sayso, config.slack)
        channels["slack"] = slack
        interactions = Interactions(sayso, slack)
        routers.append(interactions_router(interactions))
    dispatcher = NoticeDispatcher(sayso, channels, targets)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with client, dispatcher, anyio.create_task_group() as tasks:
            if interactions is not None:
                interactions.tasks = tasks
            yield
            tasks.cancel_scope.cancel()

    router = APIRouter(lifespan=lifespan)
    for sub in routers:
        router.include_router(sub)
    return router


__all__ = ["FORM_PATHS", "channels_router"]
