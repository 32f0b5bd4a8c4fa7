"""kagent's URL layout: `/agents/{namespace}/{name}` is the same A2A endpoint as `/a2a/{name}` (issue 23)."""

from __future__ import annotations

from pathlib import Path

import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import TaskState
from google.protobuf.json_format import MessageToDict

from .a2a_helpers import HEADERS, URI, collect, sdk_message, user_message
from .conftest import ServerFactory


async def test_an_sdk_client_at_the_kagent_address_pauses_and_approves(serve: ServerFactory, sandbox: Path) -> None:
    """A client given kagent's address finds a card naming that address, and pauses and approves there."""
    server = await serve(a2a={"namespace": "ops"})
    async with server.client() as http:
        card = (await http.get("/agents/ops/files/.well-known/agent-card.json")).json()
        assert card["supportedInterfaces"][0]["url"] == f"{http.base_url}/agents/ops/files"
        assert card["capabilities"]["extensions"][0]["uri"] == URI
        client = await create_client(
            f"{http.base_url}/agents/ops/files", client_config=ClientConfig(streaming=True, httpx_client=http)
        )
        [*_, paused] = await collect(client, sdk_message("delete notes"))
        update = paused.status_update
        assert update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        [tool] = MessageToDict(update.status.message)["metadata"][URI]["tools"]
        assert tool["name"] == "delete_file"
        answer = {"type": "tool_approval_response", "approvals": [{"id": tool["id"], "approved": True}]}
        request = sdk_message(task_id=update.task_id, context_id=update.context_id, payload=answer)
        [*_, done] = await collect(client, request)
        assert done.status_update.status.state == TaskState.TASK_STATE_COMPLETED
        await client.close()

        # The same task, read at sayso's own address: one endpoint under two paths.
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": update.task_id}}
        task = (await http.post("/a2a/files", json=body, headers=HEADERS)).json()["result"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert not (sandbox / "notes.txt").exists()


async def test_the_default_namespace_is_kagents_and_another_namespace_is_not_served(serve: ServerFactory) -> None:
    """By default the entries live under `/agents/kagent/`; a namespace that is not configured is not found."""
    server = await serve()
    async with server.client() as http:
        card = (await http.get("/agents/kagent/files/.well-known/agent-card.json")).json()
        assert card["supportedInterfaces"][0]["url"] == f"{http.base_url}/agents/kagent/files"
        root = (await http.get("/.well-known/agent-card.json")).json()
        assert root["supportedInterfaces"][0]["url"] == f"{http.base_url}/a2a/files"
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": user_message("list")}}
        sent = await http.post("/agents/kagent/files", json=body, headers=HEADERS)
        assert sent.headers["A2A-Extensions"] == URI
        assert sent.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert (await http.post("/agents/default/files", json=body, headers=HEADERS)).status_code == 404


@pytest.mark.parametrize("namespace", ["", "a/b", "-x"])
async def test_a_namespace_that_cannot_be_a_path_segment_is_a_config_error(
    serve: ServerFactory, namespace: str
) -> None:
    with pytest.raises(ValueError, match="namespace"):
        await serve(a2a={"namespace": namespace})
