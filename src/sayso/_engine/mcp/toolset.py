"""An agent's MCP bindings as one pydantic-ai toolset, built on `pydantic_ai.mcp.MCPToolset` (docs/guides/mcp.md).

Each configured server becomes one `MCPToolset` (fastmcp underneath: stdio or streamable
HTTP); `McpToolset` puts the agent's bindings over them. It exposes only the bound tools,
renames a tool when two servers offer the same name, and stamps every tool's definition with
what sayso's gate reads: whether the binding requires approval, the server's `readOnlyHint`
and `idempotentHint` (as sayso tool options) and its title, description and
`destructiveHint` (shown with the approval request). The gate (`gate.GateToolset`) wraps this
toolset with the agent's own tools, so policy, grants, the ledger and the audit apply to MCP
tools exactly as to Python ones.

Binding checks happen when the tools are first listed: at the start of the agent's first run
(the run fails with a `ConfigError` naming the tool and what the server offers), or earlier
when the host calls `McpToolset.verify()` (at startup, say). Sessions are opened for a run and
closed after it, so a paused run holds no server process — except a call blocked on a question
its server pushed to the person, which the runtime keeps open while its process lives.

When a server asks the person something mid-call, the call pauses the run with an `elicitation`
request (`_mcp_calls` says how each way of asking is kept); the person's answer comes back in the
resumed call's `ApprovedCall`, and `call_tool` hands it to the call still waiting, or issues the
call again with the stored answer (a stateless round trip, a parked task, or a replay the binding
allows), or reports that the call did not complete.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Self

import anyio
from pydantic.json_schema import JsonSchemaValue
from pydantic_ai import RunContext, ToolDefinition
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from ..._config.mcp import McpBinding, McpHttpServer, McpServerConfig, McpStdioServer, resolve_path
from ..._core.policy import ToolRule, reference_problems
from ..._core.requests import ElicitationRequest, ToolInfo
from ...exceptions import ConfigError
from ..calls import META_KEY, Elicitation, ElicitationAnswered, ElicitationDeferral, approved_call_of
from ..deps import RunDeps
from ..tools import RULES_KEY, TOOL_INFO_KEY, ToolOptions, options_of, rule_names

try:
    import mcp_types
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
    from mcp.client.extension import ClientExtension
    from pydantic_ai.mcp import MCPToolset

    from .calls import (
        Asked,
        Done,
        ElicitHandler,
        LiveCall,
        McpHost,
        Paused,
        RunConnections,
        ServerFactory,
        call_dropped,
        resume_task,
    )
    from .elicit import to_elicit_result, url_required
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
        for tool in have if binding.binds_all else binding.tools or ():
            earlier = merged.get((binding.server, tool))
            merged[(binding.server, tool)] = McpRoute(
                server=binding.server,
                tool=tool,
                require_approval=binding.gates_every_call or (earlier is not None and earlier.require_approval),
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
    """An agent's MCP bindings: the bound tools of its servers, stamped for sayso's gate.

    Each run gets its own copy (`for_run`) with its own sessions (`RunConnections`): opened on first
    use, reused call after call, closed when the run ends. Calls run in the runtime's `McpHost` when
    it has set one (`host`), so a call whose server asks the person mid-call can stay open after
    its run pauses; without a host, a run-scoped one keeps nothing open.
    """

    def __init__(
        self,
        agent: str,
        bindings: Sequence[McpBinding],
        servers: Mapping[str, ServerFactory],
        *,
        prefixes: Mapping[str, str | None] | None = None,
        groups: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Put `bindings` over `servers`.

        Args:
            agent: the agent's name, for error messages.
            bindings: the agent's `mcp:` list.
            servers: how to open a session with every server the bindings name.
            prefixes: each server's configured tool-name `prefix`, if any.
            groups: the config's `groups:`, which a binding's `approvers` may name (docs/guides/routing.md).
        """
        self.agent = agent
        self.bindings = tuple(bindings)
        self.servers = dict(servers)
        self.prefixes: dict[str, str | None] = dict(prefixes or {})
        self.groups: dict[str, Sequence[str]] = dict(groups or {})
        self.host: McpHost | None = None
        """The runtime's host, set when the runtime opens; calls then outlive the run that issued them."""
        self._connections: RunConnections | None = None
        self._own_host: McpHost | None = None
        self._rules_seen: dict[tuple[str, str, str, str], tuple[ToolRule, ...]] = {}
        """Each exposed tool's rules, by its name, route and schema as listed (shared with the runs' copies)."""

    @classmethod
    def from_config(
        cls,
        agent: str,
        bindings: Sequence[McpBinding],
        servers: Mapping[str, McpServerConfig],
        base_dir: Path,
        groups: Mapping[str, Sequence[str]] | None = None,
    ) -> McpToolset:
        """Build the toolset for an agent's bindings from the `mcp_servers` block; secrets are read now.

        Raises:
            ConfigError: a secret's environment variable is not set.
        """
        names = list(dict.fromkeys(b.server for b in bindings))
        return cls(
            agent,
            bindings,
            {name: server_factory(name, servers[name], base_dir) for name in names},
            prefixes={name: servers[name].prefix for name in names},
            groups=groups,
        )

    @property
    def id(self) -> str | None:
        return f"sayso-mcp-{self.agent}"

    async def for_run(self, ctx: RunContext[Any]) -> AbstractToolset[Any]:
        copy = McpToolset(self.agent, self.bindings, self.servers, prefixes=self.prefixes, groups=self.groups)
        copy.host = self.host
        copy._rules_seen = self._rules_seen
        return copy

    def _rules(self, name: str, route: McpRoute, schema: JsonSchemaValue) -> tuple[ToolRule, ...]:
        """The policy rules of the bindings exposing the tool (`name`, as the model calls it), checked against it.

        A server's argument schema is known once it lists the tool, so that is when what a rule's condition
        and reason name is checked (cached per listed schema).

        Raises:
            ConfigError: they name an argument the tool does not have (fail closed: such a rule never holds).
        """
        key = (name, route.server, route.tool, json.dumps(schema, sort_keys=True))
        if (known := self._rules_seen.get(key)) is None:
            covering = [b for b in self.bindings if b.covers(route.server, route.tool)]
            known = tuple(r for b in covering if (r := b.policy_rule(name, self.groups)) is not None)
            if problems := [f"{p} in {src!r}" for rule in known for _, src, p in reference_problems(rule, schema)]:
                raise ConfigError(
                    f"agent {self.agent!r}: a rule of its MCP binding of {route.server!r} does not fit tool "
                    f"{route.tool!r} as the server lists it: {'; '.join(problems)}"
                )
            self._rules_seen[key] = known
        return known

    def rules_for(self, tool_def: ToolDefinition) -> tuple[ToolRule, ...] | None:
        """This process's binding rules for a tool as listed (`None`: not an MCP tool), wherever it was listed."""
        route = (tool_def.metadata or {}).get(ROUTE_KEY)
        if not isinstance(route, dict):
            return None
        return self._rules(tool_def.name, McpRoute(**route), tool_def.parameters_json_schema)

    async def __aenter__(self) -> Self:
        host = self.host
        if host is None:
            host = self._own_host = await McpHost(keeps_calls=False).__aenter__()
        self._connections = RunConnections(host, self.servers)
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        connections, self._connections = self._connections, None
        if connections is not None:
            connections.aclose()
        own, self._own_host = self._own_host, None
        if own is not None:
            await own.__aexit__(None, None, None)
        return None

    async def verify(self) -> dict[str, McpRoute]:
        """Connect to every bound server and check the bindings against what it offers.

        Returns:
            The tools the agent sees, by the name the model calls them.

        Raises:
            ConfigError: a binding names a tool its server does not offer (the message lists what it offers).
        """
        async with McpHost(keeps_calls=False) as host:
            connections = RunConnections(host, self.servers)
            try:
                listed = {name: {t.name: t for t in await self._listed(connections, name)} for name in self.servers}
            finally:
                connections.aclose()
        routes = plan_routes(
            self.agent, self.bindings, {n: list(tools) for n, tools in listed.items()}, prefixes=self.prefixes
        )
        for name, route in routes.items():
            self._rules(name, route, listed[route.server][route.tool].input_schema)
        return routes

    async def _listed(self, connections: RunConnections, server: str) -> list[mcp_types.Tool]:
        connection = await connections.acquire(server)
        try:
            return await connection.toolset.list_tools()
        finally:
            connections.release(connection)

    def _run_connections(self) -> RunConnections:
        assert self._connections is not None, "pydantic-ai enters a toolset for its run before using it"
        return self._connections

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        connections = self._run_connections()
        listed: dict[str, dict[str, ToolsetTool[Any]]] = {}
        titles: dict[str, dict[str, str | None]] = {}
        for name in self.servers:
            connection = await connections.acquire(name)
            try:
                listed[name] = await connection.toolset.get_tools(ctx)
                titles[name] = {t.name: t.title for t in await connection.toolset.list_tools()}
            finally:
                connections.release(connection)
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
            if rules := self._rules(name, route, source.tool_def.parameters_json_schema):
                metadata[RULES_KEY] = rule_names(rules)  # their names only: the caller's config rebuilds them
            tools[name] = replace(source, toolset=self, tool_def=replace(source.tool_def, name=name, metadata=metadata))
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        route = McpRoute(**(tool.tool_def.metadata or {})[ROUTE_KEY])
        connections = self._run_connections()
        deps = ctx.deps
        key = (deps.run_id, ctx.tool_call_id) if isinstance(deps, RunDeps) and ctx.tool_call_id else None
        approved = approved_call_of(ctx.tool_call_metadata)
        if not isinstance(approved, ElicitationAnswered) or approved.elicitation.server != route.server:
            return await self._issue(route, tool_args, ctx, tool, key)
        request = approved.elicitation
        if request.delivery == "retry":
            # The person visited the page the server sent them to: the refused call is issued again.
            return await self._issue(route, tool_args, ctx, tool, key)
        reply = to_elicit_result(request, approved.answer)
        if request.delivery == "live":
            parked = connections.host.take(key) if key is not None else None
            if parked is not None and parked.answer(reply):
                return await self._follow(parked, route, key, replay=_replayable(route, tool))
            ended = connections.host.ended.pop(key, None) if key is not None else None
            if isinstance(ended, Done):
                return ended.value  # the server finished the call without waiting for the answer
            if not _replayable(route, tool):
                return CALL_ENDED if ended is None else call_dropped(ended)
        return await self._issue(
            route,
            tool_args,
            ctx,
            tool,
            key,
            stored=[(request, reply)],
            task=request.task if request.delivery == "task" else None,
        )

    async def _issue(
        self,
        route: McpRoute,
        tool_args: dict[str, Any],
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
        key: tuple[str, str] | None,
        *,
        stored: Sequence[tuple[ElicitationRequest, mcp_types.ElicitResult]] = (),
        task: dict[str, Any] | None = None,
    ) -> Any:
        """Issue the call on a session of its own (or resume the task it became) and follow it."""
        connections = self._run_connections()
        call = LiveCall(keep_open=connections.host.keeps_calls and key is not None, stored=stored, task=task)
        connection = await connections.acquire(route.server)
        server = connection.toolset

        async def body() -> Any:
            connection.current = call
            try:
                if task is not None:
                    return await resume_task(server, route.tool, task)
                source = replace(tool, toolset=server, tool_def=replace(tool.tool_def, name=route.tool))
                return await server.call_tool(route.tool, tool_args, ctx, source)
            finally:
                connection.current = None
                connections.release(connection)

        connections.host.start(call, body)
        return await self._follow(call, route, key, replay=_replayable(route, tool))

    async def _follow(self, call: LiveCall, route: McpRoute, key: tuple[str, str] | None, *, replay: bool) -> Any:
        """Wait for the call's next event: its result, or a question that pauses the run.

        `replay`: the call may be issued again with a live question's answer, so another process can
        deliver it (else only this one can, while it holds the call).
        """
        try:
            event = await call.next()
        except anyio.get_cancelled_exc_class():
            call.cancel()
            raise
        if isinstance(event, Done):
            return event.value
        if isinstance(event, Asked):
            assert key is not None, "only a call with a run to resume keeps a live question open"
            connections = self._run_connections()
            connections.host.park(key, call)
            raise _pause(replace(event.elicitation, replay=replay, holder=connections.host.holder))
        if isinstance(event, Paused):
            raise _pause(replace(event.elicitation, replay=replay))
        pages = url_required(event.error, server=route.server)
        if pages:
            # The server refused the call until the person visits a page; one page at a time.
            raise _pause(pages[0])
        raise event.error


