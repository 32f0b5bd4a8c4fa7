r"""The scripted model: YAML rules (a pattern → a tool call or a reply) that stand in for an LLM.

It runs demos and tests with no network and no key, and says plainly that it is a script:
its model name is `scripted:<script name>` and its fallback reply starts with `[script]`.

A script looks like:

```yaml
name: files-demo
rules:
  - user: '^delete (?P<name>\\S+)$'     # regex on the run's last user message
    call: delete_file                  # a tool call, its arguments filled from the match
    args: {name: "{name}"}
  - user: '^both$'
    calls: [{call: a}, {call: b}]      # several calls in one turn
  - tool: delete_file                  # applies when the latest input is that tool's result
    result: '(?s)(?P<text>.*)'         # optional regex on the result
    reply: "{text}"
fallback: "I only know: list, delete NAME."
```

A rule without `tool` applies only right after the user spoke; one with `tool` only to that
tool's result. `{result}`, `{results}` (every result of the turn) and `{user}` are always
available; `{group|lines}` as a whole value turns a multi-line group into a list of its
non-empty lines, and `{group|number}` into the number it spells. docs/guides/scripted.md has the
whole format, with an example for each kind of pause.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.usage import RequestUsage

from .._config.lines import read_yaml_file, validation_line
from ..exceptions import ConfigError

_PLACEHOLDER = re.compile(r"\{(\w+)(?:\|(\w+))?\}")


class ScriptCall(BaseModel):
    """One tool call of a rule that makes several at once."""

    model_config = ConfigDict(extra="forbid")

    call: str
    args: dict[str, Any] = {}


class ScriptRule(BaseModel):
    """One rule of a script; the first rule that matches answers."""

    model_config = ConfigDict(extra="forbid")

    user: str | None = None
    tool: str | None = None
    result: str | None = None
    call: str | None = None
    args: dict[str, Any] = {}
    calls: list[ScriptCall] = []
    """Several tool calls in one turn (parallel calls)."""
    reply: str | None = None

    @field_validator("user", "result")
    @classmethod
    def _a_regex(cls, pattern: str | None) -> str | None:
        """Compiled at load, so a broken pattern is a config error, not a run failing on its first message."""
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return pattern

    @model_validator(mode="after")
    def _one_action(self) -> ScriptRule:
        if sum((self.call is not None, bool(self.calls), self.reply is not None)) != 1:
            raise ValueError("a rule needs exactly one of 'call', 'calls' or 'reply'")
        return self


class Script(BaseModel):
    """A whole script."""

    model_config = ConfigDict(extra="forbid")

    name: str = "script"
    rules: list[ScriptRule] = []
    fallback: str = "I am a scripted demo model, not an LLM, and no rule of my script matches that."


@dataclass(frozen=True, kw_only=True)
class ScriptedCall:
    """One request the scripted model answered: what it saw last and what it said."""

    last_request: ModelRequest
    response: ModelResponse
    history_length: int


@dataclass(kw_only=True)
class _Input:
    user: str
    tool_name: str | None = None
    result: str | None = None
    all_results: str = ""
    """Every tool result of the latest request, one `tool: result` per line (for parallel calls)."""


_WORDS = re.compile(r"\s*\S+|\s+")
"""A streamed text's chunks: each word with the space before it."""


