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

from sayso import Config, Sayso
from sayso.protocols import protocol_apps, protocol_routers
from sayso.server import create_app

from ..conftest import LiveServer
from ..models import tool_model
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


@pytest.fixture
def two_calls(tmp_path: Path) -> Iterator[LiveServer]:
    """`/mcp` for an agent that announces `one` and `two` in one turn, each call gated: one pause, two requests."""
    hooks.sent.clear()
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "models": {"m": "test"},
            "agents": {
                "ops": {"model": "m", "tools": ["tests.mcp_tools.hooks:announce"], "interrupt": {"tools": ["announce"]}}
            },
            "base_dir": tmp_path,
        }
    )
    both = tool_model(lambda said: [("announce", {"text": "one"}), ("announce", {"text": "two"})], read="{result}")
    sayso = Sayso(config, models={"m": both})
    app = create_app(sayso, routers=protocol_routers(sayso), apps=protocol_apps(sayso), expire_every_seconds=None)
    served = LiveServer.in_thread(app)
    yield served
    served.stop()


class TwoRejectedInTheInbox(Person):
    """Rejects `two` over REST as soon as the client is asked its first form, then approves every form it is shown."""

    def __init__(self, live: LiveServer) -> None:
        super().__init__(*[{"decision": "approve"}] * 10)
        self.live = live
        self.rejected = False

    def reject_two(self) -> None:
        with self.live.client() as rest:
            [two] = [r for r in rest.get("/v1/requests").json()["requests"] if r["args"] == {"text": "two"}]
            decided = rest.post(f"/v1/requests/{two['id']}/decision", json={"kind": "reject", "reason": "not two"})
            assert decided.status_code == 200, decided.text

    async def __call__(self, context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        if not self.rejected:  # once: the server may ask again while the first form's rejection is on its way
            self.rejected = True
            await asyncio.to_thread(self.reject_two)
        return await super().__call__(context, params)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_one_of_two_requests_decided_in_the_inbox_is_not_asked_again_and_the_others_answer_counts(
    two_calls: LiveServer, mode: str
) -> None:
    """A pause of two approvals; `two` is rejected in the inbox while the client shows `one`. The client's answer to
    `one` is taken and `two` keeps its rejection: the client is never asked `two` again as "already decided" (a
    handshake-era client was, round after round, its answer to `one` dropped each time, until the call gave up)."""
    person = TwoRejectedInTheInbox(two_calls)
    async with client(two_calls, person, mode=mode) as mcp:
        result = await mcp.call_tool("ops", {"message": "go"})
    assert not result.is_error, result
    assert hooks.sent == ["one"]
    assert not any("already decided" in asked.message for asked in person.asked)
    assert len(person.asked) <= 2
