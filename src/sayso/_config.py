"""The configuration file (`sayso.yaml`) as pydantic models, and its loading.

These models are the wire schema of `sayso.yaml`; the runtime turns them into the pure
policy dataclasses of `_core` and into pydantic-ai agents, so nothing past this module
reads raw YAML.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_ai import Tool

from ._core.policy import InterruptPolicy, ToolRule
from ._core.requests import Scope
from ._mcp_config import McpBinding, McpServerConfig, bad_server_names, unknown_servers
from .exceptions import ConfigError

STORE_ENV = "SAYSO_STORE"
"""Environment variable that overrides the configured store URL."""


class _Strict(BaseModel):
    # Attribute docstrings become field descriptions: the configuration reference is built from them.
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, use_attribute_docstrings=True)


class ToolRuleConfig(_Strict):
    """An object entry of `interrupt.tools`: `{name: delete_store, remember: thread, subject: "my.mod:fn"}`."""

    name: str
    """The tool's name, or an fnmatch pattern such as `merchant___*`; a name must be one of the agent's tools."""
    remember: Scope | None = None
    """The widest scope a person may choose for this tool; unset: the block's `remember`."""
    subject: str | None = None
    """Import spec of a subject function `(tool_name, args) -> {key, label} | str | None` that narrows what a
    remembered approval covers (one folder, one store); `None` from it lets the call run without asking."""
    ttl_seconds: float | None = Field(default=None, gt=0)
    """How long a request for this tool waits before it expires; unset: the block's `ttl_seconds`."""


def _string_or_mapping(value: Any) -> str:
    """Which member of a `name | {...}` union an entry is, so an error names only that one's problem."""
    return "Name" if isinstance(value, str) else "Entry"


ToolRuleEntry: TypeAlias = Annotated[
    Annotated[str, Tag("Name")] | Annotated[ToolRuleConfig, Tag("Entry")], Discriminator(_string_or_mapping)
]


class InterruptConfig(_Strict):
    """An agent's `interrupt` block: which calls wait for a person, and on what terms."""

    tools: list[ToolRuleEntry] = []
    """The calls that wait for approval: tool names, fnmatch patterns, or rule objects; the first match wins."""
    skip_read_only: bool = False
    """Let tools declared read-only (`readOnlyHint: true`) run without asking, even when a rule matches."""
    remember: Scope = "once"
    """The widest scope a person may choose when approving: `once`, `thread` or `always`."""
    ttl_seconds: float | None = Field(default=None, gt=0)
    """How long requests wait before they expire; unset: they wait until decided."""
    tool_approvals: bool = False
    """Let a tool's service ask for approval through its reply (`{"sayso_approval": {...}}`)."""
    on_decision: str | None = None
    """Import spec of a callable told each decision on a service's own approval request."""
    decision_webhook: str | None = None
    """URL that receives each such decision as a signed POST."""
    decision_webhook_secret_env: str | None = None
    """Environment variable holding the webhook's signing secret."""

    def to_policy(self) -> InterruptPolicy:
        """The pure policy this block describes."""
        rules = tuple(ToolRule(name=t) if isinstance(t, str) else ToolRule(**t.model_dump()) for t in self.tools)
        return InterruptPolicy(
            tools=rules,
            skip_read_only=self.skip_read_only,
            remember=self.remember,
            ttl_seconds=self.ttl_seconds,
            tool_approvals=self.tool_approvals,
        )


class DelegateConfig(_Strict):
    """An agent this agent may hand work to, exposed to it as a tool named after the delegate."""

    agent: str | None = None
    """A configured agent's name (a local delegate)."""
    a2a: str | None = None
    """An A2A agent's URL (a remote delegate), such as `http://127.0.0.1:9000/a2a/files`."""
    name: str | None = None
    """The tool name for a remote delegate (default: the URL's last path segment)."""

    @property
    def tool_name(self) -> str:
        """The name the parent's model calls this delegate by."""
        if self.agent is not None:
            return self.agent
        assert self.a2a is not None
        return self.name or self.a2a.rstrip("/").rsplit("/", 1)[-1]

    description: str = ""
    """What the delegate is for, as the parent's model reads it."""

    @model_validator(mode="after")
    def _one_target(self) -> DelegateConfig:
        if (self.agent is None) == (self.a2a is None):
            raise ValueError("a delegate names exactly one of 'agent' or 'a2a'")
        return self


