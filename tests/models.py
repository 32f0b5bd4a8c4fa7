"""Fake models for runtime tests, built on pydantic-ai's `FunctionModel` (the scripted model has its own tests).

`calls_then_reply` covers the common case: the model asks for the given tool calls, and once their
results (or the person's refusals) come back it answers with a fixed text. `commands` reads each
message as `<verb> <name>` and calls the verb's tool on that name, answering with what it returned.
`tool_model(route)` calls the tool(s) `route` picks for the user's message (or says the text it returns),
and once it reads the calls' results says what `read` makes of them (an answer, or another call); it keeps
what each request told it (`asked`), for tests of what a model is shown.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
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


Call = tuple[str, dict[str, Any]]
"""A tool call the model asks for: the tool's name and its arguments."""
Said = Call | list[Call] | str
"""What the model says next: one call, several calls at once, or its answer."""
Route = Callable[[str], Said]
"""The user's message → what the model says to it."""
Read = str | Callable[[str, str], Said]
"""What the model says on reading its calls' results: a template of the (first) call's `{tool}` and `{result}`
and of `{results}`, a line `tool: result` per call; or a function of a tool's name and its result, which may ask for
another call (the answer to several results is their readings, a line each)."""


@dataclass(frozen=True)
class Asked:
    """One request a `ToolModel` answered."""

    request: ModelRequest
    """Its last message: what the user said, or the calls' results."""
    info: AgentInfo
    """What the agent told the model with it: instructions, tools."""
    history: int
    """How many messages the request held."""


class ToolModel(FunctionModel):
    """A `FunctionModel` that says what `route` and `read` say, and keeps each request it answered (`asked`)."""

    def __init__(self, route: Route, read: Read) -> None:
        super().__init__(self._respond, stream_function=self._stream)
        self.route = route
        self.read = read
        self.asked: list[Asked] = []

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        self.asked.append(Asked(request=last, info=info, history=len(messages)))
        if any(isinstance(p, UserPromptPart) for p in last.parts):
            return _response(self.route(_user_text(messages)))
        results = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if not results:
            return ModelResponse(parts=[TextPart("no tool result to read")])
        read = [(part.tool_name, _text(part)) for part in results]
        if not callable(self.read):
            lines = "\n".join(f"{tool}: {text}" for tool, text in read)
            return _response(self.read.format(tool=read[0][0], result=read[0][1], results=lines))
        said = [self.read(tool, text) for tool, text in read]
        if len(said) == 1:
            return _response(said[0])
        assert all(isinstance(s, str) for s in said), "several results are read into one answer"
        return ModelResponse(parts=[TextPart("\n".join(str(s) for s in said))])

    async def _stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        for index, part in enumerate(self._respond(messages, info).parts):
            if isinstance(part, TextPart):  # a word at a time, as a provider streams
                for word in re.findall(r"\s*\S+", part.content):
                    yield word
            elif isinstance(part, ToolCallPart):
                yield {index: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str())}


def tool_model(route: Route, *, read: Read = "model read: {result}") -> ToolModel:
    """A model that says what `route` says for the user's message, and what `read` makes of its calls' results."""
    return ToolModel(route, read)


def verbs(**calls: str | tuple[str, str]) -> Route:
    """A route for messages `<verb> <text>` (`_` in a verb is a space: `sign_in` is `sign in`): `calls[verb]` names
    the tool to call with no arguments, or `(tool, argument)` to call it with `{argument: text}`."""

    def route(said: str) -> Said:
        for verb, call in calls.items():
            words = verb.replace("_", " ")
            if said == words or said.startswith(words + " "):
                if isinstance(call, str):
                    return call, {}
                tool, argument = call
                return tool, {argument: said[len(words) :].strip()}
        return f"no call for {said!r}"

    return route


def answer(text: str) -> ToolModel:
    """A model that answers every message with `text`."""
    return tool_model(lambda said: text)


def _text(part: ToolReturnPart) -> str:
    return part.content if isinstance(part.content, str) else json.dumps(part.content, default=str)


def _response(said: Said) -> ModelResponse:
    if isinstance(said, str):
        return ModelResponse(parts=[TextPart(said)])
    calls = said if isinstance(said, list) else [said]
    return ModelResponse(parts=[ToolCallPart(tool, args) for tool, args in calls])


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
