"""sayso as an A2A *client* of kagent's HITL: remote delegates (docs/guides/a2a.md#remote-agents-as-delegates).

A message goes to the remote agent with the v1 extension requested (always: a kagent 0.x agent
ignores it); a task that comes back in `input-required` carries a v1 request or kagent 0.x
DataParts, which become `RemoteAsk`s; the person's decisions go back in the same form. The
a2a-sdk's client speaks A2A 1.0 or 0.3, whichever the remote card declares.

A delegate at `grpc://HOST:PORT/NAMESPACE/NAME` is reached over gRPC (the `grpc` extra), the agent
named in the call's `tenant` as kagent's controller expects; no card is fetched for it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import httpx
from a2a.client import ClientCallContext, ClientConfig, ClientFactory, create_client
from a2a.client.client import Client
from a2a.client.errors import A2AClientError, AgentCardResolutionError
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import (
    A2AError,
    MethodNotFoundError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from ..._config.env import env_secret
from ..._config.file import Config
from ..._core.decisions import Decision
from ..._runtime import RemoteAsk, RemoteCutOff, RemoteOutcome, RemoteUnreachable
from ...exceptions import ConfigError
from ._mapping import HITL_URI, answer_message, remote_outcome

_HITL = ClientCallContext(service_parameters={"A2A-Extensions": HITL_URI})

AT_WORK = frozenset({TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING})
"""A task's states while its agent is still at it: asked again later, never read as its end."""


class A2ARemoteAgents:
    """Talks to remote A2A agents with the a2a-sdk client, one short connection per message."""

    def __init__(self, *, timeout: float = 300.0, tokens: Mapping[str, str] | None = None) -> None:
        self.timeout = timeout
        self._tokens = dict(tokens or {})
        """The bearer token sent to each remote agent that takes one, by its URL (`delegates[].token_env`)."""

    @classmethod
    def of(cls, config: Config) -> A2ARemoteAgents:
        """The client of `config`'s remote delegates, each with the token its `token_env` holds.

        Raises:
            ConfigError: a `token_env` is not set, or one URL is given two tokens.
        """
        tokens: dict[str, str] = {}
        for name, spec in config.agents.items():
            for n, delegate in enumerate(spec.delegates):
                if delegate.a2a is None or delegate.token_env is None:
                    continue
                token = env_secret(delegate.token_env, f"agents.{name}.delegates[{n}].token_env")
                if tokens.setdefault(delegate.a2a, token) != token:
                    raise ConfigError(f"agents.{name}.delegates[{n}]: {delegate.a2a} is given two different tokens")
        return cls(tokens=tokens)

    async def start(self, url: str, text: str) -> RemoteOutcome:
        """Hand a new task to the remote agent; where it stands once the agent answers.

        An agent that refuses the message (a bad token, a request it does not take) started nothing:
        the task is failed, naming the refusal.

        Raises:
            RemoteUnreachable: no connection was made, so nothing was sent.
            RemoteCutOff: the message went out but no answer came back: the agent may have started the task.
        """
        message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER)
        message.parts.append(Part(text=text))
        try:
            return await self._send(url, message)
        except A2AClientError as exc:
            if not _refusal(exc):
                raise RemoteCutOff(url, str(exc)) from exc
            refused = _said(exc)
        except A2AError as exc:
            refused = str(exc)
        text = f"the remote agent at {url} refused the task: {refused}"
        return RemoteOutcome(status="failed", task_id="", context_id="", text=text)

    async def answer(
        self, url: str, *, task_id: str, context_id: str, decisions: list[tuple[RemoteAsk, Decision]]
    ) -> RemoteOutcome:
        """Send the decisions down; where the task stands after them.

        An agent that refuses them (its task no longer waits on these asks: it was answered or
        cancelled there, or paused again) is asked where the task stands now, so the caller mirrors
        that instead of waiting on a pause that is gone.

        Raises:
            RemoteUnreachable: no connection was made, so nothing was sent.
            RemoteCutOff: the message went out but no answer came back: the agent may have taken it.
        """
        message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, task_id=task_id, context_id=context_id)
        answer_message(message, decisions)
        try:
            return await self._send(url, message)
        except A2AClientError as exc:
            raise RemoteCutOff(url, str(exc)) from exc  # no answer from the agent: whether it took them is not known
        except A2AError as refused:
            return await self._standing(url, task_id, context_id, refused)

    async def standing(self, url: str, *, task_id: str, context_id: str) -> RemoteOutcome:
        """Where a task stands now (GetTask): `working` while it works; failed when the agent no longer has it.

        Raises:
            RemoteUnreachable: no connection was made.
            RemoteCutOff: no usable answer came back.
        """
        return await self._standing(url, task_id, context_id, None)

    async def cancel(self, url: str, *, task_id: str, context_id: str) -> bool:
        """Cancel a task (CancelTask); `False` when the agent cancels no tasks.

        Raises:
            RemoteUnreachable: no connection was made.
            RemoteCutOff: no answer came back.
        """
        try:
            async with self._client(url) as client:
                await client.cancel_task(CancelTaskRequest(id=task_id), context=self._context(url))
        except (TaskNotFoundError, TaskNotCancelableError):
            return True  # the agent no longer has it, or it ended: nothing of it waits on anyone
        except (UnsupportedOperationError, MethodNotFoundError):
            return False
        except A2AClientError as exc:
            if isinstance(exc.__cause__, httpx.ConnectError):
                raise RemoteUnreachable(url, str(exc.__cause__) or "no connection") from exc
            raise RemoteCutOff(url, str(exc)) from exc
        except A2AError as exc:  # the agent answered, but did not cancel
            raise RemoteCutOff(url, f"it did not cancel task {task_id!r} ({exc})") from exc
        return True

    async def _standing(self, url: str, task_id: str, context_id: str, refused: A2AError | None) -> RemoteOutcome:
        """Where a task stands now; failed, naming the refusal (`refused`) when the agent no longer has it."""
        try:
            async with self._client(url) as client:
                task = await client.get_task(GetTaskRequest(id=task_id), context=self._context(url))
        except TaskNotFoundError as exc:
            text = f"the remote agent no longer has the task it paused ({refused or exc})"
            return RemoteOutcome(status="failed", task_id=task_id, context_id=context_id, text=text)
        except A2AClientError as exc:
            if isinstance(exc.__cause__, httpx.ConnectError):
                raise RemoteUnreachable(url, str(exc.__cause__) or "no connection") from exc
            raise RemoteCutOff(url, str(exc)) from exc
        except A2AError as exc:  # the agent answered, but not where its task stands
            raise RemoteCutOff(url, f"it did not say where task {task_id!r} stands ({exc})") from exc
        if task.status.state in AT_WORK:
            return RemoteOutcome(status="working", task_id=task.id, context_id=task.context_id)
        return remote_outcome(task.status, task_id=task.id, context_id=task.context_id)

    async def _send(self, url: str, message: Message) -> RemoteOutcome:
        """Send one message and read where its task stands.

        Raises:
            RemoteUnreachable: no connection to the agent (or to its card) was made, so nothing was sent.
        """
        async with self._client(url) as client:
            try:
                sent = client.send_message(SendMessageRequest(message=message), context=self._context(url))
                events = [e async for e in sent]
            except A2AClientError as exc:
                if isinstance(exc.__cause__, httpx.ConnectError):
                    raise RemoteUnreachable(url, str(exc.__cause__) or "no connection") from exc
                raise
        last = events[-1]
        if last.HasField("task"):
            return remote_outcome(last.task.status, task_id=last.task.id, context_id=last.task.context_id)
        update = last.status_update
        return remote_outcome(update.status, task_id=update.task_id, context_id=update.context_id)

    def _context(self, url: str) -> ClientCallContext:
        asked = {**(_HITL.service_parameters or {}), **self._auth(url)}
        return ClientCallContext(service_parameters=asked, timeout=self.timeout)

    def _auth(self, url: str) -> dict[str, str]:
        """The `Authorization` header (gRPC metadata) for the agent at `url`, when it takes a token."""
        token = self._tokens.get(url)
        return {"Authorization": f"Bearer {token}"} if token else {}

    @asynccontextmanager
    async def _client(self, url: str) -> AsyncIterator[Client]:
        """An a2a-sdk client of the agent at `url`, for one exchange.

        Raises:
            RemoteUnreachable: its agent card could not be fetched for want of a connection.
        """
        async with httpx.AsyncClient(timeout=self.timeout, headers=self._auth(url)) as http:
            try:
                if url.startswith(GRPC_SCHEME):
                    client = _grpc_client(url)
                else:
                    client = await create_client(url, client_config=ClientConfig(streaming=False, httpx_client=http))
            except AgentCardResolutionError as exc:
                if isinstance(exc.__cause__, httpx.ConnectError):
                    raise RemoteUnreachable(url, str(exc.__cause__) or "no connection") from exc
                raise
            try:
                yield client
            finally:
                await client.close()


