"""A thread id that is someone else's thread: every interface answers the same, and tells nothing of the thread.

A thread id names one thread for everyone, and a client may choose its own (`thread_id`, AG-UI's
`threadId`, A2A's `contextId`): a message to an id no thread has starts one, so a message to an id
that is someone else's thread is refused, which tells that the id is taken. Nothing more: REST,
A2A, AG-UI, MCP and the CLI refuse it in the same words, for an outsider as for an approver who may
read that thread, naming neither its owner, its agent nor where its run stands; reading it answers
an outsider as an id no thread has.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError
from typer.testing import CliRunner

from sayso import Config, Sayso
from sayso.cli import app
from sayso.protocols import protocol_apps, protocol_routers
from sayso.server import create_app

from ..conftest import InProcess, LiveServer
from ..protocols.a2a_helpers import rpc, user_message
from .conftest import REFUNDS
from .test_protocols import ag_ui, run_input


@pytest.fixture
def mcp_url(refunds: Config) -> Iterator[str]:
    """`/mcp` of a second server on the same store, on a real socket for the MCP client."""
    sayso = Sayso(refunds)
    app_ = create_app(sayso, routers=protocol_routers(sayso), apps=protocol_apps(sayso), expire_every_seconds=None)
    served = LiveServer.in_thread(app_)
    yield f"{served.base_url}/mcp"
    served.stop()


async def refusals(server: InProcess, mcp_url: str, name: str, thread_id: str) -> dict[str, str]:
    """What `name`'s message into `thread_id` is told, by interface."""
    said: dict[str, str] = {}
    message = "refund 5 to me"
    async with server.client(f"{name}-token") as client:
        rest = await client.post("/v1/runs", json={"message": message, "thread_id": thread_id})
        assert rest.status_code == 403, rest.text
        said["rest"] = rest.json()["detail"]
        a2a = await rpc(client, "payments", "SendMessage", {"message": user_message(message, context_id=thread_id)})
        said["a2a"] = a2a.json()["error"]["message"]
    said_by_user = [{"id": uuid.uuid4().hex, "role": "user", "content": message}]
    events = await ag_ui(server, run_input(thread_id, said_by_user), f"{name}-token")
    assert (events[-1].type, events[-1].code) == ("RUN_ERROR", "forbidden")
    said["ag-ui"] = events[-1].message
    transport = StreamableHttpTransport(mcp_url, headers={"Authorization": f"Bearer {name}-token"})
    async with FastMCPClient(transport) as mcp:
        with pytest.raises(ToolError) as refused:
            await mcp.call_tool("payments", {"message": message, "thread_id": thread_id})
    said["mcp"] = str(refused.value)
    command = ["run", str(REFUNDS), message, "--thread", thread_id, "--principal", name]
    cli = await asyncio.to_thread(CliRunner().invoke, app, command)  # the command runs its own event loop
    assert cli.exit_code == 4, cli.output
    said["cli"] = " ".join(cli.output.split())
    return said


async def test_someone_elses_thread_id_is_refused_alike_everywhere_and_tells_nothing_more(
    server: InProcess, mcp_url: str
) -> None:
    thread_id = f"p-{uuid.uuid4().hex[:8]}"  # an id alice chose, as clients may
    async with server.client("alice-token") as alice:
        run = (await alice.post("/v1/runs", json={"message": "refund 250 to acme", "thread_id": thread_id})).json()
    assert run["status"] == "paused"
    words = (
        f"{thread_id!r}: only the thread's owner may send messages into it, not 'dana'; "
        "to start a thread of your own, leave the thread id out or choose another"
    )
    dana = await refusals(server, mcp_url, "dana", thread_id)
    for interface, said in dana.items():
        assert words in said, interface
        assert not any(hint in said for hint in ("alice", "payments", "refund", "paused", "finance")), said
    # bob may read the thread (he approves its refund) and is told the same; dana reading it is told what a made-up
    # id is told.
    bob = await refusals(server, mcp_url, "bob", thread_id)
    assert bob["rest"] == words.replace("'dana'", "'bob'")
    async with server.client("dana-token") as client:
        made_up = await client.get("/v1/threads/p-made-up")
        read = await client.get(f"/v1/threads/{thread_id}")
    assert read.status_code == 404 == made_up.status_code
    assert read.json()["detail"] == made_up.json()["detail"].replace("p-made-up", thread_id)
    async with server.client("alice-token") as alice:
        thread = (await alice.get(f"/v1/threads/{thread_id}")).json()
        request = (await alice.get(f"/v1/requests/{run['requests'][0]['id']}")).json()
    assert thread["active_run"]["run_id"] == run["run_id"] and request["status"] == "open"
