"""The configuration file (§6.2) as pydantic models, and its loading.

These models are the wire schema of `sayso.yaml`; the runtime turns them into the pure
policy dataclasses of `_core` and into pydantic-ai agents, so nothing past this module
reads raw YAML.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_ai import Tool

from ._core.policy import InterruptPolicy, ToolRule
from ._core.requests import Scope
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


class Config(_Strict):
    """A whole `sayso.yaml`."""

    store: str = "sqlite:///sayso.db"
    models: dict[str, str | ScriptedModelConfig] = {}
    agents: dict[str, AgentConfig]
    entry: str | None = None
    principals: list[PrincipalConfig] = []
    """Who may call the API; with none, servers run in local development mode."""
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    """Folder that relative paths (store, scripts, tool modules) are resolved from."""

    @model_validator(mode="after")
    def _entry_exists(self) -> Config:
        if not self.agents:
            raise ValueError("at least one agent is needed under 'agents'")
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
