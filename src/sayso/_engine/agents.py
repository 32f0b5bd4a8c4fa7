"""Turning agent configs into pydantic-ai agents wrapped with sayso's gate."""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic_ai
from pydantic_ai import Agent, DeferredToolRequests, RunContext, Tool
from pydantic_ai.capabilities import ToolSearch
from pydantic_ai.models import Model
from pydantic_ai.toolsets import AbstractToolset

from .._config.checks import check_config, raise_on_errors
from .._config.file import AgentConfig, Config
from .._config.preview import config_groups
from .._core.policy import InterruptPolicy
from ..exceptions import ConfigError
from .deps import RunDeps
from .gate import Gate
from .hooks import BeforeToolCall, before_tool_call
from .imports import import_spec
from .models import build_models, resolve_model
from .notify import DecisionNotifier
from .tools import ASK_USER_TOOL, BUILTIN_TOOLS, as_tool

if TYPE_CHECKING:
    from .mcp.toolset import McpToolset

__all__ = ["BuiltAgent", "build_agent", "build_agents", "build_models", "open_models"]


@dataclass(frozen=True, kw_only=True)
class BuiltAgent:
    """A configured agent, ready to run any number of times."""

    name: str
    agent: Agent[RunDeps, str | DeferredToolRequests]
    policy: InterruptPolicy
    client_tools: frozenset[str]
    model: Model
    gate: Gate
    """The agent's gate: its policy, subject functions, and the wrapper it puts around the toolset of each run."""
    redact: tuple[str, ...]
    notifier: DecisionNotifier
    mcp: McpToolset | None = None
    """The agent's MCP bindings, when it has any; `await mcp.verify()` checks them against the servers."""


def build_agents(config: Config, models: dict[str, Model | str]) -> dict[str, BuiltAgent]:
    """Check the whole config (`sayso check`'s checks), then build every agent.

    Raises:
        ConfigError: listing every error of the config, each with its file, line and fix;
            warnings are logged and the agents are built.
    """
    raise_on_errors(check_config(config, models=models))
    # sayso presents its agents' runs itself (chat, CLI panels, the server log): pydantic-ai's
    # first-run banner, which it documents as switchable for libraries that run agents for their
    # users, would land in the middle of them.
    pydantic_ai.BANNER_ENABLED = False
    return {name: build_agent(name, spec, config, models) for name, spec in config.agents.items()}


async def open_models(agents: Iterable[BuiltAgent]) -> AsyncExitStack:
    """Enter each distinct model of `agents`, so that closing the returned stack closes their HTTP connections.

    A provider's model keeps a connection pool; entered, it is closed with the runtime instead of
    being left to the garbage collector after the event loop is gone.
    """
    stack = AsyncExitStack()
    seen: set[int] = set()
    for built in agents:
        if id(built.model) not in seen:
            seen.add(id(built.model))
            await stack.enter_async_context(built.model)
    return stack


def build_agent(name: str, spec: AgentConfig, config: Config, models: dict[str, Model | str]) -> BuiltAgent:
    """Build one agent: its tools, `ask_user` and its MCP bindings under one gate, as one toolset.

    The tools sit in the agent's own function toolset (MCP bindings beside it) and the gate wraps
    the whole of it for each run (`GatedToolSearch`); the run's client tools come through the gate
    too. One toolset instead of three spares pydantic-ai a task group at every toolset step.
    """
    tools: list[Tool[Any]] = [_tool(t, config.base_dir) for t in spec.tools]
    tools.extend(_delegate_tool(d.tool_name, d.description) for d in spec.delegates)
    names = [t.name for t in tools]
    if duplicate := next((n for n in names if names.count(n) > 1), None):
        raise ConfigError(f"agent {name!r} has two tools named {duplicate!r}")
    policy = replace(spec.interrupt.to_policy(config.groups), groups=config_groups(config))
    subjects = {r.subject: _subject_fn(r.subject, config.base_dir) for r in policy.tools if r.subject}
    ungated: frozenset[str] = frozenset()
    if spec.ask_user or "ask_user" in spec.client_tools:
        if "ask_user" in names:
            raise ConfigError(f"agent {name!r} defines its own 'ask_user'; set 'ask_user: false' to use it")
        tools.append(ASK_USER_TOOL)
        ungated = frozenset({ASK_USER_TOOL.name})
    mcp = _mcp_toolset(name, spec, config)
    rules = mcp.rules_for if mcp is not None else None
    gate = Gate(policy=policy, subjects=subjects, ungated=ungated, hook=_hook(spec, config.base_dir), rules=rules)
    model = resolve_model(spec.model, models, agent=name, known=list(config.models))
    agent: Agent[RunDeps, str | DeferredToolRequests] = Agent(
        model,
        output_type=[str, DeferredToolRequests],
        instructions=spec.instructions or None,
        deps_type=RunDeps,
        name=name,
        tools=tools,
        toolsets=[mcp] if mcp is not None else None,
        capabilities=[GatedToolSearch(gate=gate)],
    )
    return BuiltAgent(
        name=name,
        agent=agent,
        policy=policy,
        # A built-in's name among the client tools stands for the built-in (`check_config` notes it).
        client_tools=frozenset(spec.client_tools) - BUILTIN_TOOLS,
        model=model,
        gate=gate,
        redact=tuple(spec.redact),
        notifier=_notifier(spec, config.base_dir),
        mcp=mcp,
    )


