"""A2A push notifications: configs kept with sayso's state, deliveries signed like sayso's webhooks.

The a2a-sdk's `PushNotificationConfigStore` is its port for the configs (implemented here over the
runtime's adapter marks, so every replica sees the same configs); each task update is sent from the
outbox by `_push_delivery.PushDispatcher`, through `signing_client`. sayso adds the signature: each
delivery carries the Standard Webhooks headers (`webhook-id`, the delivery's id, the same on every
retry; `webhook-timestamp`, `webhook-signature`, see `sayso._core.signing`), keyed by
`a2a.push_secret_env` when set, else by the config's own `token`, which the receiver chose and so
can check. A config that could not be signed is refused, and where a push may go is
`_push_target`'s rule (public addresses; loopback and private ones with `a2a.push_private_urls`;
link-local and cloud metadata never), checked when the config is made and again at each delivery,
whose connection goes to the very address that was checked. A URL is bounded in length and holds
no credentials (those go in the config's `authentication`, kept apart from a URL that is logged and
listed), and a task keeps a few configs, since each one is delivered on every update.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import urllib.parse
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, NotRequired

import httpx
from a2a.server.context import ServerCallContext
from a2a.server.tasks.push_notification_config_store import (
    PushNotificationConfigStore,
    normalize_push_notification_config,
)
from a2a.types import TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError
from google.protobuf.json_format import MessageToDict, ParseDict
from typing_extensions import TypedDict

from ..._config.file import A2AConfig
from ..._core.access import Principal
from ..._core.signing import ID_HEADER, secret_problem, signature_headers
from ..._runtime import Sayso
from ...exceptions import RunNotFound
from ._push_target import PinnedTransport, PushRefused, checked_address

PUSH_MARKS = "a2a.push"
"""The runtime's mark namespace for a task's push configs (key: the task id)."""

TOKEN_HEADER = "X-A2A-Notification-Token"

MAX_URL_LENGTH = 2048
"""The longest push URL taken: what browsers and proxies reliably carry, far beyond any real receiver's."""

MAX_CONFIGS_PER_TASK = 10
"""The most push configs one task keeps: each is delivered on every task update, so the count multiplies them."""