class ScriptedModel(FunctionModel):
    """A pydantic-ai model that follows a script; `calls` logs the requests it answered, newest last.

    The log keeps the latest `keep_calls` (tests read it; a demo server runs for days, and a log
    that only grows is a leak whose every object the garbage collector walks again and again).
    Each entry holds a whole request and response: at 1,000 (up to 2,000 before a trim) the log
    alone held ~10 MB of a soaked `sayso serve` (bench/soak.py); tests read the last few.
    """

    def __init__(self, script: Script, *, keep_calls: int = 100) -> None:
        super().__init__(self._respond, stream_function=self._stream, model_name=f"scripted:{script.name}")
        self.script = script
        self.calls: list[ScriptedCall] = []
        self.keep_calls = keep_calls
        self._log_path = os.environ.get("SAYSO_SCRIPT_LOG")

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        """A model that follows the script in a YAML file: no network, no key, the same answers every time.

        The file holds `name`, `rules` and `fallback`. Each rule matches the person's last message
        (`user`, a regex) or a tool's result (`tool`, and optionally `result`, a regex), and answers
        with one tool call (`call` and `args`), several (`calls`), or text (`reply`); `{group}` in
        `args` or `reply` is filled from the regexes' named groups. The first rule that matches
        answers; when none does, the reply is `[script] ` and the `fallback`. See the
        [scripted model guide](../guides/scripted.md) for every field and an example per pause.

        ```python
        agent = AgentConfig(model=ScriptedModel.from_file("script.yaml"), tools=[refund])
        # in sayso.yaml: models: {demo: {scripted: script.yaml}}, and the agent's `model: demo`
        ```

        Args:
            path: the script's YAML file.

        Raises:
            ConfigError: the file cannot be read, is not YAML, or is not a script (the message says which rule).
        """
        file = Path(path)
        raw, lines = read_yaml_file(file, "script")
        if not isinstance(raw, dict):
            raise ConfigError(f"cannot load script {str(file)!r}: a script is a mapping with 'rules', 'fallback'")
        try:
            return cls(Script.model_validate(raw))
        except ValidationError as exc:
            problems = sorted(validation_line(file, lines, error, root=Script) for error in exc.errors())
            said = "\n".join(text for _, text in problems)
            raise ConfigError(f"cannot load script {str(file)!r}:\n{said}") from exc

    async def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        parts = self._answer(_inputs(messages))
        response = ModelResponse(parts=parts, usage=RequestUsage(input_tokens=1, output_tokens=1))
        self.calls.append(ScriptedCall(last_request=last, response=response, history_length=len(messages)))
        if len(self.calls) > 2 * self.keep_calls:  # trimmed in batches: one copy per `keep_calls` requests
            del self.calls[: -self.keep_calls]
        if self._log_path:
            with open(self._log_path, "a") as log:
                log.write(
                    json.dumps({"saw": [_describe(p) for p in last.parts], "said": [_describe(p) for p in parts]})
                )
                log.write("\n")
        return response

    async def _stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        """The same answer, streamed as a provider would: text a word at a time, then each call whole."""
        response = await self._respond(messages, info)
        for index, part in enumerate(response.parts):
            if isinstance(part, TextPart):
                for word in _WORDS.findall(part.content):
                    yield word
            elif isinstance(part, ToolCallPart):
                yield {
                    index: DeltaToolCall(
                        name=part.tool_name, json_args=part.args_as_json_str(), tool_call_id=part.tool_call_id
                    )
                }

    def _answer(self, inputs: Sequence[_Input]) -> list[ModelResponsePart]:
        for item in inputs:
            for rule in self.script.rules:
                values = _match(rule, item)
                if values is None:
                    continue
                if rule.call is not None:
                    return [ToolCallPart(rule.call, _fill(rule.args, values))]
                if rule.calls:
                    return [ToolCallPart(c.call, _fill(c.args, values)) for c in rule.calls]
                assert rule.reply is not None
                return [TextPart(str(_fill(rule.reply, values)))]
        return [TextPart(f"[script] {self.script.fallback}")]


def _inputs(messages: list[ModelMessage]) -> list[_Input]:
    """What the model reacts to: the user's words, or each tool result in the latest request."""
    user = ""
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    user = part.content
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    if any(isinstance(p, UserPromptPart) for p in last.parts):
        return [_Input(user=user)]
    returns = [
        (p.tool_name, p.content if isinstance(p.content, str) else json.dumps(p.content, default=str))
        for p in last.parts
        if isinstance(p, ToolReturnPart)
    ]
    everything = "\n".join(f"{name}: {text}" for name, text in returns)
    return [_Input(user=user, tool_name=name, result=text, all_results=everything) for name, text in returns]


def _match(rule: ScriptRule, item: _Input) -> dict[str, str] | None:
    if (rule.tool is None) != (item.tool_name is None) or (rule.tool and rule.tool != item.tool_name):
        return None
    values: dict[str, str] = {"user": item.user, "result": item.result or "", "results": item.all_results}
    for pattern, text in ((rule.user, item.user), (rule.result, item.result)):
        if pattern is None:
            continue
        found = re.search(pattern, text or "")
        if found is None:
            return None
        values.update({k: v for k, v in found.groupdict().items() if v is not None})
    return values


def _fill(template: Any, values: dict[str, str]) -> Any:
    if isinstance(template, dict):
        return {k: _fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, values) for v in template]
    if not isinstance(template, str):
        return template
    whole = _PLACEHOLDER.fullmatch(template)
    if whole and whole.group(2) == "lines":
        return [line.strip() for line in values.get(whole.group(1), "").splitlines() if line.strip()]
    if whole and whole.group(2) == "number":
        return _number(values.get(whole.group(1), ""))
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _number(text: str) -> int | float | str:
    """A matched group as the number it spells (`25` → 25, `2.5` → 2.5); text that is no number stays text."""
    for kind in (int, float):
        try:
            return kind(text.strip())
        except ValueError:
            continue
    return text


def _describe(part: Any) -> dict[str, Any]:
    if isinstance(part, ToolCallPart):
        return {"call": part.tool_name, "args": part.args_as_dict()}
    if isinstance(part, ToolReturnPart):
        return {
            "result": part.tool_name,
            "content": part.content if isinstance(part.content, str) else repr(part.content),
        }
    if isinstance(part, TextPart | UserPromptPart):
        return {type(part).__name__: str(part.content)}
    return {type(part).__name__: None}
