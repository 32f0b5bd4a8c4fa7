"""sayso's `/mcp` driven as different principals (docs/guides/mcp.md#sayso-as-an-mcp-server): whatever a client
holds of another principal's call (a background task's id), it neither reads nor answers what that call waits on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp_tasks import call_tool_task
from fastmcp_tasks.client import ToolTask
from fastmcp_tasks.client_models import ClientCreateTaskResult
from mcp.shared.exceptions import MCPError

from ..conftest import LiveServer
from . import hooks
from .conftest import ElicitServer
from .test_mcp_server import TOKENS, serve


@pytest.fixture
def signed(tmp_path: Path, elicit_server: ElicitServer) -> Iterator[LiveServer]:
    hooks.sent.clear()
    served = serve(tmp_path, elicit_server, principals=True)
    yield served
    served.stop()


def tasks_client(served: LiveServer, name: str, asked: list[str] | None = None) -> FastMCPClient[Any]:
    """A fastmcp client of `/mcp` signed in as `name`, approving whatever it is asked (noted in `asked`)."""

    async def approve(message: str, response_type: Any, params: Any, context: Any) -> mcp_types.ElicitResult:
        (asked if asked is not None else []).append(message)
        return mcp_types.ElicitResult(action="accept", content={"decision": "approve"})

    headers = {"Authorization": f"Bearer {TOKENS[name]}"}
    return FastMCPClient(
        StreamableHttpTransport(f"{served.base_url}/mcp", headers=headers), elicitation_handler=approve
    )


async def test_another_principal_holding_a_tasks_id_neither_sees_nor_answers_what_it_waits_on(
    signed: LiveServer,
) -> None:
    """Ada's tasked call parks on her approval; Bob, given its task id, is told there is no such task (he is never
    shown the approval, nor can he approve it as Ada), the request stays open for Ada, and her answer runs it once."""
    async with tasks_client(signed, "ada") as ada:
        task = await call_tool_task(ada, "ops", {"message": "announce cake"})
        await task.wait(state="input_required", timeout=30)
        stored = ClientCreateTaskResult.model_validate(task.create_result.model_dump(mode="json", by_alias=True))

    bob_asked: list[str] = []
    async with tasks_client(signed, "bob", bob_asked) as bob:
        with pytest.raises(MCPError, match=f"Task {stored.task_id} not found"):
            await ToolTask(bob, "ops", stored).result()
    assert bob_asked == []
    assert hooks.sent == []
    with signed.client(TOKENS["ada"]) as rest:
        [waiting] = rest.get("/v1/requests").json()["requests"]
        assert waiting["tool_name"] == "announce"

    async with tasks_client(signed, "ada") as ada:
        done = await ToolTask(ada, "ops", stored).result()
    assert str(done.data).startswith("announced: cake")
    assert hooks.sent == ["cake"]