CALL_ENDED = (
    "Cancelled: the call that asked the person this had already ended (the process holding it stopped) "
    "and this tool is not safe to call again, so it did not complete. Check its effect before trying again."
)
"""What the model reads when a form's answer arrives after its call is gone and the call may not be replayed."""


def _replayable(route: McpRoute, tool: ToolsetTool[Any]) -> bool:
    """Whether a call may be issued again with a live question's answer: its binding allows it, or it is harmless."""
    options = options_of(tool.tool_def)
    return route.replay_elicitation or options.read_only or options.idempotent


def _pause(asked: Elicitation) -> ApprovalRequired:
    """The signal that pauses the run on what the server asked."""
    return ApprovalRequired(metadata=ElicitationDeferral(elicitation=asked).as_metadata())


def server_factory(name: str, server: McpServerConfig, base_dir: Path) -> ServerFactory:
    """How to open a session with one configured server: a pydantic-ai `MCPToolset` over a fastmcp client.

    The client waits as long as a call takes (`timeout=None`): a call may be blocked on a person's
    answer. Secrets are read now, so a missing one fails when the agent is built.

    Raises:
        ConfigError: a secret's environment variable is not set.
    """
    if isinstance(server, McpStdioServer):
        command = resolve_path(server.command, base_dir) if "/" in server.command else server.command
        env = server.resolved_env(name) or None
        cwd = resolve_path(server.cwd, base_dir) if server.cwd else str(base_dir)

        def transport() -> Any:
            return StdioTransport(command, list(server.args), env=env, cwd=cwd, keep_alive=False)

    else:
        assert isinstance(server, McpHttpServer)
        headers = server.resolved_headers(name) or None

        def transport() -> Any:
            # No hidden cap on one server-sent event (the SDK's is 1 MiB, which lost results after their tool ran):
            # a result is as large over HTTP as over stdio or from a Python tool.
            return StreamableHttpTransport(server.url, headers=headers, max_sse_event_size=None)

    def open_server(handler: ElicitHandler, extensions: Sequence[ClientExtension]) -> MCPToolset[Any]:
        client = Client(
            transport(),
            mode=server.session,
            elicitation_handler=handler,
            timeout=None,
            init_timeout=INIT_TIMEOUT_SECONDS,
            extensions=extensions,
        )
        return MCPToolset(client, id=f"mcp-{name}")

    return open_server
