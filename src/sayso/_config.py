"""The configuration file (§6.2) as pydantic models, and its loading.

These models are the wire schema of `sayso.yaml`; the runtime turns them into the pure
policy dataclasses of `_core` and into pydantic-ai agents, so nothing past this module
reads raw YAML.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, TypeAlias

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_ai import Tool

from ._core.policy import InterruptPolicy, ToolRule
from ._core.requests import Scope
from ._mcp_config import McpBinding, McpServerConfig, bad_server_names, unknown_servers
from .exceptions import ConfigError

STORE_ENV = "SAYSO_STORE"
"""Environment variable that overrides the configured store URL."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class ToolRuleConfig(_Strict):
    """An object entry of `interrupt.tools`."""

    name: str
    remember: Scope | None = None
    subject: str | None = None
    ttl_seconds: float | None = Field(default=None, gt=0)


class InterruptConfig(_Strict):
    """An agent's `interrupt` block."""

    tools: list[str | ToolRuleConfig] = []
    skip_read_only: bool = False
    remember: Scope = "once"
    ttl_seconds: float | None = Field(default=None, gt=0)
    tool_approvals: bool = False
    on_decision: str | None = None
    """Import spec of a callable told each decision on a service's own approval request (§2.4)."""
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
    entry_name: str
    connections: list[DelegateConfig] = []


class AgentConfig(_Strict):
    """One agent: a model, instructions, tools and a pause policy."""

    model: Any = None
    """A name from `models`, a pydantic-ai model string, or (from Python) a pydantic-ai `Model`."""
    instructions: str = ""
    description: str | None = None
    tools: list[Any] = []
    """Import specs (`pkg.mod:fn`), or functions and pydantic-ai `Tool`s from Python."""
    client_tools: list[str] = []
    """Names of client-declared tools this agent may call."""
    ask_user: bool = True
    interrupt: InterruptConfig = InterruptConfig()
    redact: list[str] = []
    """Argument fields (such as `password`) hidden wherever a request is shown."""
    delegates: list[DelegateConfig] = []
    """Agents this one may hand work to; each is a tool named after the delegate."""
    mcp: list[McpBinding] = []
    """Tools from MCP servers (§9): which server, which tools, whether calls wait for approval."""

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
    """One entry of the `webhooks:` list: where `sayso serve` sends signed request events (§6.8)."""

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
    """The `a2a` block: how agents speak A2A (§6.3)."""

    kagent_compat: bool = False
    """Also speak kagent 0.x's DataPart format (`adk_request_confirmation`, `decision_type`) to clients
    that do not request the HITL v1 extension."""


class Config(_Strict):
    """A whole `sayso.yaml`."""

    store: str = "sqlite:///sayso.db"
    models: dict[str, str | ScriptedModelConfig] = {}
    agents: dict[str, AgentConfig]
    entry: str | None = None
    principals: list[PrincipalConfig] = []
    """Who may call the API; with none, servers run in local development mode."""
    webhooks: list[WebhookConfig] = []
    """Where `sayso serve` sends signed events when a request opens, is decided or expires."""
    a2a: A2AConfig = A2AConfig()
    """How agents speak A2A (§6.3)."""
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
    """Read and validate a config file; every problem is a `ConfigError` naming the file."""
    file = Path(path)
    try:
        raw = yaml.safe_load(file.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read config {str(file)!r}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"config {str(file)!r} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"config {str(file)!r} must be a mapping with 'agents'")
    try:
        return Config.model_validate({**raw, "base_dir": file.resolve().parent})
    except ValidationError as exc:
        raise ConfigError(f"config {str(file)!r} is invalid:\n{exc}") from exc
