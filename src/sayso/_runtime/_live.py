"""Live MCP calls: the runtime's `McpHost`, in which a call whose server asked the person stays open.

See docs/guides/mcp.md#when-a-server-asks-the-person.

While the runtime is open (`sayso serve`, `sayso chat`, a Python program), every MCP call of
its agents runs in one host task group that outlives the runs. A form or URL a server pushes
mid-call pauses the run while the call stays blocked; the resumed run, in this process, hands
the person's answer back on it. Decisions that close such a question without an answer (a skip
when the person sends a message instead, a cancelled run, an expiry) tell the blocked call
"cancel" at once, so the server is not left waiting. When the runtime closes, the calls still
open are cut; a later resume replays them or reports that they did not complete.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

from ._events import EventData, RequestEvent

if TYPE_CHECKING:
    from ._kernel import Kernel

_CLOSING = frozenset({"skip", "expired"})
"""Decisions that close a question without an answer: nothing resumes the call to hand one back."""


async def open_mcp_host(k: Kernel) -> AsyncExitStack:
    """Open one MCP host for every agent with MCP servers; closing the returned stack cuts the calls still open."""
    stack = AsyncExitStack()
    toolsets = [built.mcp for built in k.agents.values() if built.mcp is not None]
    if not toolsets:
        return stack
    from .._engine.mcp.calls import McpHost  # the `mcp` extra is needed only by agents that bind MCP servers

    host = await stack.enter_async_context(McpHost(keeps_calls=True))

    def close_unanswered(event: RequestEvent, data: EventData) -> None:
        request = data["request"]
        if request["kind"] != "elicitation" or request["durable"]:
            return
        if event == "request.expired" or ("decision" in data and data["decision"].get("kind") in _CLOSING):
            host.close_question((request["run_id"], request["tool_call_id"]))

    for toolset in toolsets:
        toolset.host = host
    k.events.listeners.append(close_unanswered)

    def detach() -> None:
        k.events.listeners.remove(close_unanswered)
        for toolset in toolsets:
            toolset.host = None

    stack.callback(detach)
    return stack
