"""A stdio MCP server whose tool asks the person a name and gives up waiting after a second, answering anyway."""

from __future__ import annotations

import asyncio

from fastmcp import Context, FastMCP

mcp = FastMCP("impatient")


@mcp.tool
async def book_table(day: str, ctx: Context) -> str:
    """Book a table on `day`, asking for the guest's name; books nothing when nobody answers in time."""
    try:
        answer = await asyncio.wait_for(ctx.elicit(f"Name for {day}?", response_type=str), 1)
    except TimeoutError:
        return "the server gave up waiting: nothing booked"
    return f"booked {day} ({answer.action})"


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
