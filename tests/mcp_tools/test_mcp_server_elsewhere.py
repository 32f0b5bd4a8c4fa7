"""sayso's `/mcp` when a request it asks is answered elsewhere meanwhile (docs/guides/mcp.md#sayso-as-an-mcp-server):
the person decides in the inbox (REST here) while their MCP client still shows the form, then answers it there too.

The call carries on with where the run went (the agent's reply), on a handshake-era session as on a stateless one,
rather than failing with "only a paused run takes answers" while the run it started has finished.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from ..conftest import LiveServer
from . import hooks
from .conftest import ElicitServer
from .test_mcp_server import Person, client, serve, text


@pytest.fixture
def live(tmp_path: Path, elicit_server: ElicitServer) -> Iterator[LiveServer]:
    hooks.sent.clear()
    served = serve(tmp_path, elicit_server)
    yield served
    served.stop()


class DecidedInTheInbox(Person):
    """Decides the open request over REST (`verdict`) as soon as the client is asked, then answers the form too."""

    def __init__(self, live: LiveServer, verdict: str, *answers: dict[str, Any]) -> None:
        super().__init__(*answers)
        self.live = live
        self.verdict = verdict

    def decide_in_the_inbox(self) -> None:
        with self.live.client() as rest:
            [request] = rest.get("/v1/requests").json()["requests"]
            decided = rest.post(f"/v1/requests/{request['id']}/decision", json={"kind": self.verdict})
            assert decided.status_code == 200, decided.text

    async def __call__(self, context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        if not self.asked:
            await asyncio.to_thread(self.decide_in_the_inbox)
        return await super().__call__(context, params)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize(("verdict", "reply"), [("approve", "announced: lunch"), ("reject", "Declined by the person.")])
async def test_a_request_decided_in_the_inbox_while_its_form_is_shown_ends_the_call_with_the_agents_reply(
    live: LiveServer, mode: str, verdict: str, reply: str
) -> None:
    """The inbox's decision counts (first decision wins); the form's answer changes nothing, the call returns the
    agent's reply, and an approved call ran once."""
    person = DecidedInTheInbox(live, verdict, {"decision": "approve"})
    async with client(live, person, mode=mode) as mcp:
        result = await mcp.call_tool("ops", {"message": "announce lunch"})
    assert text(result).startswith(reply)
    assert len(person.asked) == 1
    assert hooks.sent == (["lunch"] if verdict == "approve" else [])
