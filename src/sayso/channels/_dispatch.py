"""`NoticeDispatcher`: the outbox's notices delivered to rules' `notify` targets, once each, with backoff.

Each request's notice to each target is one outbox delivery (see `sayso._runtime._notices`):
claimed by one server at a time across replicas, sent by the target's channel (email, Slack, a
named webhook), then settled — delivered, retried later with exponential backoff, or given up
on. A delivery whose server died is claimed again once its claim lapses, so a notice survives a
restart. This process's own changes wake the loop at once; other processes' are found by polling.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Literal, Protocol, TypeAlias

import anyio
from anyio.abc import TaskGroup

from .._core.channels import ChannelKind, Target, parse_target
from .._runtime import EventData, OutboundEvent, RequestEvent, Sayso
from ..exceptions import SaysoError

logger = logging.getLogger("sayso.channels")

POLL_SECONDS = 1.0

Outcome: TypeAlias = Literal["delivered", "skipped"]


class NoticeFailed(Exception):
    """A notice was not delivered; `retry` says whether trying again may help."""

    def __init__(self, problem: str, *, retry: bool = True) -> None:
        super().__init__(problem)
        self.retry = retry


class Channel(Protocol):
    """How one kind of target is reached: a notice is delivered, skipped (nothing to say), or fails."""

    max_attempts: int
    backoff_seconds: float
    timeout_seconds: float

    async def deliver(self, target: Target, event: OutboundEvent) -> Outcome:
        """Send what `event` says to `target`.

        Raises:
            NoticeFailed: it did not go out.
        """
        ...


@dataclass
class Counts:
    """What the dispatcher did (for tests and metrics)."""

    delivered: int = 0
    failed: int = 0


class NoticeDispatcher:
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
        self.sayso = sayso
        self.channels = channels
        self.targets = {key: t for key, t in targets.items() if t.channel in channels}
        self._clock = clock
        self._poll = poll_seconds
        self._wake = anyio.Event()
        self._tg: TaskGroup | None = None
        self._stopping = False
        self._stopped = anyio.Event()
        self._drain = drain_seconds
        self.counts = Counts()
        if self.targets:
            sayso.add_listener(self._on_event)

    def _on_event(self, event: RequestEvent, data: EventData) -> None:
        self._wake.set()

    async def __aenter__(self) -> NoticeDispatcher:
        if self.targets:
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
        tg.cancel_scope.cancel()  # a notice still cut off is claimed again once its claim lapses: sent, not lost
        await tg.__aexit__(None, None, None)

    async def _loop(self) -> None:
        try:
            await self._claim_and_send()
        finally:
            self._stopped.set()

    async def _claim_and_send(self) -> None:
        lease = 2 * max(c.timeout_seconds for c in self.channels.values()) + 1
        while not self._stopping:
            self._wake = anyio.Event()
            try:
                claimed = await self.sayso.claim_events(list(self.targets), lease_seconds=lease)
            except SaysoError:
                logger.exception("could not read the outbox; retrying in %ss", self._poll)
                claimed = []
            if claimed:
                by_target: dict[str, list[OutboundEvent]] = {}
                for event in claimed:
                    by_target.setdefault(event.hook, []).append(event)
                async with anyio.create_task_group() as sending:
                    for events in by_target.values():
                        sending.start_soon(self._in_order, events)
                continue
            with anyio.move_on_after(self._poll):
                await self._wake.wait()

    async def _in_order(self, events: list[OutboundEvent]) -> None:
        for event in events:  # one target's notices in the order they were committed: the post before its update
            await self._attempt(event)

    async def _attempt(self, event: OutboundEvent) -> None:
        target = parse_target(event.target) if event.target else self.targets.get(event.hook)
        channel = self.channels.get(target.channel) if target else None
        if target is None or channel is None:
            await self._settle(event, "skipped")
            return
        try:
            with anyio.fail_after(channel.timeout_seconds):
                outcome = await channel.deliver(target, event)
        except (NoticeFailed, TimeoutError, SaysoError) as exc:
            problem, retry = f"{type(exc).__name__}: {exc}", not isinstance(exc, NoticeFailed) or exc.retry
        else:
            if outcome == "delivered":
                self.counts.delivered += 1
            await self._settle(event, outcome)
            return
        attempt = event.attempts + 1
        if not retry or attempt >= channel.max_attempts:
            self.counts.failed += 1
            logger.warning("notice %s to %s failed after %d attempt(s): %s", event.event, target.text, attempt, problem)
            await self._settle(event, "failed", error=problem)
            return
        retry_at = self._clock() + channel.backoff_seconds * 2 ** (attempt - 1)
        await self._settle(event, "pending", retry_at=retry_at, error=problem)

    async def _settle(
        self,
        event: OutboundEvent,
        status: Literal["pending", "delivered", "skipped", "failed"],
        *,
        retry_at: float | None = None,
        error: str | None = None,
    ) -> None:
        try:
            await self.sayso.settle_event(event.delivery_id, status=status, retry_at=retry_at, error=error)
        except SaysoError:
            logger.exception("could not record the notice %s; it will be sent again", event.delivery_id)
