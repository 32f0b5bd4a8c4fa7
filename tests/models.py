"""Fake models for runtime tests, built on pydantic-ai's `FunctionModel` (the scripted model has its own tests).

`calls_then_reply` covers the common case: the model asks for the given tool calls, and once their
results (or the person's refusals) come back it answers with a fixed text. `commands` reads each
message as `<verb> <name>` and calls the verb's tool on that name, answering with what it returned.
"""

from __future__ import annotations

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
from pydantic_ai.models.function import AgentInfo, FunctionModel


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
