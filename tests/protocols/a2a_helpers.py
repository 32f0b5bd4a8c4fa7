"""Small helpers for the A2A tests: raw JSON-RPC calls through an httpx client, and the a2a-sdk client."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.client.client import Client
from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse

URI = "https://kagent.dev/extensions/hitl/v1"
SAYSO_KEY = "https://sayso.dev/extensions/requests/v1"
"""sayso's own metadata key beside kagent's: the requests a pause shows, the edits and scopes an answer sends."""
HEADERS = {"A2A-Version": "1.0", "A2A-Extensions": URI}
PLAIN = {"A2A-Version": "1.0"}


def user_message(
    text: str | None = None,
    *,
    task_id: str | None = None,
    context_id: str | None = None,
    payload: dict[str, Any] | None = None,
    declare: bool = True,
    data: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A ROLE_USER message in A2A 1.0 JSON."""
    message: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": []}
    if text is not None:
        message["parts"].append({"text": text})
    for body in data or []:
        message["parts"].append({"data": body, "metadata": {}})
    if task_id:
        message["taskId"] = task_id
    if context_id:
        message["contextId"] = context_id
    if payload is not None:
        message["metadata"] = {URI: payload}
        if declare:
            message["extensions"] = [URI]
    return message


async def rpc(
    client: httpx.AsyncClient,
    agent: str,
    method: str,
    params: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    return await client.post(f"/a2a/{agent}", json=body, headers=HEADERS if headers is None else headers)


async def send(client: httpx.AsyncClient, message: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    """SendMessage (blocking); the JSON-RPC response body."""
    response = await rpc(client, "files", "SendMessage", {"message": message}, headers)
    assert response.status_code == 200, response.text
    return response.json()


def task_of(body: dict[str, Any]) -> dict[str, Any]:
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


async def get_task(client: httpx.AsyncClient, task_id: str, headers: dict[str, str] | None = None) -> Any:
    response = await rpc(client, "files", "GetTask", {"id": task_id}, headers)
    return response.json()["result"]


async def stream(
    client: httpx.AsyncClient, message: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[httpx.Headers, list[dict[str, Any]]]:
    """SendStreamingMessage over raw SSE: the response headers and each event's JSON-RPC body."""
    body = {"jsonrpc": "2.0", "id": "s1", "method": "SendStreamingMessage", "params": {"message": message}}
    events: list[dict[str, Any]] = []
    sent = HEADERS if headers is None else headers
    async with client.stream("POST", "/a2a/files", json=body, headers=sent) as response:
        assert response.headers["content-type"].startswith("text/event-stream"), await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
        return response.headers, events


def hitl(message: dict[str, Any]) -> Any:
    return message.get("metadata", {}).get(URI)


async def sdk_client(http: httpx.AsyncClient, *, streaming: bool) -> Client:
    """The a2a-sdk's own client, from the entry agent's card, calling through `http`."""
    return await create_client(str(http.base_url), client_config=ClientConfig(streaming=streaming, httpx_client=http))


def sdk_message(
    text: str | None = None, *, task_id: str = "", context_id: str = "", payload: dict[str, Any] | None = None
) -> SendMessageRequest:
    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, task_id=task_id, context_id=context_id)
    if text is not None:
        message.parts.append(Part(text=text))
    if payload is not None:
        message.extensions.append(URI)
        message.metadata.update({URI: payload})
    return SendMessageRequest(message=message)


HITL_CONTEXT = ClientCallContext(service_parameters={"A2A-Extensions": URI})


async def collect(
    client: Client, request: SendMessageRequest, context: ClientCallContext | None = None
) -> list[StreamResponse]:
    return [event async for event in client.send_message(request, context=context or HITL_CONTEXT)]
