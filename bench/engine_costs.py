#!/usr/bin/env python3
"""What pydantic-ai charges for each way sayso uses it: a bare agent pair against variants, CPU per pair.

sayso's agent pair costs ~1.2× a bare pydantic-ai pair (`agent_pair.py`). This script takes the
anchor's bare pair (`requires_approval=True`: pydantic-ai defers the call itself) and adds, one at
a time, what sayso's gate needs, with no sayso code at all:

- **capability**: one more capability whose only work is `get_wrapper_toolset` returning a
  pass-through `WrapperToolset` (sayso's gate is such a capability): pydantic-ai copies the
  `RunContext` for every capability on every hook, whether the capability overrides it or not;
- **exception**: the tool decides itself and raises `ApprovalRequired` (sayso's gate rules per
  call, on policy, subject and grants, so the call must reach it) instead of being deferred by its
  declaration;
- **both**;
- **in-toolsearch**: the exception, and the same pass-through wrapper inside pydantic-ai's own
  `ToolSearch` capability (which every agent holds) rather than a capability of its own: how sayso
  puts its gate around the toolset since issue 27's fourth pass (`_engine/agents.py`
  `GatedToolSearch`).

What is left of sayso's pair above "both" is sayso's own work inside `Agent.run`: the policy,
subject and grant checks, the at-most-once ledger, the hook wrapper and the run's deps. Blocks of
pairs are interleaved so every variant sees the same machine. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "anchors"))

from common import user_request
from pydantic_ai import Agent, ApprovalRequired, DeferredToolRequests, DeferredToolResults, RunContext
from pydantic_ai.capabilities import AbstractCapability, ToolSearch
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydanticai_cycle import scripted_model, tool_result

VARIANTS = ("bare", "capability", "exception", "both", "in-toolsearch")


class PassThrough(AbstractCapability[Any]):
    """A capability that wraps the agent's toolset and does nothing else, as sayso's gate wraps it."""

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        return WrapperToolset(toolset)


class InToolSearch(ToolSearch[Any]):
    """The same pass-through wrapper, inside the `ToolSearch` pydantic-ai would add to the agent anyway."""

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        return super().get_wrapper_toolset(WrapperToolset(toolset))


def build(variant: str) -> Agent[None, str | DeferredToolRequests]:
    """The anchor's agent, with the variant's change."""
    capabilities: list[AbstractCapability[Any]] = (
        [PassThrough()] if variant in ("capability", "both") else [InToolSearch()] if variant == "in-toolsearch" else []
    )
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(scripted_model), output_type=[str, DeferredToolRequests], capabilities=capabilities
    )
    if variant in ("exception", "both", "in-toolsearch"):

        @agent.tool
        async def delete_file(ctx: RunContext[None], path: str) -> str:
            """Delete a file."""
            if not ctx.tool_call_approved:
                raise ApprovalRequired()
            return tool_result(path)

    else:

        @agent.tool_plain(requires_approval=True, name="delete_file")
        async def delete_file_declared(path: str) -> str:
            """Delete a file."""
            return tool_result(path)

    return agent


async def pairs(agent_a: Any, agent_b: Any, start: int, n: int) -> float:
    """CPU ms per pair over `n` pairs (pause, then resume on the stored-and-reloaded history)."""
    t = time.process_time()
    for i in range(start, start + n):
        r1 = await agent_a.run(user_request(i))
        approved = DeferredToolResults(approvals={c.tool_call_id: True for c in r1.output.approvals})
        history = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(r1.all_messages()))
        r2 = await agent_b.run(message_history=history, deferred_tool_results=approved)
        assert isinstance(r2.output, str), r2.output
    return (time.process_time() - t) / n * 1e3


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    agents = {v: (build(v), build(v)) for v in VARIANTS}
    cpu: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for v in VARIANTS:
        await pairs(*agents[v], 0, args.warmup)
    for block in range(args.blocks):
        order = VARIANTS[block % len(VARIANTS) :] + VARIANTS[: block % len(VARIANTS)]
        for v in order:
            cpu[v].append(await pairs(*agents[v], args.warmup + block * args.pairs, args.pairs))
    medians = {v: round(statistics.median(cpu[v]), 3) for v in VARIANTS}
    return {
        "kind": "engine_costs",
        "blocks": args.blocks,
        "pairs_per_block": args.pairs,
        "cpu_ms_per_pair": medians,
        "capability_ms": round(medians["capability"] - medians["bare"], 3),
        "exception_ms": round(medians["exception"] - medians["bare"], 3),
        "both_ms": round(medians["both"] - medians["bare"], 3),
        "in_toolsearch_ms": round(medians["in-toolsearch"] - medians["bare"], 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=50, help="pairs per block")
    ap.add_argument("--blocks", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=30)
    args = ap.parse_args()
    print(json.dumps(asyncio.run(main_async(args))), flush=True)


if __name__ == "__main__":
    main()
