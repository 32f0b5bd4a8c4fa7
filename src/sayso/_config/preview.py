"""What the policy would do with one call, read from a config without running anything (`sayso policy test`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic_ai import Tool
from pydantic_core import ValidationError

from .._core.conditions import call_variables
from .._core.policy import CallVerdict, judge_call
from .._engine.imports import import_spec
from .._engine.tools import as_tool, options_of
from ..exceptions import ConfigError, InvalidInput
from .file import Config


def preview_call(
    config: Config, *, tool: str, args: Mapping[str, Any], principal: str | None, agent: str | None = None
) -> CallVerdict:
    """What the policy would do with one call (`sayso policy test`): the gate's own rule, on the config's agent.

    The tool's declaration (`requires_approval`, `read_only`) is read when the tool is one of the agent's
    own; a tool known only once the agent runs (an MCP server's, a client's) is judged on the rules alone, its
    MCP bindings' included (a binding of every tool of its server covers any name).

    A name the agent could never call (a typo) is refused: judged on the rules alone it would read
    "runs without asking", which is what the person testing the rule would take away. So are arguments
    one of its own tools would reject: the rules never see such a call. The rules read the arguments
    as the tool validated them, as the gate does.

    Raises:
        ConfigError: no such agent, or no such tool of it.
        InvalidInput: the agent's own tool would reject the arguments.
    """
    name = agent or config.entry_agent
    spec = config.agents.get(name)
    if spec is None:
        raise ConfigError(f"no agent {name!r} in the config; the agents: {', '.join(config.agents)}")
    declared = read_only = False
    known = [d.tool_name for d in spec.delegates] + list(spec.client_tools) + (["ask_user"] if spec.ask_user else [])
    for entry in spec.tools:
        found = as_tool(import_spec(entry, base_dir=config.base_dir) if isinstance(entry, str) else entry)
        known.append(found.name)
        if found.name == tool:
            options = options_of(found.tool_def)
            declared, read_only = options.requires_approval, options.read_only
            args = _fitted(found, args)
    covered = False
    policy = replace(spec.interrupt.to_policy(), groups=config_groups(config))
    for binding in spec.mcp:  # a binding's rule is tried after the agent's own, as the gate does
        server = config.mcp_servers.get(binding.server)
        bare = tool.removeprefix(f"{getattr(server, 'prefix', None) or binding.server}___")
        covers = binding.covers(binding.server, bare)
        covered = covered or covers
        rule = binding.policy_rule(tool, config.groups) if covers else None
        if rule is not None:
            policy = replace(policy, tools=(*policy.tools, rule))
            declared = declared or binding.gates_every_call
    if tool not in known and not covered:
        offered = ", ".join(sorted(set(known))) or "none"
        via = f"; its MCP bindings: {', '.join(b.server for b in spec.mcp)}" if spec.mcp else ""
        raise ConfigError(f"agent {name!r} has no tool {tool!r}; its tools: {offered}{via}")
    variables = call_variables(
        args, principal=principal, groups=policy.groups_of(principal), thread_id="(a new thread)", agent=name
    )
    return judge_call(policy, tool, variables, declared=declared, read_only=read_only)


def _fitted(tool: Tool[Any], args: Mapping[str, Any]) -> Mapping[str, Any]:
    """The arguments as `tool` validates them.

    Raises:
        InvalidInput: naming every argument that is unknown, missing or of the wrong kind, and the parameters.
    """
    try:
        fitted = tool.function_schema.validator.validate_python(dict(args))
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            where = ".".join(str(part) for part in error["loc"])
            if error["type"] == "extra_forbidden":
                problems.append(f"unknown argument {where!r}")
            elif error["type"] == "missing":
                problems.append(f"missing argument {where!r}")
            else:
                problems.append(f"{where!r}: {error['msg']}")
        schema = tool.tool_def.parameters_json_schema
        params = [
            f"{name} ({field['type']})" if isinstance(field, dict) and isinstance(field.get("type"), str) else name
            for name, field in schema.get("properties", {}).items()
        ]
        raise InvalidInput(
            f"{tool.name} would refuse these arguments: {'; '.join(problems)}; its parameters: "
            f"{', '.join(params) or 'none'}",
            field="--args",
        ) from exc
    return fitted if isinstance(fitted, Mapping) else dict(args)


def config_groups(config: Config) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The config's `groups:` as the policy reads them (`principal.groups` in a condition)."""
    groups = getattr(config, "groups", None) or {}
    return tuple((group, tuple(members)) for group, members in groups.items())
