"""An MCP server that is down when a run needs it (docs/guides/mcp.md#servers-as-tool-sources): the run fails with
an error naming the server, so a person who just approved a call of it knows which one to start again."""

from __future__ import annotations

from sayso import Approve

from .conftest import MakeMcpApp, running_elicit_server
from .test_elicitation import model


async def test_a_call_approved_while_its_server_went_down_fails_the_run_naming_the_server(
    make_mcp_app: MakeMcpApp,
) -> None:
    """The gated call was asked while the server was up; approved after it stopped, it never went out: the run fails
    saying which server it could not reach, and nothing was booked."""
    with running_elicit_server() as (server, process):
        binding = {"server": "booking", "tools": ["book_table"], "require_approval": True}
        app = make_mcp_app({"booking": {"url": server.mcp_url}}, {"host": {"mcp": [binding]}}, model=model())
        async with app:
            paused = await app.run("book fri")
            [approval] = paused.requests
            assert approval.kind == "approval"
            process.kill()
            process.wait(timeout=10)
            await app.decide(approval.request_id, Approve())
            ended = await app.result(paused.run_id)
    assert ended.status == "failed"
    assert ended.error is not None
    assert ended.error.startswith("McpServerUnreachable: cannot reach MCP server 'booking': "), ended.error
    assert "connect" in ended.error
