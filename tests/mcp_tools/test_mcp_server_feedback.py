"""An approval that asks for feedback (a tool's `response_schema`, docs/concepts/pauses.md) through sayso's `/mcp`:
its form has the feedback's fields beside approve/reject, so an MCP client can give what the tool asks for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import mcp_types
import pytest

from sayso import Config, Sayso
from sayso.protocols import protocol_apps, protocol_routers
from sayso.server import create_app

from ..conftest import LiveServer
from ..models import tool_model
from ..test_approval_feedback import ran, route
from .test_mcp_server import Person, client, text


@pytest.fixture
def guide(tmp_path: Path) -> Iterator[LiveServer]:
    """`/mcp` for an agent whose `review_itinerary` asks for the person's `Feedback` (liked, comment) with approval."""
    ran.clear()
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "models": {"m": "test"},
            "agents": {"guide": {"model": "m", "tools": ["tests.test_approval_feedback:review_itinerary"]}},
            "base_dir": tmp_path,
        }
    )
    sayso = Sayso(config, models={"m": tool_model(route)})
    app = create_app(sayso, routers=protocol_routers(sayso), apps=protocol_apps(sayso), expire_every_seconds=None)
    served = LiveServer.in_thread(app)
    yield served
    served.stop()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_approval_asking_for_feedback_is_a_form_with_its_fields_and_the_tool_reads_them(
    guide: LiveServer, mode: str
) -> None:
    """The form shows what the tool sent (the itinerary) and has the feedback's fields; an approval without them is
    asked again saying what is missing (it was asked again and again, with no field to give it in), and one with
    them reaches the tool as its `Feedback`."""
    person = Person(
        {"decision": "approve"},
        {"decision": "approve", "feedback.liked": '["harbour"]', "feedback.comment": "no museums"},
    )
    async with client(guide, person, mode=mode) as mcp:
        result = await mcp.call_tool("guide", {"message": "plan Lisbon"})
    assert text(result).startswith("model read: Itinerary approved; liked harbour (no museums)")
    first, again = person.asked
    assert isinstance(first, mcp_types.ElicitRequestFormParams)
    assert '"old town of Lisbon"' in first.message
    fields = first.requested_schema["properties"]
    assert {"decision", "reason", "feedback.liked", "feedback.comment"} <= set(fields)
    assert first.requested_schema["required"] == ["decision"]
    assert again.message.startswith("Not accepted: payload: this approval needs the feedback the tool asked for")


async def test_a_rejection_needs_no_feedback(guide: LiveServer) -> None:
    """The feedback's fields are for an approval: a rejection with none of them is taken as it is."""
    async with client(guide, Person({"decision": "reject", "reason": "too far"})) as mcp:
        result = await mcp.call_tool("guide", {"message": "plan Lisbon"})
    assert text(result).startswith("model read: Itinerary rejected by user: too far")
