"""Agents handing work to agents: `delegates:`, kaboo's `orchestrations:`, and the check that each names an agent.

An orchestration's connections become its lead agent's delegates when the config loads, so the
runtime knows one form of delegation; a problem is still reported where it is written.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .lines import EntryPath, PlacedError


class _Strict(BaseModel):
    # Field docstrings are read by docs/hooks/config_reference.py, not at load (that cost every command ~0.1 s).
    model_config = ConfigDict(extra="forbid")


class DelegateConfig(_Strict):
    """An agent this agent may hand work to, exposed to it as a tool named after the delegate."""

    agent: str | None = None
    """A configured agent's name (a local delegate)."""
    a2a: str | None = None
    """An A2A agent's URL (a remote delegate), such as `http://127.0.0.1:9000/a2a/files`."""
    name: str | None = None
    """The tool name for a remote delegate (default: the URL's last path segment)."""
    token_env: str | None = Field(default=None, min_length=1)
    """A remote delegate's: the environment variable holding the bearer token its server takes (a sayso
    server with `principals:` takes one of theirs), sent with every message to it."""

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
        if self.token_env is not None and self.a2a is None:
            raise ValueError("'token_env' is a remote delegate's (an 'a2a' URL's): a local agent takes no token")
        return self


class OrchestrationConfig(_Strict):
    """kaboo's form of delegation: an entry agent and the agents it may hand work to."""

    description: str | None = None
    """What the team is for, as its A2A agent card shows it; unset: the entry agent's description."""
    mode: Literal["delegate"] = "delegate"
    """The only mode: the entry agent hands work to its connections."""
    entry_name: str
    """The agent that leads; it gets the connections as delegates."""
    connections: list[DelegateConfig] = []
    """The agents it may hand work to."""


def join_teams(agents: Mapping[str, list[DelegateConfig]], orchestrations: Mapping[str, OrchestrationConfig]) -> None:
    """Check that delegates and orchestrations name agents, and give each orchestration's lead its connections.

    Args:
        agents: each agent's delegates, by the agent's name; a lead's list gets its connections.
        orchestrations: the config's `orchestrations:`.

    Raises:
        PlacedError: an entry names no agent (or the agent itself), or an orchestration has an agent's name.
    """
    for name, delegates in agents.items():
        for index, delegate in enumerate(delegates):
            _check_delegate(name, delegate, agents, at=("agents", name, "delegates", index, "agent"))
    for name, team in orchestrations.items():
        if name in agents:
            message = f"orchestration {name!r} has an agent's name; A2A and AG-UI serve both by name"
            raise PlacedError((("orchestrations", name), message))
        if team.entry_name not in agents:
            message = f"orchestration {name!r}: entry_name {team.entry_name!r} is not an agent"
            raise PlacedError((("orchestrations", name, "entry_name"), message))
        lead = agents[team.entry_name]
        known = {d.tool_name for d in lead}
        for index, connection in enumerate(team.connections):
            if connection.tool_name not in known:  # one the lead has already is not added twice
                at = ("orchestrations", name, "connections", index, "agent")
                _check_delegate(team.entry_name, connection, agents, at=at)
                lead.append(connection)


def _check_delegate(agent: str, delegate: DelegateConfig, agents: Collection[str], *, at: EntryPath) -> None:
    """Refuse a local delegate that is no agent, or the agent itself; `at`: where its `agent` is written."""
    if delegate.agent is not None and delegate.agent not in agents:
        raise PlacedError((at, f"agent {agent!r} delegates to {delegate.agent!r}, which is not an agent"))
    if delegate.agent == agent:
        raise PlacedError((at, f"agent {agent!r} cannot delegate to itself"))