class OrchestrationConfig(_Strict):
    """kaboo's form of delegation: an entry agent and the agents it may hand work to."""

    mode: Literal["delegate"] = "delegate"
    """The only mode: the entry agent hands work to its connections."""
    entry_name: str
    """The agent that leads; it gets the connections as delegates."""
    connections: list[DelegateConfig] = []
    """The agents it may hand work to."""


class AgentConfig(_Strict):
    """One agent: a model, instructions, tools and a pause policy."""

    model: Any = None
    """A name from `models`, a pydantic-ai model string, or (from Python) a pydantic-ai `Model`."""
    instructions: str = ""
    """What the agent is told to do (its system instructions)."""
    description: str | None = None
    """What the agent is for, as other agents and A2A agent cards show it."""
    tools: list[Any] = []
    """Import specs (`pkg.mod:fn`), or functions and pydantic-ai `Tool`s from Python."""
    client_tools: list[str] = []
    """Names of client-declared tools this agent may call."""
    ask_user: bool = True
    """Give the agent the built-in `ask_user` tool, to ask the person questions."""
    interrupt: InterruptConfig = InterruptConfig()
    """Which calls wait for a person."""
    redact: list[str] = []
    """Argument fields (such as `password`) hidden wherever a request is shown."""
    delegates: list[DelegateConfig] = []
    """Agents this one may hand work to; each is a tool named after the delegate."""
    mcp: list[McpBinding] = []
    """Tools from MCP servers (§9): which server, which tools, whether calls wait for approval."""
    before_tool_call: Any = None
    """A hook run before every tool call that may pause it (ask for approval, or send the person to a
    URL such as a login page): an import spec (`pkg.mod:fn`), or (from Python) the function itself."""

    @field_validator("before_tool_call")
    @classmethod
    def _hook_is_usable(cls, hook: Any) -> Any:
        if hook is not None and not (isinstance(hook, str) or callable(hook)):
            raise ValueError(f"before_tool_call must be an import spec or a function, not {hook!r}")
        return hook

    @field_validator("tools")
    @classmethod
    def _tools_are_usable(cls, tools: list[Any]) -> list[Any]:
        for entry in tools:
            if not (isinstance(entry, str | Tool) or callable(entry)):
                raise ValueError(f"a tool must be an import spec, a function or a pydantic-ai Tool, not {entry!r}")
        return tools


class ScriptedModelConfig(_Strict):
    """A scripted model: `{scripted: path/to/script.yaml}`."""

    scripted: str
    """The script's path, relative to the config file."""


ModelProvider: TypeAlias = Literal["openai", "anthropic", "google"]
"""Providers a `models:` entry may name; `openai` also covers every server that speaks its chat API."""


class ProviderModelConfig(_Strict):
    """A model served over a provider's API: `{provider: openai, name: llama3, base_url: ..., api_key_env: ...}`.

    With `provider: openai` and a `base_url`, any server that speaks OpenAI's chat completions API
    works: Ollama (`http://127.0.0.1:11434/v1`), llama.cpp's `llama-server`, vLLM, LM Studio.
    """

    provider: ModelProvider
    """Whose API the model is served over; install its extra (`pip install 'sayso[openai]'`)."""
    name: str = Field(min_length=1)
    """The model's name as the server knows it (`gpt-4o-mini`, `llama3`, `claude-sonnet-4-5`)."""
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    """Where the API is served; the provider's own endpoint when unset."""
    api_key_env: str | None = None
    """Environment variable holding the API key; unset: the provider's usual variable (`OPENAI_API_KEY`...),
    or no key at all for a local server at `base_url`."""


def _model_kind(value: Any) -> str:
    """Which member of the `models:` union an entry is, so an error names only that one's problem."""
    if isinstance(value, str):
        return "Name"
    if isinstance(value, ScriptedModelConfig) or (isinstance(value, dict) and "scripted" in value):
        return "Script"
    return "Provider"


ModelEntry: TypeAlias = Annotated[
    Annotated[str, Tag("Name")]
    | Annotated[ScriptedModelConfig, Tag("Script")]
    | Annotated[ProviderModelConfig, Tag("Provider")],
    Discriminator(_model_kind),
]
"""One entry of `models:`: a pydantic-ai model string, a script or a provider entry."""


class PrincipalConfig(_Strict):
    """A person or service that may call the API, with its bearer token and approver roles."""

    name: str
    token: str | None = None
    """The bearer token; prefer `token_env` so the secret stays out of the file."""
    token_env: str | None = None
    """Name of an environment variable holding the bearer token."""
    approver_for: list[str] = []
    """Agents (names or globs) whose requests this principal may decide on any thread."""

    def bearer_token(self) -> str | None:
        """The token, read from the environment when `token_env` is set."""
        return os.environ.get(self.token_env) if self.token_env else self.token


