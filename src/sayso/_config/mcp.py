"""MCP servers and an agent's bindings to them (docs/guides/mcp.md), as configuration models.

The models are the `mcp_servers:` block of `sayso.yaml` and the `mcp:` list of an agent. They
are plain pydantic (no MCP library is imported here), so a config loads and validates without
the `mcp` extra; `_mcp` turns them into pydantic-ai MCP toolsets when an agent is built.

Secrets stay out of the file: `env_from` and `headers_env` name environment variables that
are read when the agent is built, and a variable that is not set is an error then.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .._core.channels import TARGET_PATTERN
from .._core.policy import ToolRule
from ..exceptions import ConfigError
from .lines import EntryPath
from .routing import ROUTING_FIELDS, RoutingFields, routed
from .rules import POLICY_FIELDS, PolicyFields

SessionMode: TypeAlias = Literal["auto", "legacy"]
"""How sayso opens a session with a server: `auto` lets the client negotiate (the stateless modern
protocol when the server offers it, the handshake otherwise); `legacy` pins the handshake-era
protocol, the one on which a server can push a form or a URL to the person mid-call."""

SERVER_NAME_PATTERN = r"^[A-Za-z0-9_-]+$"
"""Server names become tool-name prefixes when two servers offer the same tool, so they stay tool-name safe."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class McpStdioServer(_Strict):
    """An MCP server sayso starts as a subprocess and talks to over stdio."""

    command: str = Field(min_length=1)
    """The program to start, such as `npx`, `node` or `uvx`; a relative path is taken from the config's folder."""
    args: list[str] = []
    """Its arguments."""
    env: dict[str, str] = {}
    """Environment variables set for the server (the server does not inherit sayso's environment beyond
    `PATH`, `HOME` and the like)."""
    env_from: dict[str, str] = {}
    """Environment variables for the server read from sayso's own environment: `{SERVER_VAR: SAYSO_VAR}`."""
    cwd: str | None = None
    """Working folder of the server, relative to the config's folder (default: the config's folder)."""
    prefix: str | None = Field(default=None, pattern=SERVER_NAME_PATTERN)
    """Prefix for this server's tool names (`prefix___tool`); by default names stay as the server gives them."""
    session: SessionMode = "auto"
    """`legacy` for a server whose tools ask the person mid-call (`ctx.elicit` in fastmcp) but that also
    speaks the stateless protocol, where such questions cannot be sent; `auto` otherwise."""

    def resolved_env(self, server: str) -> dict[str, str]:
        """The environment for the server, secrets read now.

        Raises:
            ConfigError: a variable named in `env_from` is not set.
        """
        return {**self.env, **_from_environ(self.env_from, server=server, field="env_from")}


class McpHttpServer(_Strict):
    """An MCP server reached over streamable HTTP."""

    url: str = Field(pattern=r"^https?://")
    """The server's MCP endpoint, such as `http://127.0.0.1:8000/mcp`."""
    headers: dict[str, str] = {}
    """HTTP headers sent with every request (no secrets here: use `headers_env`)."""
    headers_env: dict[str, str] = {}
    """HTTP headers read from sayso's environment: `{Header-Name: ENV_VAR}`, such as
    `{Authorization: CRM_AUTH}` where `CRM_AUTH` holds `Bearer ...`."""
    prefix: str | None = Field(default=None, pattern=SERVER_NAME_PATTERN)
    """Prefix for this server's tool names (`prefix___tool`); by default names stay as the server gives them."""
    session: SessionMode = "auto"
    """`legacy` for a server whose tools ask the person mid-call (`ctx.elicit` in fastmcp) but that also
    speaks the stateless protocol, where such questions cannot be sent; `auto` otherwise."""

    def resolved_headers(self, server: str) -> dict[str, str]:
        """The headers to send, secrets read now.

        Raises:
            ConfigError: a variable named in `headers_env` is not set.
        """
        return {**self.headers, **_from_environ(self.headers_env, server=server, field="headers_env")}


McpServerConfig: TypeAlias = McpStdioServer | McpHttpServer
"""One entry of `mcp_servers:`: `{command, args, env, env_from, cwd}` or `{url, headers, headers_env}`."""


