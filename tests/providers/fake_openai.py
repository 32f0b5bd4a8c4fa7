"""A small OpenAI-compatible chat completions server that plays the files example's LLM, for tests.

It speaks the wire format a real OpenAI-compatible server (Ollama, llama.cpp, vLLM) speaks,
plain JSON and server-sent-event streams alike, so sayso's provider path runs for real:
pydantic-ai's `OpenAIChatModel`, the `openai` SDK, HTTP on 127.0.0.1. Its "model" is a few
rules over the conversation it is sent, the same moves as `examples/files/script.yaml`:

- `list` → calls `list_files`, then replies with the listing;
- `delete NAME` → calls `list_files(prefix=NAME)`; one match → `delete_file`, several →
  `ask_user` which one, none → says so; after `delete_file` it replies with the tool's result.

Every request it receives is kept in `requests`, so a test can assert what the model was told
(a rejection's reason, an edited call's result).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..conftest import free_port


@dataclass
class Turn:
    """What the fake model answers: text, or tool calls (name, arguments)."""

    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def files_model(messages: list[dict[str, Any]]) -> Turn:
    """The files example's moves, decided from the conversation so far."""
    user = next(str(m["content"]) for m in reversed(messages) if m["role"] == "user").strip()
    last = messages[-1]
    if last["role"] == "user":
        if user == "list":
            return Turn(calls=[("list_files", {})])
        if user.startswith("delete "):
            return Turn(calls=[("list_files", {"prefix": user.removeprefix("delete ").strip()})])
        return Turn(text="I understand: list, delete NAME.")
    assert last["role"] == "tool", last
    tool = _tool_name(messages, last["tool_call_id"])
    result = str(last["content"])
    if tool == "list_files" and user == "list":
        return Turn(text=f"Files in the sandbox:\n{result}")
    if tool == "list_files":
        names = [line for line in result.splitlines() if line.strip()]
        if result.startswith("(no files"):
            return Turn(text="There is no file starting with that name, so I deleted nothing.")
        if len(names) == 1:
            return Turn(calls=[("delete_file", {"name": names[0]})])
        question = {"question": "Several files match. Which one should I delete?", "choices": names}
        return Turn(calls=[("ask_user", {"questions": [question]})])
    if tool == "ask_user":
        answers = json.loads(result)
        return Turn(calls=[("delete_file", {"name": answers[0]["answer"][0]})])
    return Turn(text=result)


def _tool_name(messages: list[dict[str, Any]], call_id: str) -> str:
    for message in messages:
        for call in message.get("tool_calls") or []:
            if call["id"] == call_id:
                return str(call["function"]["name"])
    raise AssertionError(f"no tool call {call_id!r} in the conversation")


class FakeOpenAI:
    """The server: `base_url` to point a model at, `requests` it received, `api_key` it expects."""

    def __init__(self, *, api_key: str) -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.port = free_port()
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._completions, methods=["POST"])])
        self._calls = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def tool_messages(self) -> list[str]:
        """The content of every tool result the model was sent, in order, without repeats."""
        seen: list[str] = []
        for body in self.requests:
            for message in body["messages"]:
                if message["role"] == "tool" and message["content"] not in seen:
                    seen.append(message["content"])
        return seen

    async def _completions(self, request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return JSONResponse({"error": {"message": "bad key", "type": "invalid_request_error"}}, status_code=401)
        body = await request.json()
        self.requests.append(body)
        turn = files_model(body["messages"])
        calls = [
            {"id": self._call_id(), "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for n, a in turn.calls
        ]
        finish = "tool_calls" if calls else "stop"
        if body.get("stream"):
            return StreamingResponse(self._chunks(body["model"], turn, calls, finish), media_type="text/event-stream")
        message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if calls:
            message["tool_calls"] = calls
        return JSONResponse(
            {
                "id": f"chatcmpl-{self._calls}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )

    async def _chunks(self, model: str, turn: Turn, calls: list[dict[str, Any]], finish: str) -> AsyncIterator[str]:
        """The same answer as server-sent events: text in pieces, each call's arguments split across chunks."""

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
            payload = {
                "id": f"chatcmpl-{self._calls}",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            return f"data: {json.dumps(payload)}\n\n"

        yield chunk({"role": "assistant", "content": ""})
        text = turn.text or ""
        for start in range(0, len(text), 7):
            yield chunk({"content": text[start : start + 7]})
        for index, call in enumerate(calls):
            arguments = call["function"]["arguments"]
            half = len(arguments) // 2
            first = {"index": index, "id": call["id"], "type": "function"}
            yield chunk({"tool_calls": [{**first, "function": {"name": call["function"]["name"], "arguments": ""}}]})
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[:half]}}]})
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]})
        yield chunk({}, finish)
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        last = {"id": "usage", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": []}
        yield f"data: {json.dumps({**last, 'usage': usage})}\n\n"
        yield "data: [DONE]\n\n"

    def _call_id(self) -> str:
        self._calls += 1
        return f"call_{self._calls}"


@contextmanager
def serving(fake: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """Run the fake on its port in a thread of this process; other processes reach it over HTTP too."""
    server = uvicorn.Server(uvicorn.Config(fake.app, host="127.0.0.1", port=fake.port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the fake OpenAI server did not start"
        time.sleep(0.01)
    try:
        yield fake
    finally:
        server.should_exit = True
        thread.join(timeout=10)
