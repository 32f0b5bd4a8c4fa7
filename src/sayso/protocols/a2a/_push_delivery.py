"""A2A push notifications delivered like webhooks: each task update from the outbox, retried, under one delivery id.

Whatever changed a task (an A2A call, a REST decision, the CLI, another replica), the store wrote
a `run.updated` event in the same commit as the change. `PushDispatcher` runs beside the A2A
routes of every server: it claims those events of tasks that have push configs (the others are
passed over once, as they are fanned out), sends the task's status update to each push config of
the task (signed by `_push.signing_client`), and settles the delivery: delivered, skipped (no
config left, or the task changed again since, so that a retry never sends a stale or repeated
state), retried later with exponential backoff, or given up on. A retry goes only to the configs
that failed it: the ones that took it are marked so with the configs. Every attempt carries the same
`webhook-id` (the delivery id), so receivers drop duplicates; a delivery whose sender died is
claimed again once its claim lapses. A batch is sent under a claim kept while it is worked through
(`KeptClaim`), and a task's configs are posted side by side, so one update takes one timeout at most.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import anyio
import httpx
from a2a.types import StreamResponse, TaskPushNotificationConfig, TaskStatusUpdateEvent
from google.protobuf.json_format import MessageToDict

from ..._core.retries import DEFAULT_ATTEMPTS, retry_wait
from ..._core.signing import ID_HEADER
from ..._runtime import KeptClaim, Outage, RunUpdate, Sayso
from ...exceptions import SaysoError
from ._push import PUSH_MARKS, TOKEN_HEADER, DispatchConfig, MarkPushConfigStore
from ._tasks import TaskReader

logger = logging.getLogger("sayso.a2a.push")

HOOK = "a2a.push"
"""The outbox key A2A push notifications are claimed under (the same on every replica)."""

POLL_SECONDS = 1.0
"""How often a server looks for task updates other processes committed (its own wake it at once)."""

MAX_ATTEMPTS = DEFAULT_ATTEMPTS
BACKOFF_SECONDS = 1.0
TIMEOUT_SECONDS = 10.0
LEASE_SECONDS = 2 * TIMEOUT_SECONDS + 1
"""How long a claim lasts (renewed while a batch is worked through): an update's reads, posts and settling."""


class PushDispatcher:
    """Sends every committed task update to its push configs while the A2A routes run (`run` in their task group)."""

    def __init__(
        self,
        sayso: Sayso,
        configs: MarkPushConfigStore,
        tasks: TaskReader,
        http: httpx.AsyncClient,
        *,
        poll_seconds: float = POLL_SECONDS,
        backoff_seconds: float = BACKOFF_SECONDS,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> None:
        self.sayso = sayso
        self.configs = configs
        self.tasks = tasks
        self.http = http
        self._poll = poll_seconds
        self._backoff = backoff_seconds
        self._max_attempts = max_attempts
        self._wake = anyio.Event()
        sayso.add_listener(lambda event, data: self.wake())  # a pause saved or a decision here: look now

    def wake(self) -> None:
        """Look for updates at once (this process just changed a task)."""
        self._wake.set()

    async def run(self) -> None:
        """Claim, send and settle until cancelled (the A2A routes' lifespan ends)."""
        outage = Outage(logger, "reading the outbox for A2A pushes")
        while True:
            self._wake = anyio.Event()
            since = anyio.current_time()
            try:
                # A task nobody set a push config for (most of them) is passed over as its update is fanned out.
                claimed = await self.sayso.claim_run_updates(HOOK, lease_seconds=LEASE_SECONDS, marked=PUSH_MARKS)
            except SaysoError:
                outage.failed(self._poll)
                claimed = []
            else:
                outage.succeeded()
            kept = KeptClaim(
                self.sayso,
                claimed,
                since=since,
                lease_seconds=LEASE_SECONDS,
                attempt_seconds=TIMEOUT_SECONDS,
                logger=logger,
            )
            async for update in kept:
                await self._attempt(update)
            if not claimed:
                with anyio.move_on_after(self._poll):
                    await self._wake.wait()

    async def _attempt(self, update: RunUpdate) -> None:
        try:
            configs = await self.configs.get_for_dispatch(update.run_id)
            run = await self.sayso.run_record(update.run_id)
            if not configs or run.updated_at > update.created_at:
                # No config, or the task changed again since: its later update is the one to send.
                await self.sayso.settle_event(update.delivery_id, status="skipped")
                return
            task = await self.tasks.task(await self.sayso.result(update.run_id))
        except SaysoError:
            logger.exception("could not read task %s for its push; it is tried again", update.run_id)
            return  # the claim lapses and the delivery is claimed again
        event = TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)
        body = MessageToDict(StreamResponse(status_update=event))
        problems: list[str] = []
        took: list[tuple[str, str]] = []

        async def post(config: DispatchConfig) -> None:
            if problem := await self._post(config.config, body, update.delivery_id):
                problems.append(problem)
            else:
                took.append(config.key)

        async with anyio.create_task_group() as posting:  # side by side: one update takes one timeout at most
            for config in configs:
                if config.sent != update.delivery_id:  # a retry: the configs that took it are not sent it again
                    posting.start_soon(post, config)
        if problems and took:
            try:
                await self.configs.mark_sent(update.run_id, update.delivery_id, took)
            except SaysoError:
                logger.warning("could not mark the configs of task %s that took its push", update.run_id, exc_info=True)
        await self._settle(update, problems)

    async def _post(self, config: TaskPushNotificationConfig, body: Mapping[str, Any], delivery_id: str) -> str | None:
        """One POST to one config; what went wrong, or `None` when it was taken."""
        headers = {ID_HEADER: delivery_id}
        if config.token:
            headers[TOKEN_HEADER] = config.token
        if config.HasField("authentication") and config.authentication.scheme and config.authentication.credentials:
            headers["Authorization"] = f"{config.authentication.scheme} {config.authentication.credentials}"
        try:
            response = await self.http.post(config.url, json=body, headers=headers, timeout=TIMEOUT_SECONDS)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        return None if response.is_success else f"HTTP {response.status_code}"

    async def _settle(self, update: RunUpdate, problems: list[str]) -> None:
        attempt = update.attempts + 1
        try:
            if not problems:
                await self.sayso.settle_event(update.delivery_id, status="delivered")
            elif attempt >= self._max_attempts:
                logger.warning("push for task %s failed after %d attempts: %s", update.run_id, attempt, problems)
                await self.sayso.settle_event(update.delivery_id, status="failed", error="; ".join(problems))
            else:
                retry_at = time.time() + retry_wait(self._backoff, attempt)
                await self.sayso.settle_event(
                    update.delivery_id, status="pending", retry_at=retry_at, error="; ".join(problems)
                )
        except SaysoError:
            logger.exception("could not record the push delivery %s; it will be sent again", update.delivery_id)