class McpBinding(_Strict, PolicyFields, RoutingFields):
    """One entry of an agent's `mcp:` list: which tools of a server the agent may call, and on what terms.

    Approval belongs to the binding, not to the tool name: two bindings split one server into
    gated and free tools, and a tool name may be gated on one server and free on another. A binding
    that gates its calls (`require_approval`, or a `when:` condition, or an `action`) is a policy rule
    as an `interrupt.tools` object is (docs/guides/policies.md#mcp-bindings): the agent's own rules are
    tried first, then the binding's.
    """

    server: str
    """A name from `mcp_servers:`."""
    tools: list[str] | None = None
    """The server's tools this binding exposes, by the server's own names; omitted or empty (`[]`, as
    kagent writes it): every tool the server offers."""
    require_approval: bool = False
    """Every call to a tool of this binding waits for a person (policy rules, grants and
    `skip_read_only` apply as to any gated tool)."""
    replay_elicitation: bool = False
    """When the call a server's form arrived on is gone (a CLI run that exited, a restart, another
    replica), issue the call again and hand the stored answer to the server's matching form, even
    though the tool is not marked read-only or idempotent (for those it is the default). Without it
    such a request closes as cancelled and the model reads that the call did not complete.

    See docs/guides/mcp.md#which-answers-survive-a-restart.
    """
    notify: list[Annotated[str, Field(pattern=TARGET_PATTERN)]] = []
    """Where each request for this binding's calls is announced, once per request and target: `email:ADDRESS`,
    `slack:#CHANNEL` or `webhook:NAME`, reached as `channels:` says."""

    @model_validator(mode="after")
    def _terms_need_a_rule(self) -> McpBinding:
        if self.is_rule:
            return self
        set_here = self.model_fields_set & (POLICY_FIELDS | ROUTING_FIELDS | {"notify"})
        if stray := sorted(f for f in set_here if getattr(self, f) not in (None, [], False, 1)):
            raise ValueError(
                f"{', '.join(stray)} apply to calls that wait for a person, and this binding's calls run without "
                "asking: set 'require_approval: true', or a 'when:' condition saying which calls ask"
            )
        return self

    @property
    def is_rule(self) -> bool:
        """Whether the binding's calls go through its own policy rule: it gates them, or its `when` or `action` say."""
        return self.require_approval or self.when is not None or self.action != "ask"

    @property
    def gates_every_call(self) -> bool:
        """Whether every call asks, whatever the policy's rules say (no condition picks which)."""
        return self.require_approval and self.when is None

    def covers(self, server: str, tool: str) -> bool:
        """Whether the binding exposes `tool` of `server` (by the server's own name)."""
        return self.server == server and (self.binds_all or tool in (self.tools or ()))

    def policy_rule(self, tool: str, groups: Mapping[str, Sequence[str]]) -> ToolRule | None:
        """The binding as a rule for the exposed tool `tool` (named `mcp:SERVER` unless `rule:` names it)."""
        if not self.is_rule:
            return None
        rule = self.to_rule(name=tool, notify=tuple(self.notify))
        return routed(dataclasses.replace(rule, rule=self.label), self, groups)

    @property
    def label(self) -> str:
        """The binding's rule as people read it: its `rule:` name, or `mcp:SERVER`."""
        return self.rule or f"mcp:{self.server}"

    @field_validator("tools")
    @classmethod
    def _tools_listed(cls, tools: list[str] | None) -> list[str] | None:
        if not tools:
            return tools
        if duplicate := next((t for t in tools if tools.count(t) > 1), None):
            raise ValueError(f"tool {duplicate!r} is listed twice")
        return tools

    @property
    def binds_all(self) -> bool:
        """Whether the binding exposes every tool its server offers (`tools` omitted or empty)."""
        return not self.tools


def mcp_bindings(
    server: str, *, tools: Sequence[str] | None = None, require_approval: Sequence[str] = ()
) -> list[McpBinding]:
    """Bindings for one server from a tool filter and a list of tools that need approval (seed 002's API).

    `mcp_bindings("crm", tools=["list_users", "delete_user"], require_approval=["delete_user"])`
    gives a gated binding for `delete_user` and a free one for `list_users`. With `tools`
    omitted, every other tool of the server is free.

    Args:
        server: a name from `mcp_servers`.
        tools: the server's tools the agent may call; `None` for all of them.
        require_approval: those of them that wait for a person.

    Raises:
        ConfigError: a tool needing approval is not among `tools`.
    """
    gated = list(dict.fromkeys(require_approval))
    if tools is not None and (stray := [t for t in gated if t not in tools]):
        raise ConfigError(f"server {server!r}: {', '.join(map(repr, stray))} need approval but are not in 'tools'")
    bindings = [McpBinding(server=server, tools=gated, require_approval=True)] if gated else []
    free = None if tools is None else [t for t in tools if t not in gated]
    if free is None or free:
        bindings.append(McpBinding(server=server, tools=free))
    return bindings


def unknown_servers(servers: Iterable[str], agents: Mapping[str, Sequence[McpBinding]]) -> list[tuple[EntryPath, str]]:
    """One problem per binding that names a server `mcp_servers` does not declare, at the binding's `server`."""
    known = set(servers)
    return [
        (
            ("agents", agent, "mcp", index, "server"),
            f"agent {agent!r} binds MCP server {b.server!r}, which is not under 'mcp_servers'"
            + (f" (declared: {', '.join(sorted(known))})" if known else ""),
        )
        for agent, bindings in agents.items()
        for index, b in enumerate(bindings)
        if b.server not in known
    ]


def bad_server_names(servers: Iterable[str]) -> list[tuple[EntryPath, str]]:
    """One problem per server name that could not prefix a tool name, at the server's entry."""
    return [
        (("mcp_servers", name), f"MCP server name {name!r} may use only letters, digits, '_' and '-'")
        for name in servers
        if not re.fullmatch(SERVER_NAME_PATTERN, name)
    ]


def resolve_path(value: str, base_dir: Path) -> str:
    """A path from the config: relative ones are taken from the config's folder."""
    path = Path(value)
    return str(path if path.is_absolute() else base_dir / path)


def _from_environ(names: Mapping[str, str], *, server: str, field: str) -> dict[str, str]:
    missing = [var for var in names.values() if var not in os.environ]
    if missing:
        raise ConfigError(
            f"MCP server {server!r}: {field} names environment variable(s) that are not set: {', '.join(missing)}"
        )
    return {key: os.environ[var] for key, var in names.items()}