class MarkPushConfigStore(PushNotificationConfigStore):
    """The SDK's push-config port over the runtime's adapter marks: one JSON list per task, with each owner."""

    def __init__(self, sayso: Sayso, config: A2AConfig, *, caller_state: str) -> None:
        self.sayso = sayso
        self.config = config
        self._caller_state = caller_state

    def _owner(self, context: ServerCallContext) -> str:
        caller = context.state.get(self._caller_state)
        assert isinstance(caller, Principal), "the A2A route authenticates before dispatching"
        return caller.name

    async def _load(self, task_id: str) -> list[_PushEntry]:
        return _entries(await self.sayso.get_mark(PUSH_MARKS, task_id))

    async def set_info(
        self, task_id: str, notification_config: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        stored = normalize_push_notification_config(task_id, notification_config)
        await check_push_config(stored, self.config)
        owner = self._owner(context)

        def added(raw: str | None) -> str:
            entries = [e for e in _entries(raw) if not (e["owner"] == owner and e["config"]["id"] == stored.id)]
            if len(entries) >= MAX_CONFIGS_PER_TASK:
                raise InvalidParamsError(
                    message=f"task {task_id!r} already has {len(entries)} push notification configs, the most it "
                    f"keeps ({MAX_CONFIGS_PER_TASK}); delete one first, or replace one by its id"
                )
            return json.dumps([*entries, {"owner": owner, "config": MessageToDict(stored)}])

        await self.sayso.update_mark(PUSH_MARKS, task_id, added)  # two configs added at once both stay
        return stored

    async def get_info(self, task_id: str, context: ServerCallContext) -> list[TaskPushNotificationConfig]:
        owner = self._owner(context)
        return [_config(e) for e in await self._load(task_id) if e["owner"] == owner]

    async def get_for_dispatch(self, task_id: str) -> list[DispatchConfig]:
        """The task's configs whose owners may see it now, each with the last delivery it took (a retry skips it).

        Who may see a task can change while it runs: an approver of a routed request reads it only while it
        waits on them. A config outlives that, but sends nothing the task's `GetTask` would not show its owner.
        """
        entries = await self._load(task_id)
        seeing = {owner for owner in {e["owner"] for e in entries} if await self._sees(task_id, owner)}
        return [
            DispatchConfig(key=(e["owner"], e["config"]["id"]), config=_config(e), sent=e.get("sent"))
            for e in entries
            if e["owner"] in seeing
        ]

    async def _sees(self, task_id: str, owner: str) -> bool:
        try:
            await self.sayso.run_record(task_id, principal=owner)
        except RunNotFound:
            return False
        return True

    async def mark_sent(self, task_id: str, delivery_id: str, keys: Collection[tuple[str, str]]) -> None:
        """Remember that these configs took `delivery_id`: its retry, for the configs that failed, skips them.

        Only the last delivery is kept per config: a task's earlier update is never retried once a later one exists.
        """
        wanted = set(keys)

        def sent(raw: str | None) -> str:
            entries = _entries(raw)
            for e in entries:
                if (e["owner"], e["config"]["id"]) in wanted:
                    e["sent"] = delivery_id
            return json.dumps(entries)

        await self.sayso.update_mark(PUSH_MARKS, task_id, sent)

    async def delete_info(self, task_id: str, context: ServerCallContext, config_id: str | None = None) -> None:
        owner = self._owner(context)

        def removed(raw: str | None) -> str:
            return json.dumps(
                [
                    e
                    for e in _entries(raw)
                    if not (e["owner"] == owner and (config_id is None or e["config"]["id"] == config_id))
                ]
            )

        await self.sayso.update_mark(PUSH_MARKS, task_id, removed)


@dataclass(frozen=True)
class DispatchConfig:
    """One push config of a task as the dispatcher sends to it."""

    key: tuple[str, str]
    """Its owner and id: what tells it from the task's other configs."""
    config: TaskPushNotificationConfig
    sent: str | None
    """The last delivery it took while another config of the task failed it (`None`: none)."""


class _PushEntry(TypedDict):
    """One push config as kept in the task's mark: whose it is, the config as protobuf JSON, and its last delivery."""

    owner: str
    config: dict[str, Any]
    sent: NotRequired[str]


def _entries(raw: str | None) -> list[_PushEntry]:
    """A task's push configs as its mark keeps them (none: no mark)."""
    entries: list[_PushEntry] = json.loads(raw) if raw else []
    return entries


def _config(entry: _PushEntry) -> TaskPushNotificationConfig:
    return ParseDict(entry["config"], TaskPushNotificationConfig())


async def check_push_config(config: TaskPushNotificationConfig, settings: A2AConfig) -> None:
    """Refuse a push config that could not be signed, or that points somewhere the server must not call.

    Raises:
        InvalidParamsError: no signing key for it, or its URL is too long, carries credentials, or is not a
            reachable public HTTP(S) address.
    """
    if len(config.url) > MAX_URL_LENGTH:
        raise InvalidParamsError(
            message=f"a push notification URL is at most {MAX_URL_LENGTH} characters; this one has {len(config.url)}"
        )
    if not config.url.startswith(("http://", "https://")):
        raise InvalidParamsError(message="a push notification URL must be http(s)")
    if "@" in urllib.parse.urlsplit(config.url).netloc:
        raise InvalidParamsError(
            message="a push notification URL must not carry credentials (user:password@host): "
            "put them in the config's 'authentication', sent as the Authorization header"
        )
    if not settings.push_secret_env and not config.token:
        raise InvalidParamsError(
            message="a push config needs a 'token': deliveries are signed with it (or set a2a.push_secret_env)"
        )
    if config.token and (problem := secret_problem(config.token)) is not None:
        raise InvalidParamsError(message=f"the push config's 'token' cannot sign its deliveries: {problem}")
    try:
        await checked_address(config.url, private_ok=settings.push_private_urls)
    except PushRefused as refused:
        problem = f"the push notification URL is not one this server may call: {refused}"
        raise InvalidParamsError(message=problem) from None


def signing_client(config: A2AConfig, *, timeout: float = 10.0) -> httpx.AsyncClient:
    """An HTTP client whose every request is signed: with the server's push secret, or the config's token."""

    async def sign(request: httpx.Request) -> None:
        secret = os.environ.get(config.push_secret_env, "") if config.push_secret_env else ""
        secret = secret or request.headers.get(TOKEN_HEADER, "")
        if not secret:
            raise httpx.RequestError("no key to sign this push notification with; it is not sent", request=request)
        if (problem := secret_problem(secret)) is not None:  # a config stored before tokens were checked
            raise httpx.RequestError(f"cannot sign this push notification ({problem}); it is not sent", request=request)
        # The dispatcher names the delivery (the same id on every retry), so receivers drop what they had.
        message_id = request.headers.get(ID_HEADER) or f"push_{hashlib.sha256(request.content).hexdigest()[:24]}"
        request.headers.update(signature_headers(secret, request.content, message_id=message_id, now=time.time()))

    transport = PinnedTransport(private_ok=config.push_private_urls)
    return httpx.AsyncClient(timeout=timeout, event_hooks={"request": [sign]}, transport=transport)
