"""An MCP server's result over HTTP is not cut at a hidden size (docs/guides/mcp.md#servers-as-tool-sources).

The MCP SDK's client refuses a server-sent event over 1 MiB by default, which lost a result after its tool had
run; sayso reads results of any size over HTTP, as over stdio and from Python tools.
"""

from __future__ import annotations

import pytest

from ..models import tool_model, verbs
from .conftest import ElicitServer, MakeMcpApp


@pytest.mark.parametrize("session", ["legacy", "auto"])
async def test_a_result_over_one_mebibyte_reaches_the_model(
    make_mcp_app: MakeMcpApp, elicit_server: ElicitServer, session: str
) -> None:
    model = tool_model(verbs(report=("big_report", "size")), read=lambda tool, result: f"{len(result)} characters")
    app = make_mcp_app(
        {"reports": {"url": elicit_server.mcp_url, "session": session}},
        {"host": {"mcp": [{"server": "reports", "tools": ["big_report"]}]}},
        model=model,
    )
    async with app:
        done = await app.run("report 1500000")
    assert (done.status, done.output) == ("completed", "1500000 characters")
