"""`GateToolset`: the wrapper that makes an agent's own tools wait for approval and run approved calls once.

It is the one place where policy meets the engine: before a call it asks the pure policy
whether a person must approve; after approval it consults the execution ledger so a call
that already started (in this or a crashed process) is never started again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Protocol

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import to_json

from ._core.policy import InterruptPolicy, gate_for
from ._core.requests import default_hint
from ._tools import META_KEY, options_of

UNKNOWN_OUTCOME = (
    "Outcome unknown: the process stopped while this call was running, so it was not run again. "
    "Check its effect before trying again."
)


class ExecutionLedger(Protocol):
    """The part of the store the gate needs: a durable mark before an approved call runs."""

    async def begin_execution(self, request_id: str, run_id: str, now: float) -> Any: ...

    async def finish_execution(self, request_id: str, result: bytes, now: float) -> None: ...


@dataclass(kw_only=True)
class RunDeps:
    """What every sayso tool sees as `ctx.deps`: which run, thread and agent it serves."""

    run_id: str
    thread_id: str
    agent_path: str
    principal: str | None
    ledger: ExecutionLedger
    clock: Any


@dataclass
class GateToolset(WrapperToolset[Any]):
    """Wraps an agent's own tools with its interrupt policy and the at-most-once ledger."""

    policy: InterruptPolicy = InterruptPolicy()

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        tools = await super().get_tools(ctx)
        # A tool declared with pydantic-ai's own `requires_approval=True` is gated here instead,
        # so that every approval goes through the same policy, ledger and request shape.
        return {
            name: replace(t, tool_def=replace(t.tool_def, kind="function")) if t.tool_def.kind == "unapproved" else t
            for name, t in tools.items()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        deps = ctx.deps
        assert isinstance(deps, RunDeps)
        if ctx.tool_call_approved:
            return await self._run_approved(name, tool_args, ctx, tool, deps)
        options = options_of(tool.tool_def)
        declared = options.requires_approval or _declared_unapproved(self.wrapped, name)
        gate = gate_for(self.policy, name, declared=declared, read_only=options.read_only)
        schema = tool.tool_def.parameters_json_schema
        if gate is not None:
            raise ApprovalRequired(
                metadata={
                    META_KEY: {
                        "hint": options.hint or default_hint(name),
                        "scopes": list(gate.scopes),
                        "ttl_seconds": gate.ttl_seconds,
                        "args_schema": schema,
                    }
                }
            )
        try:
            return await super().call_tool(name, tool_args, ctx, tool)
        except ApprovalRequired as asked:
            meta = dict((asked.metadata or {}).get(META_KEY, {}))
            meta.setdefault("hint", options.hint or default_hint(name))
            meta.setdefault("args_schema", schema)
            meta.setdefault("ttl_seconds", self.policy.ttl_seconds)
            raise ApprovalRequired(metadata={META_KEY: meta}) from None

    async def _run_approved(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any], deps: RunDeps
    ) -> Any:
        request_id = (ctx.tool_call_metadata or {}).get(META_KEY, {}).get("request_id")
        assert isinstance(request_id, str), "an approved call always carries its request id"
        earlier = await deps.ledger.begin_execution(request_id, deps.run_id, deps.clock())
        if earlier is not None:
            if earlier.status == "done" and earlier.result is not None:
                return json.loads(earlier.result)
            if not options_of(tool.tool_def).idempotent:
                return UNKNOWN_OUTCOME
        result = await super().call_tool(name, tool_args, ctx, tool)
        await deps.ledger.finish_execution(request_id, to_json(result, fallback=str), deps.clock())
        return result


def _declared_unapproved(toolset: AbstractToolset[Any], name: str) -> bool:
    """Whether pydantic-ai's own `requires_approval=True` was set on the tool called `name`."""
    from pydantic_ai.toolsets import FunctionToolset

    found = False

    def visit(ts: AbstractToolset[Any]) -> None:
        nonlocal found
        if isinstance(ts, FunctionToolset) and name in ts.tools and ts.tools[name].requires_approval:
            found = True

    toolset.apply(visit)
    return found
