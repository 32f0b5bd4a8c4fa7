"""sayso as an A2A *client* of kagent's HITL: remote delegates (docs/guides/a2a.md#remote-agents-as-delegates).

A message goes to the remote agent with the v1 extension requested (always: a kagent 0.x agent
ignores it); a task that comes back in `input-required` carries a v1 request or kagent 0.x
DataParts, which become `RemoteAsk`s; the person's decisions go back in the same form. The
a2a-sdk's client speaks A2A 1.0 or 0.3, whichever the remote card declares.
"""

from __future__ import annotations

import uuid

import httpx
from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest

from ..._core.decisions import Decision
from ..._runtime import RemoteAsk, RemoteOutcome
from ._mapping import HITL_URI, answer_message, remote_outcome

_HITL = ClientCallContext(service_parameters={"A2A-Extensions": HITL_URI})


class A2ARemoteAgents:
    """Talks to remote A2A agents with the a2a-sdk client, one short connection per message."""

    def __init__(self, *, timeout: float = 300.0) -> None:
        self.timeout = timeout

    async def start(self, url: str, text: str) -> RemoteOutcome:
        message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER)
        message.parts.append(Part(text=text))
        return await self._send(url, message)

    async def answer(
        self, url: str, *, task_id: str, context_id: str, decisions: list[tuple[RemoteAsk, Decision]]
    ) -> RemoteOutcome:
        message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, task_id=task_id, context_id=context_id)
        answer_message(message, decisions)
        return await self._send(url, message)

    async def _send(self, url: str, message: Message) -> RemoteOutcome:
        async with httpx.AsyncClient(timeout=self.timeout) as http:
            client = await create_client(url, client_config=ClientConfig(streaming=False, httpx_client=http))
            try:
                events = [e async for e in client.send_message(SendMessageRequest(message=message), context=_HITL)]
            finally:
                await client.close()
        last = events[-1]
        if last.HasField("task"):
            return remote_outcome(last.task.status, task_id=last.task.id, context_id=last.task.context_id)
        update = last.status_update
        return remote_outcome(update.status, task_id=update.task_id, context_id=update.context_id)