@dataclass
class GatedToolSearch(ToolSearch[RunDeps]):
    """pydantic-ai's tool search, which every agent holds, with the agent's gate inside its wrapper.

    The gate must wrap the agent's whole assembled toolset for each run, which only a
    capability's wrapper toolset does. A capability of its own would cost every run: pydantic-ai
    hands every hook to every capability with a copy of the run context, ~54 copies per approve
    cycle (bench/ANALYSIS.md). pydantic-ai adds a `ToolSearch` to every agent that has none, so the
    gate rides in that one, and the toolset is what it was with a capability of its own: the
    search's wrapper outside, the gate's inside. Its own `id` keeps a namesake given for one run
    from replacing it (and the gate with it).
    """

    gate: Gate = field(default_factory=Gate)
    id: str | None = field(default="sayso_gate", kw_only=True)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # built from sayso's config, never from an agent spec

    def get_wrapper_toolset(self, toolset: AbstractToolset[RunDeps]) -> AbstractToolset[RunDeps]:
        return super().get_wrapper_toolset(self.gate.wrap(toolset))


def _mcp_toolset(name: str, spec: AgentConfig, config: Config) -> McpToolset | None:
    """The agent's MCP bindings as one toolset beside the agent's own tools; the gate wraps both.

    See docs/guides/mcp.md#servers-as-tool-sources.
    """
    if not spec.mcp:
        return None
    from .mcp.toolset import McpToolset  # the `mcp` extra is needed only by agents that bind MCP servers

    return McpToolset.from_config(name, spec.mcp, config.mcp_servers, config.base_dir, groups=config.groups)


def _hook(spec: AgentConfig, base_dir: Path) -> BeforeToolCall | None:
    """The agent's before-call hook, imported when named by spec."""
    hook = spec.before_tool_call
    if hook is None:
        return None
    found = import_spec(hook, base_dir=base_dir) if isinstance(hook, str) else hook
    try:
        return before_tool_call(found)
    except TypeError as exc:
        raise ConfigError(f"before_tool_call {hook!r}: {exc}") from None


def _delegate_tool(target: str, description: str) -> Tool[RunDeps]:
    """A tool that hands work to the delegate `target`; if the delegate pauses, so does this call."""

    async def delegate(ctx: RunContext[RunDeps], task: str) -> str:
        """Hand a piece of work to this delegate and get its answer.

        Args:
            ctx: the run context (not shown to the model).
            task: what the delegate should do, in plain words, with everything it needs to know.
        """
        assert ctx.tool_call_id is not None, "pydantic-ai names every call"
        if ctx.deps.replies is not None:
            await ctx.deps.replies.keep(ctx.messages)  # first: a segment redone meets this call again, and its run
        return await ctx.deps.services.delegate(target, task, ctx.tool_call_id, run_step=ctx.run_step)

    return Tool(delegate, name=target, description=description or f"Hand work to {target}.")


def _notifier(spec: AgentConfig, base_dir: Path) -> DecisionNotifier:
    interrupt = spec.interrupt
    secret_env = interrupt.decision_webhook_secret_env
    return DecisionNotifier(
        on_decision=_subject_fn(interrupt.on_decision, base_dir) if interrupt.on_decision else None,
        webhook_url=interrupt.decision_webhook,
        webhook_secret=os.environ.get(secret_env) if secret_env else None,
    )


def _subject_fn(spec: str, base_dir: Path) -> Any:
    fn = import_spec(spec, base_dir=base_dir)
    if not callable(fn):
        raise ConfigError(f"{spec!r} is not callable")
    return fn


def _tool(obj: object, base_dir: Path) -> Tool[Any]:
    if isinstance(obj, str):
        obj = import_spec(obj, base_dir=base_dir)
    return as_tool(obj)
