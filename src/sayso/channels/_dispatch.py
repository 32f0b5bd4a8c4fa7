"""`NoticeDispatcher`: the outbox's notices delivered to rules' `notify` targets, once each, with backoff.

Each request's notice to each target is one outbox delivery (see `sayso._runtime._notices`), sent
by the target's channel (email, Slack, a named webhook); claiming, ordering, settling, backoff and
the drain on exit are every outbox sender's (`sayso._runtime._sender.OutboxSender`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Literal, Protocol, TypeAlias

import anyio

from .._core.channels import ChannelKind, Target, parse_target
from .._runtime import OutboundEvent, OutboxSender, Sayso
from ..exceptions import SaysoError

logger = logging.getLogger("sayso.channels")

POLL_SECONDS = 1.0

Outcome: TypeAlias = Literal["delivered", "skipped"]


class NoticeFailed(Exception):
    """A notice was not delivered; `retry` says whether trying again may help."""

    def __init__(self, problem: str, *, retry: bool = True) -> None:
        super().__init__(problem)
        self.retry = retry


class Delivery(Protocol):
    """How a notice to one target is tried: attempts, the wait before the second, the time one may take."""

    @property
    def max_attempts(self) -> int: ...
    @property
    def backoff_seconds(self) -> float: ...
    @property
    def timeout_seconds(self) -> float: ...


class Channel(Delivery, Protocol):
    """How one kind of target is reached: a notice is delivered, skipped (nothing to say), or fails.

    Its own `Delivery` settings bound every attempt (the dispatcher's claim outlasts the longest).
    """

    def delivery(self, target: Target) -> Delivery:
        """How notices to `target` are tried: the channel's settings, or the target's own (a named webhook's)."""
        ...

    async def deliver(self, target: Target, event: OutboundEvent) -> Outcome:
        """Send what `event` says to `target`.

        Raises:
            NoticeFailed: it did not go out.
        """
        ...


class NoticeDispatcher(OutboxSender):
    """Delivers notices while the server runs; an async context manager, entered by the channels' lifespan."""

    def __init__(
        self,
        sayso: Sayso,
        channels: Mapping[ChannelKind, Channel],
        targets: Mapping[str, Target],
        *,
        clock: Callable[[], float] = time.time,
        poll_seconds: float = POLL_SECONDS,
        drain_seconds: float = 10.0,
    ) -> None:
        self.channels = channels
        self.targets = {key: t for key, t in targets.items() if t.channel in channels}
        super().__init__(
            sayso,
            list(self.targets),
            timeout_seconds=max((c.timeout_seconds for c in channels.values()), default=0.0),
            logger=logger,
            clock=clock,
            poll_seconds=poll_seconds,
            drain_seconds=drain_seconds,
        )

    async def attempt(self, event: OutboundEvent) -> None:
        target = parse_target(event.target) if event.target else self.targets.get(event.hook)
        channel = self.channels.get(target.channel) if target else None
        if target is None or channel is None:
            await self.settle(event, "skipped")
            return
        policy = channel.delivery(target)
        try:
            with anyio.fail_after(policy.timeout_seconds):
                outcome = await channel.deliver(target, event)
        except (NoticeFailed, TimeoutError, SaysoError) as exc:
            problem, retry = f"{type(exc).__name__}: {exc}", not isinstance(exc, NoticeFailed) or exc.retry
        else:
            await self.settle(event, outcome)
            return
        await self.retry_or_give_up(event, problem, retry=retry, policy=policy, to=f"notice {target.text}")