GRPC_SCHEME = "grpc://"


def _refusal(exc: A2AClientError) -> bool:
    """Whether the agent answered the message with a refusal (an HTTP 4xx, a JSON-RPC error): nothing was taken.

    Anything else (the connection broke, a timeout, a 5xx) leaves open whether the agent took it.
    """
    cause = exc.__cause__
    if isinstance(cause, httpx.HTTPStatusError):
        return cause.response.status_code < 500
    code = getattr(cause, "code", None)  # a gRPC status (grpc.aio.AioRpcError), without importing grpc
    if callable(code):
        return getattr(code(), "name", "") in _GRPC_REFUSALS
    return cause is None and str(exc).startswith("JSON-RPC Error")


def _said(exc: A2AClientError) -> str:
    """A refusal in a line: an HTTP status as its code and phrase (httpx's own text adds a help link)."""
    cause = exc.__cause__
    if isinstance(cause, httpx.HTTPStatusError):
        return f"HTTP {cause.response.status_code} {cause.response.reason_phrase}"
    return str(exc)


_GRPC_REFUSALS = frozenset(
    {"INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "FAILED_PRECONDITION", "OUT_OF_RANGE"}
    | {"UNIMPLEMENTED", "UNAUTHENTICATED", "RESOURCE_EXHAUSTED"}
)
"""gRPC statuses by which an agent refuses a message it did not take."""


def _grpc_client(url: str) -> Client:
    """An a2a-sdk client on gRPC for `grpc://HOST:PORT/NAMESPACE/NAME`, the agent named as its tenant.

    Raises:
        ConfigError: the URL names no agent, or the `grpc` extra is not installed.
    """
    address, _, tenant = url.removeprefix(GRPC_SCHEME).partition("/")
    if not address or tenant.count("/") != 1 or not all(tenant.split("/")):
        raise ConfigError(f"a gRPC delegate's URL is grpc://HOST:PORT/NAMESPACE/NAME, not {url!r}")
    try:
        import grpc.aio
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ConfigError(f"the delegate {url!r} is reached over gRPC: pip install 'sayso[grpc]'") from exc
    interface = AgentInterface(url=address, protocol_binding="GRPC", protocol_version="1.0", tenant=tenant)
    card = AgentCard(name=tenant, supported_interfaces=[interface], capabilities=AgentCapabilities(streaming=False))
    config = ClientConfig(
        streaming=False, supported_protocol_bindings=["GRPC"], grpc_channel_factory=grpc.aio.insecure_channel
    )
    return ClientFactory(config).create(card)