WebhookEvent: TypeAlias = Literal["request.opened", "request.decided", "request.expired"]
"""Every event a webhook may subscribe to."""

ALL_WEBHOOK_EVENTS: tuple[WebhookEvent, ...] = ("request.opened", "request.decided", "request.expired")


class WebhookConfig(_Strict):
    """One entry of the `webhooks:` list: where `sayso serve` sends signed request events."""

    url: str = Field(pattern=r"^https?://")
    """Where events are POSTed."""
    secret: str | None = None
    """The signing secret; prefer `secret_env` so it stays out of the file."""
    secret_env: str | None = None
    """Name of an environment variable holding the signing secret."""
    events: list[WebhookEvent] = list(ALL_WEBHOOK_EVENTS)
    """Which events to send."""
    max_attempts: int = Field(default=5, ge=1, le=20)
    """Attempts per event, the first included."""
    backoff_seconds: float = Field(default=1.0, gt=0)
    """Wait before the second attempt; each later wait doubles."""
    timeout_seconds: float = Field(default=10.0, gt=0)
    """Time allowed for one attempt."""

    @model_validator(mode="after")
    def _has_secret(self) -> WebhookConfig:
        if not self.secret and not self.secret_env:
            raise ValueError("a webhook needs 'secret' or 'secret_env' to sign its deliveries")
        return self

    def signing_secret(self) -> str:
        """The secret, read from the environment when `secret_env` is set.

        Raises:
            ValueError: `secret_env` names an unset environment variable.
        """
        secret = os.environ.get(self.secret_env) if self.secret_env else self.secret
        if not secret:
            raise ValueError(f"webhook {self.url!r}: environment variable {self.secret_env!r} is not set")
        return secret


class A2AConfig(_Strict):
    """The `a2a` block: how agents speak A2A."""

    kagent_compat: bool = False
    """Also speak kagent 0.x's DataPart format (`adk_request_confirmation`, `decision_type`) to clients
    that do not request the HITL v1 extension."""


class Config(_Strict):
    """A whole `sayso.yaml`."""

    store: str = "sqlite:///sayso.db"
    """Where runs, pauses and decisions are kept: `sqlite:///file.db` (relative to the config file) or
    `postgresql://user@host/db`; the `SAYSO_STORE` environment variable overrides it."""
    models: dict[str, ModelEntry] = {}
    """Named models: a pydantic-ai model string (`openai:gpt-4o-mini`), a script, or a provider entry."""
    agents: dict[str, AgentConfig]
    """The agents, by name."""
    entry: str | None = None
    """The agent a new thread talks to by default (or an orchestration's name); unset: the first agent."""
    principals: list[PrincipalConfig] = []
    """Who may call the API; with none, servers run in local development mode."""
    webhooks: list[WebhookConfig] = []
    """Where `sayso serve` sends signed events when a request opens, is decided or expires."""
    a2a: A2AConfig = A2AConfig()
    """How agents speak A2A."""
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    """Folder that relative paths (store, scripts, tool modules) are resolved from."""

    orchestrations: dict[str, OrchestrationConfig] = {}
    """Named teams (`mode: delegate`): the entry agent gets the connections as delegates."""
    mcp_servers: dict[str, McpServerConfig] = {}
    """MCP servers agents may bind (§9), by name: a stdio command or a streamable HTTP URL."""

    @model_validator(mode="after")
    def _mcp_servers_exist(self) -> Config:
        problems = bad_server_names(self.mcp_servers) + unknown_servers(
            self.mcp_servers, {name: spec.mcp for name, spec in self.agents.items()}
        )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    _source: Path | None = PrivateAttr(default=None)
    _lines: dict[tuple[str | int, ...], int] = PrivateAttr(default_factory=dict)

    @property
    def source(self) -> Path | None:
        """The file this config was read from; `None` for a config built in Python."""
        return self._source

    def line_of(self, path: Sequence[str | int]) -> int | None:
        """The line of the file where the entry at `path` (such as `agents.files.tools.0`) is written.

        Steps of `path` that the file does not hold (pydantic's union branch names, defaults) are
        passed over, so the nearest written entry answers.
        """
        return _line_of(self._lines, path)

    @model_validator(mode="after")
    def _entry_exists(self) -> Config:
        if not self.agents:
            raise ValueError("at least one agent is needed under 'agents'")
        for name, team in self.orchestrations.items():
            if team.entry_name not in self.agents:
                raise ValueError(f"orchestration {name!r}: entry_name {team.entry_name!r} is not an agent")
            lead = self.agents[team.entry_name]
            known = {d.tool_name for d in lead.delegates}
            lead.delegates.extend(c for c in team.connections if c.tool_name not in known)
            if self.entry == name:
                self.entry = team.entry_name
        for name, spec in self.agents.items():
            for delegate in spec.delegates:
                if delegate.agent is not None and delegate.agent not in self.agents:
                    raise ValueError(f"agent {name!r} delegates to {delegate.agent!r}, which is not an agent")
                if delegate.agent == name:
                    raise ValueError(f"agent {name!r} cannot delegate to itself")
        if self.entry is None:
            self.entry = next(iter(self.agents))
        if self.entry not in self.agents:
            raise ValueError(f"entry {self.entry!r} is not one of the agents: {', '.join(self.agents)}")
        return self

    @property
    def entry_agent(self) -> str:
        assert self.entry is not None
        return self.entry

    def store_url(self) -> str:
        """The store URL, with `SAYSO_STORE` taking precedence over the file."""
        return os.environ.get(STORE_ENV) or self.store


