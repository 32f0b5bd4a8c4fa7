"""An agent's MCP bindings as one pydantic-ai toolset, built on `pydantic_ai.mcp.MCPToolset` (§9).

Each configured server becomes one `MCPToolset` (fastmcp underneath: stdio or streamable
HTTP); `McpToolset` puts the agent's bindings over them. It exposes only the bound tools,
renames a tool when two servers offer the same name, and stamps every tool's definition with
what sayso's gate reads: whether the binding requires approval, the server's `readOnlyHint`
and `idempotentHint` (as sayso tool options) and its title, description and
`destructiveHint` (shown with the approval request). The gate (`_gate.GateToolset`) wraps this
toolset with the agent's own tools, so policy, grants, the ledger and the audit apply to MCP
tools exactly as to Python ones.

Binding checks happen when the tools are first listed: at the start of the agent's first run
(the run fails with a `ConfigError` naming the tool and what the server offers), or earlier
when the host calls `McpToolset.verify()` (at startup, say). Servers are started for a run and
stopped after it, so a paused run holds no server process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Self

from pydantic_ai import RunContext
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from ._calls import META_KEY
from ._core.requests import ToolInfo
from ._mcp_config import McpBinding, McpHttpServer, McpServerConfig, McpStdioServer, resolve_path
from ._tools import TOOL_INFO_KEY, ToolOptions
from .exceptions import ConfigError

try:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset
except ImportError as exc:  # pragma: no cover - the import guard of an optional extra
    raise ImportError("agents with MCP servers need the `mcp` extra: pip install 'sayso[mcp]'") from exc

ROUTE_KEY = "sayso_mcp"
"""Tool-definition metadata key for the route of an exposed tool back to its server and name."""

PREFIX_SEPARATOR = "___"
"""Between a server's prefix and its tool's name: `files___write_file`."""

INIT_TIMEOUT_SECONDS = 30.0
"""How long a server may take to start and answer the handshake (npx and uvx can be slow to start)."""


@dataclass(frozen=True, kw_only=True)
class McpRoute:
    """Where an exposed tool goes: which server, under which name, on what terms."""

    server: str
    """The server's name under `mcp_servers`."""
    tool: str
    """The tool's name on that server."""
    require_approval: bool
    """Some binding that exposes the tool gates it (gated wins over free: fail closed)."""
    replay_elicitation: bool
    """Every binding that exposes the tool allows replaying a form answer after a restart."""


def plan_routes(
    agent: str,
    bindings: Sequence[McpBinding],
    offered: Mapping[str, Sequence[str]],
    *,
    prefixes: Mapping[str, str | None] | None = None,
) -> dict[str, McpRoute]:
    """The tools an agent sees, by the name the model calls them, from its bindings and what each server offers.

    Two bindings of one server may split it into gated and free tools; when both cover a tool,
    the gated one wins. A tool name offered by two bound servers is exposed as
    `server___tool` from each of them (or `prefix___tool` when the server has a `prefix`),
    so neither hides the other.

    Args:
        agent: the agent's name, for error messages.
        bindings: the agent's `mcp:` list.
        offered: each bound server's tool names.
        prefixes: each server's configured `prefix`, if any.

    Raises:
        ConfigError: a binding names a tool its server does not offer, or two exposed names clash.
    """
    prefixes = prefixes or {}
    problems: list[str] = []
    merged: dict[tuple[str, str], McpRoute] = {}
    for binding in bindings:
        have = list(offered[binding.server])
        missing = [t for t in binding.tools or () if t not in have]
        if missing:
            pronoun = "it" if len(missing) == 1 else "them"
            problems.append(
                f"agent {agent!r} binds {', '.join(map(repr, missing))} on MCP server {binding.server!r}, "
                f"which does not offer {pronoun} (it offers: {', '.join(have) or 'nothing'})"
            )
            continue
        for tool in binding.tools if binding.tools is not None else have:
            earlier = merged.get((binding.server, tool))
            merged[(binding.server, tool)] = McpRoute(
                server=binding.server,
                tool=tool,
                require_approval=binding.require_approval or (earlier is not None and earlier.require_approval),
                replay_elicitation=binding.replay_elicitation and (earlier is None or earlier.replay_elicitation),
            )
    if problems:
        raise ConfigError("; ".join(problems))
    servers_by_name: dict[str, set[str]] = {}
    for server, tool in merged:
        servers_by_name.setdefault(_name(tool, prefixes.get(server)), set()).add(server)
    routes: dict[str, McpRoute] = {}
    for (server, tool), route in merged.items():
        name = _name(tool, prefixes.get(server))
        if len(servers_by_name[name]) > 1:
            name = _name(tool, prefixes.get(server) or server)
        if name in routes:
            other = routes[name]
            raise ConfigError(
                f"agent {agent!r}: MCP servers {other.server!r} and {server!r} both expose a tool named {name!r}; "
                "give one of them another 'prefix'"
            )
        routes[name] = route
    return routes


def _name(tool: str, prefix: str | None) -> str:
    return f"{prefix}{PREFIX_SEPARATOR}{tool}" if prefix else tool


