"""sayso as an A2A *client* of kagent's HITL extension: remote delegates (§5).

A message goes to the remote agent with the extension activated; a task that comes back in
`input-required` carries `tool_approval_request` or `ask_user_request`, which become
`RemoteAsk`s; the person's decisions go back as `tool_approval_response` / `ask_user_response`.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

from ..._core.decisions import Answer, Approve, Decision, Reject, model_text
from ..._core.requests import Question
from ..._runtime import RemoteAsk, RemoteOutcome
from ._mapping import HITL_URI, json_of

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
        message.parts.append(Part(text="Decided."))
        message.extensions.append(HITL_URI)
        message.metadata.update({HITL_URI: response_payload(decisions)})
        return await self._send(url, message)

    async def _send(self, url: str, message: Message) -> RemoteOutcome:
        async with httpx.AsyncClient(timeout=self.timeout) as http:
            client = await create_client(url, client_config=ClientConfig(streaming=False, httpx_client=http))
            try:
                events = [e async for e in client.send_message(SendMessageRequest(message=message), context=_HITL)]
            finally:
                await client.close()
        last = events[-1]
        task = last.task if last.HasField("task") else None
        status = task.status if task is not None else last.status_update.status
        task_id = task.id if task is not None else last.status_update.task_id
        context_id = task.context_id if task is not None else last.status_update.context_id
        text = " ".join(p.text for p in status.message.parts if p.text)
        if status.state == TaskState.TASK_STATE_COMPLETED:
            return RemoteOutcome(status="completed", task_id=task_id, context_id=context_id, text=text)
        if status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            payload = json_of(status.message.metadata).get(HITL_URI)
            asks = asks_of(payload) if isinstance(payload, dict) else ()
            if asks:
                return RemoteOutcome(status="paused", task_id=task_id, context_id=context_id, text=text, asks=asks)
            text = f"the remote agent waits for input it did not describe: {text}"
        return RemoteOutcome(status="failed", task_id=task_id, context_id=context_id, text=text or "no answer")


def asks_of(payload: dict[str, Any]) -> tuple[RemoteAsk, ...]:
    """What a paused remote task waits on: the *visible* tools of its request (`nested.tools` when nested)."""
    nested = payload.get("nested") if isinstance(payload.get("nested"), dict) else None
    if payload.get("type") == "ask_user_request":
        if nested is not None:
            tools = nested.get("tools") or []
            ask_id = str(tools[0]["id"]) if tools else str(payload.get("id"))
        else:
            ask_id = str(payload.get("id"))
        questions = tuple(
            Question(
                question=str(q.get("question", "")),
                choices=tuple(str(c) for c in q.get("choices") or ()),
                multiple=bool(q.get("multiple", False)),
            )
            for q in payload.get("questions") or ()
            if isinstance(q, dict)
        )
        return (RemoteAsk(kind="question", ask_id=ask_id, tool_name="ask_user", questions=questions),)
    if payload.get("type") == "tool_approval_request":
        tools = (nested or payload).get("tools") or []
        return tuple(
            RemoteAsk(
                kind="approval",
                ask_id=str(t["id"]),
                tool_name=str(t.get("name") or "tool"),
                args=dict(t.get("args") or {}),
                hint=payload.get("hint"),
            )
            for t in tools
            if isinstance(t, dict) and t.get("id")
        )
    return ()


def response_payload(decisions: list[tuple[RemoteAsk, Decision]]) -> dict[str, Any]:
    """The kagent response that carries the person's decisions down to the remote task."""
    first, decision = decisions[0]
    if first.kind == "question":
        if isinstance(decision, Answer):
            answers = [{"answer": list(a)} for a in decision.answers]
        else:
            answers = [{"answer": [_declined(decision)]} for _ in first.questions or ((),)]
        return {"type": "ask_user_response", "id": first.ask_id, "answers": answers}
    approvals = []
    for ask, choice in decisions:
        if isinstance(choice, Approve):
            approvals.append({"id": ask.ask_id, "approved": True})
        else:
            approvals.append({"id": ask.ask_id, "approved": False, "rejection_reason": _declined(choice)})
    return {"type": "tool_approval_response", "approvals": approvals}


def _declined(decision: Decision) -> str:
    if isinstance(decision, Reject) and decision.reason:
        return decision.reason
    return model_text(decision) or "declined"