def load_config(path: str | Path) -> Config:
    """Read and validate a config file; every problem is a `ConfigError` naming the file and line.

    This checks the file's shape. What needs the agents' code (do the approval rules name real
    tools, can each model be reached) is checked when the agents are built, and by `sayso check`.
    """
    file = Path(path)
    try:
        raw, lines = _read_yaml(file.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read config {str(file)!r}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"config {str(file)!r} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"config {str(file)!r} must be a mapping with 'agents'")
    try:
        config = Config.model_validate({**raw, "base_dir": file.resolve().parent})
    except ValidationError as exc:
        problems = sorted((_validation_line(file, lines, error) for error in exc.errors()), key=lambda p: p[0])
        shown = "\n".join(text for _, text in problems)
        raise ConfigError(f"config {str(file)!r} is invalid:\n{shown}") from exc
    config._source = file
    config._lines = lines
    return config


def config_path(path: Sequence[str | int]) -> str:
    """A config location as people write it: `agents.files.interrupt.tools[0]`."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else f".{step}" if text else step
    return text


def _read_yaml(text: str) -> tuple[Any, dict[tuple[str | int, ...], int]]:
    """The document, and the line of every mapping key and list item in it (PyYAML's node marks)."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    lines: dict[tuple[str | int, ...], int] = {}
    if node is not None:
        _mark_lines(node, (), lines)
    return data, lines


def _mark_lines(node: yaml.Node, path: tuple[str | int, ...], lines: dict[tuple[str | int, ...], int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                step = (*path, str(key.value))
                lines.setdefault(step, key.start_mark.line + 1)
                _mark_lines(value, step, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            step = (*path, index)
            lines[step] = item.start_mark.line + 1
            _mark_lines(item, step, lines)


def _line_of(lines: dict[tuple[str | int, ...], int], path: Sequence[str | int]) -> int | None:
    found: tuple[str | int, ...] = ()
    for step in path:
        if (*found, step) in lines:
            found = (*found, step)
    return lines.get(found)


_FIXES = {
    "extra_forbidden": "remove it, or correct its spelling (the configuration reference lists every field)",
    "missing": "add it",
}


def _validation_line(file: Path, lines: dict[tuple[str | int, ...], int], error: Any) -> tuple[int, str]:
    """One schema problem as `file:line: where: what. Fix: how`, with its line to sort by."""
    loc = tuple(error["loc"])
    line = _line_of(lines, loc)
    shown: list[str | int] = []
    written: tuple[str | int, ...] = ()
    for step in loc:
        if (*written, step) in lines:
            written = (*written, step)
            shown.append(step)
        elif not _is_union_branch(step):
            shown.append(step)
    where = config_path(shown) or "the config"
    message = str(error["msg"]).removeprefix("Value error, ")
    fix = _FIXES.get(str(error["type"]))
    return line or 1, f"  {file}:{line or 1}: {where}: {message}" + (f". Fix: {fix}." if fix else "")


def _is_union_branch(step: str | int) -> bool:
    """Whether a step of pydantic's error location names a union member (`str`, `ToolRuleConfig`), not a field."""
    return isinstance(step, str) and (step in ("str", "int", "float", "bool") or step[:1].isupper() or "[" in step)
