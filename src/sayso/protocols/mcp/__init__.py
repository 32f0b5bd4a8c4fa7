"""sayso's agents served to MCP clients: `/mcp` (streamable HTTP), one tool per agent, pauses as elicitations.

Needs the `mcp` extra. `sayso serve` mounts it; embed it with `mcp_app(sayso)` (an ASGI app with
its own lifespan) or build the FastMCP server with `mcp_server(sayso)`.
"""

from __future__ import annotations

from ._mapping import decision_from, elicitation_for
from ._server import PATH, mcp_app, mcp_server

__all__ = ["PATH", "decision_from", "elicitation_for", "mcp_app", "mcp_server"]