class McpToolset(AbstractToolset[Any]):
    """An agent's MCP bindings: the bound tools of its servers, stamped for sayso's gate."""

    def __init__(self, agent: str, bindings: Sequence[McpBinding], servers: Mapping[str, MCPToolset[Any]]) -> None:
        """Put `bindings` over `servers`.

        Args:
            agent: the agent's name, for error messages.
            bindings: the agent's `mcp:` list.
            servers: a pydantic-ai `MCPToolset` for every server the bindings name.
        """
        self.agent = agent
        self.bindings = tuple(bindings)
        self.servers = dict(servers)
        self.prefixes: dict[str, str | None] = {}
        self._exit_stack: AsyncExitStack | None = None

    @classmethod
    def from_config(
        cls, agent: str, bindings: Sequence[McpBinding], servers: Mapping[str, McpServerConfig], base_dir: Path
    ) -> McpToolset:
        """Build the toolset for an agent's bindings from the `mcp_servers` block; secrets are read now.

        Raises:
            ConfigError: a secret's environment variable is not set.
        """
        names = list(dict.fromkeys(b.server for b in bindings))
        toolset = cls(agent, bindings, {name: server_toolset(name, servers[name], base_dir) for name in names})
        toolset.prefixes = {name: servers[name].prefix for name in names}
        return toolset

    @property
    def id(self) -> str | None:
        return f"sayso-mcp-{self.agent}"

    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:
            for server in self.servers.values():
                await stack.enter_async_context(server)
            self._exit_stack = stack.pop_all()
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        if self._exit_stack is not None:
            stack, self._exit_stack = self._exit_stack, None
            await stack.aclose()
        return None

    async def verify(self) -> dict[str, McpRoute]:
        """Connect to every bound server and check the bindings against what it offers.

        Returns:
            The tools the agent sees, by the name the model calls them.

        Raises:
            ConfigError: a binding names a tool its server does not offer (the message lists what it offers).
        """
        offered: dict[str, list[str]] = {}
        for name, server in self.servers.items():
            offered[name] = [t.name for t in await server.list_tools()]
        return plan_routes(self.agent, self.bindings, offered, prefixes=self.prefixes)

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        listed = {name: await server.get_tools(ctx) for name, server in self.servers.items()}
        titles = {name: {t.name: t.title for t in await server.list_tools()} for name, server in self.servers.items()}
        routes = plan_routes(
            self.agent, self.bindings, {name: list(tools) for name, tools in listed.items()}, prefixes=self.prefixes
        )
        tools: dict[str, ToolsetTool[Any]] = {}
        for name, route in routes.items():
            source = listed[route.server][route.tool]
            metadata = dict(source.tool_def.metadata or {})
            annotations: dict[str, Any] = metadata.get("annotations") or {}
            read_only = annotations.get("readOnlyHint") is True
            options = ToolOptions(
                requires_approval=route.require_approval,
                read_only=read_only,
                # Running a read-only tool again is harmless too, so after a crash it runs again.
                idempotent=read_only or annotations.get("idempotentHint") is True,
            )
            info = ToolInfo(
                source=f"mcp:{route.server}",
                title=titles[route.server].get(route.tool) or annotations.get("title"),
                description=source.tool_def.description,
                read_only=read_only,
                destructive=annotations.get("destructiveHint"),
            )
            metadata.update({META_KEY: asdict(options), TOOL_INFO_KEY: asdict(info), ROUTE_KEY: asdict(route)})
            tools[name] = replace(source, toolset=self, tool_def=replace(source.tool_def, name=name, metadata=metadata))
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        route = McpRoute(**(tool.tool_def.metadata or {})[ROUTE_KEY])
        server = self.servers[route.server]
        source = replace(tool, toolset=server, tool_def=replace(tool.tool_def, name=route.tool))
        return await server.call_tool(route.tool, tool_args, ctx, source)

    def apply(self, visitor: Callable[[AbstractToolset[Any]], None]) -> None:
        for server in self.servers.values():
            server.apply(visitor)

    def visit_and_replace(
        self, visitor: Callable[[AbstractToolset[Any]], AbstractToolset[Any]]
    ) -> AbstractToolset[Any]:
        replaced = {name: server.visit_and_replace(visitor) for name, server in self.servers.items()}
        if all(new is self.servers[name] for name, new in replaced.items()):
            return self
        assert all(isinstance(s, MCPToolset) for s in replaced.values()), "an MCP server is replaced by an MCP server"
        copy = McpToolset(self.agent, self.bindings, {n: s for n, s in replaced.items() if isinstance(s, MCPToolset)})
        copy.prefixes = self.prefixes
        return copy


def server_toolset(name: str, server: McpServerConfig, base_dir: Path) -> MCPToolset[Any]:
    """A pydantic-ai `MCPToolset` for one configured server (fastmcp's stdio or streamable HTTP transport).

    Raises:
        ConfigError: a secret's environment variable is not set.
    """
    if isinstance(server, McpStdioServer):
        command = resolve_path(server.command, base_dir) if "/" in server.command else server.command
        transport = StdioTransport(
            command,
            list(server.args),
            env=server.resolved_env(name) or None,
            cwd=resolve_path(server.cwd, base_dir) if server.cwd else str(base_dir),
            # One process per run: a paused run holds no server process.
            keep_alive=False,
        )
        return MCPToolset(transport, id=f"mcp-{name}", init_timeout=INIT_TIMEOUT_SECONDS)
    assert isinstance(server, McpHttpServer)
    headers = server.resolved_headers(name)
    return MCPToolset(server.url, id=f"mcp-{name}", headers=headers or None, init_timeout=INIT_TIMEOUT_SECONDS)
