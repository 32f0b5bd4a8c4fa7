"""Fake models for runtime tests, built on pydantic-ai's `FunctionModel` (the scripted model has its own tests).

`calls_then_reply` covers the common case: the model asks for the given tool calls, and once their
results (or the person's refusals) come back it answers with a fixed text. `commands` reads each
message as `<verb> <name>` and calls the verb's tool on that name, answering with what it returned.
`tool_model(route)` calls the tool `route` picks for the user's message (or says the text it returns),
and once it reads the call's result says `read` with the result filled in.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel


def calls_then_reply(*calls: tuple[str, dict[str, Any]], reply: str) -> FunctionModel:
    """A model that asks for `calls` on a user's message, then says `reply` once the calls' results are back."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if any(isinstance(part, ToolReturnPart) for part in last.parts):
            return ModelResponse(parts=[TextPart(reply)])
        return ModelResponse(parts=[ToolCallPart(name, args) for name, args in calls])

    return FunctionModel(respond)


def commands(**tools: str) -> FunctionModel:
    """A model that reads a user's `<verb> <name>` as a call of `tools[verb]` with `{"name": name}`, then answers
    with what the call returned (or the refusal the person gave)."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returned = [part.model_response_str() for part in last.parts if isinstance(part, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(" ".join(returned))])
        [said] = [str(part.content) for part in last.parts if isinstance(part, UserPromptPart)]
        verb, _, name = said.partition(" ")
        return ModelResponse(parts=[ToolCallPart(tools[verb], {"name": name})])

    return FunctionModel(respond)


Route = Callable[[str], "tuple[str, dict[str, Any]] | str"]
"""The user's message → the tool to call and its arguments, or the text to answer with."""


def tool_model(route: Route, *, read: str | Callable[[str, str], str] = "model read: {result}") -> FunctionModel:
    """A `FunctionModel` that calls what `route` says for the user's message and reports the result it reads
    (`read` may name the `{tool}` too, or be a function of the tool's name and its result)."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if any(isinstance(p, UserPromptPart) for p in last.parts):
            said = route(_user_text(messages))
            if isinstance(said, str):
                return ModelResponse(parts=[TextPart(said)])
            tool, args = said
            return ModelResponse(parts=[ToolCallPart(tool, args)])
        results = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if not results:
            return ModelResponse(parts=[TextPart("no tool result to read")])
        content = results[0].content
        text = content if isinstance(content, str) else json.dumps(content, default=str)
        tool = results[0].tool_name
        said = read(tool, text) if callable(read) else read.format(result=text, tool=tool)
        return ModelResponse(parts=[TextPart(said)])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        for index, part in enumerate(respond(messages, info).parts):
            if isinstance(part, TextPart):  # a word at a time, as a provider streams
                for word in re.findall(r"\s*\S+", part.content):
                    yield word
            elif isinstance(part, ToolCallPart):
                yield {index: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str())}

    return FunctionModel(respond, stream_function=stream)


def _user_text(messages: list[ModelMessage]) -> str:
    """The latest thing the user said."""
    said = [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    ]
    return said[-1] if said else ""
