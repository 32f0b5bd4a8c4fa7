"""An agent name a caller gives that no entry of the config has is refused as not found, on every interface.

The runtime raises `AgentNotFound` once, wherever a name comes in; each edge says so in its own
words: REST's problem naming the `agent` field, A2A's and AG-UI's answer for an endpoint no agent
serves, MCP's unknown tool. Nothing is started or stored for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.exceptions import ToolError

from sayso import AgentNotFound, Sayso
from sayso.protocols.mcp import mcp_server

from .a2a_helpers import HEADERS, user_message
from .conftest import ServerFactory, example_config


async def test_rest_refuses_a_run_or_thread_for_an_unknown_agent_naming_the_field(serve: ServerFactory) -> None:
    """`POST /v1/runs` and `POST /v1/threads` with an unknown `agent` answer 422, naming the field and the agents."""
    server = await serve()
    async with server.client() as client:
        for path, body in (("/v1/runs", {"message": "hi", "agent": "nope"}), ("/v1/threads", {"agent": "nope"})):
            response = await client.post(path, json=body)
            assert response.status_code == 422, response.text
            problem = response.json()
            assert problem["type"].endswith("/invalid-request")
            assert "'nope'" in problem["detail"] and "files" in problem["detail"]
            assert problem["errors"][0]["loc"] == ["agent"]
        assert (await client.get("/v1/threads")).json()["threads"] == []


async def test_a2a_json_rpc_to_an_unknown_agent_is_not_found(serve: ServerFactory) -> None:
    """A JSON-RPC call to `/a2a/<unknown>` is answered 404, and no agent card is there either."""
    server = await serve()
    async with server.client() as client:
        body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": user_message("hi")}}
        response = await client.post("/a2a/nope", json=body, headers=HEADERS)
        assert response.status_code == 404, response.text
        assert (await client.get("/a2a/nope/.well-known/agent-card.json")).status_code == 404
        assert (await client.get("/v1/threads")).json()["threads"] == []


async def test_ag_ui_run_of_an_unknown_agent_is_not_found(serve: ServerFactory) -> None:
    """`POST /ag-ui/<unknown>` is answered 404; nothing runs."""
    server = await serve()
    run_input = {
        "threadId": "thr_x",
        "runId": "r1",
        "state": None,
        "messages": [{"id": "m1", "role": "user", "content": "hi"}],
        "tools": [],
        "context": [],
        "forwardedProps": None,
    }
    async with server.client() as client:
        response = await client.post("/ag-ui/nope", json=run_input)
        assert response.status_code == 404, response.text
        assert (await client.get("/v1/threads")).json()["threads"] == []


async def test_mcp_call_of_an_unknown_agent_is_an_unknown_tool(tmp_path: Path) -> None:
    """Over MCP each agent is a tool: calling a name no agent has is MCP's unknown-tool error."""
    sayso = Sayso(example_config(store=f"sqlite:///{tmp_path / 'sayso.db'}"))
    async with sayso, FastMCPClient(mcp_server(sayso)) as client:
        assert "files" in [t.name for t in await client.list_tools()]
        with pytest.raises(ToolError, match="nope"):
            await client.call_tool("nope", {"message": "hi"})
        assert await sayso.threads() == []


async def test_python_names_the_unknown_agent(tmp_path: Path) -> None:
    """`Sayso.run` with an unknown agent raises `AgentNotFound`, naming it and what is configured."""
    async with Sayso(example_config(store=f"sqlite:///{tmp_path / 'sayso.db'}")) as sayso:
        with pytest.raises(AgentNotFound) as raised:
            await sayso.run("hi", agent="nope")
        assert raised.value.agent == "nope" and raised.value.field == "agent"
        assert "files" in str(raised.value)
        assert await sayso.threads() == []
