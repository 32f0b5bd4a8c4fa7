"""A server's questions as `elicitation` pauses (docs/guides/mcp.md#when-a-server-asks-the-person), against the fastmcp
test server over streamable HTTP.

Each way a server can ask has its own path back, and each is shown here as a person sees it:
a form pushed on a live call is answered on that call while the runtime that holds it is open;
when that runtime is gone the call is replayed (read-only tools, or `replay_elicitation`) or the
model reads that it did not complete; stateless round trips and parked tasks are answered from
any runtime; a URL the server requires is visited, then the call is retried.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from sayso import Accept, CallEnded, Cancel, Decline, ElicitationRequest, InvalidDecision, Sayso

from ..models import ToolModel, tool_model, verbs
from .conftest import ElicitServer, MakeMcpApp

PARTY = {"people": 2, "name": "Ada"}


def model() -> ToolModel:
    """`book DAY`, `quote DAY`, `guarded DAY`, `refund N`, `sign in`, `contacts` call the test server's tools, `ask
    TASK` the `booker` delegate; the model says what a call returned (what the delegate said, with its name)."""
    route = verbs(
        book=("book_table", "day"),
        quote=("quote", "day"),
        guarded=("book_table_guarded", "day"),
        refund=("refund_later", "amount"),
        sign_in="sign_in",
        contacts="crm_contacts",
        slot=("book_slot", "topic"),
        ask=("booker", "task"),
    )
    return tool_model(route, read=lambda tool, result: f"booker says: {result}" if tool == "booker" else result)


LIVE_TOOLS = ["book_table", "quote", "sign_in", "crm_contacts"]


def servers(server: ElicitServer) -> dict[str, Any]:
    """The test server twice: on a handshake-era session (pushed questions) and on the stateless one."""
    return {
        "booking": {"url": server.mcp_url, "session": "legacy"},
        "shop": {"url": server.mcp_url},
    }


AppFactory = Callable[..., Sayso]


@pytest.fixture
def app_for(make_mcp_app: MakeMcpApp, elicit_server: ElicitServer) -> AppFactory:
    """A runtime whose agent `host` binds the given tools of the test server (a new one shares the store)."""

    def make(binding: dict[str, Any] | None = None, **agents: dict[str, Any]) -> Sayso:
        host = {"mcp": [binding or {"server": "booking", "tools": LIVE_TOOLS}]}
        return make_mcp_app(servers(elicit_server), {"host": host, **agents}, model=model())

    return make


def eventually(check: Callable[[], bool], *, seconds: float = 10.0) -> None:
    """Wait until `check()` holds (the server hears an answer on its own schedule)."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the server never heard it"
        time.sleep(0.05)


async def test_a_form_pushed_mid_call_pauses_the_run_and_the_answer_goes_back_on_that_call(
    app_for: AppFactory, elicit_server: ElicitServer
) -> None:
    """The server's form becomes a request; while the runtime lives, the answer reaches the call still waiting."""
    app = app_for()
    async with app:
        paused = await app.run("book fri")
        assert paused.status == "paused"
        [request] = paused.requests
        assert isinstance(request, ElicitationRequest)
        assert (request.mode, request.server, request.delivery, request.tool_name) == (
            "form",
            "booking",
            "live",
            "book_table",
        )
        assert request.message == "Booking for fri: how many people, and under which name?"
        assert request.requested_schema is not None and request.requested_schema["required"] == ["people", "name"]
        assert elicit_server.answers() == []  # the server is still waiting on its question
        done = await app.decide(request.request_id, Accept(content=PARTY))
    assert done.run.status == "completed"
    assert done.run.output == "Booked fri for 2 (Ada)"
    # One question, answered once, on the one call: the table is booked once.
    assert elicit_server.answers() == ["accept"]
    assert elicit_server.bookings() == ["fri:2:Ada"]


async def test_content_that_breaks_the_schema_is_refused_field_by_field_and_a_decline_reaches_the_server(
    app_for: AppFactory, elicit_server: ElicitServer
) -> None:
    """A wrong answer leaves the pause open with a per-field error; declining lets the server go on its own way."""
    app = app_for()
    async with app:
        paused = await app.run("book sat")
        [request] = paused.requests
        with pytest.raises(InvalidDecision) as refused:
            await app.decide(request.request_id, Accept(content={"people": "many"}))
        assert refused.value.fields == {"people": "'many' is not of type 'integer'", "name": "is required"}
        assert (await app.result(paused.run_id)).status == "paused"
        done = await app.decide(request.request_id, Decline())
    assert done.run.output == "Booking declined"
    assert elicit_server.answers() == ["decline"]
    assert elicit_server.bookings() == []


async def test_a_date_time_or_uri_the_server_would_refuse_is_refused_here_and_the_form_stays_open(
    app_for: AppFactory, elicit_server: ElicitServer
) -> None:
    """A form's `date-time` and `uri` fields are checked before the answer goes back: text that is neither is refused
    naming each field and the form stays open on its call, so a well-formed answer still books the meeting."""
    app = app_for({"server": "booking", "tools": ["book_slot"]})
    async with app:
        paused = await app.run("slot budget")
        [request] = paused.requests
        assert isinstance(request, ElicitationRequest)
        with pytest.raises(InvalidDecision) as refused:
            await app.decide(request.request_id, Accept(content={"when": "next tuesday", "page": "the usual room"}))
        assert set(refused.value.fields) == {"when", "page"}
        assert (await app.result(paused.run_id)).status == "paused"
        slot = {"when": "2026-12-08T10:00:00Z", "page": "https://meet.example/budget"}
        done = await app.decide(request.request_id, Accept(content=slot))
    assert done.run.output == "Meeting on budget at 2026-12-08T10:00:00+00:00 on https://meet.example/budget"
    assert elicit_server.answers() == ["accept"]


async def test_a_form_only_its_closing_runtime_could_deliver_closes_as_cancelled_and_later_answers_are_refused(
    app_for: AppFactory, elicit_server: ElicitServer
) -> None:
    """A runtime that closes while it holds a live form of a tool that may not run twice closes the form as
    cancelled on the call (the server hears cancel, the run ends); an answer that comes later is refused, naming why."""
    first = app_for()
    async with first:
        paused = await first.run("book sun")
        [form] = paused.requests
        assert isinstance(form, ElicitationRequest) and form.needs_holder
    assert elicit_server.answers() == ["cancel"]
    later = app_for()
    async with later:
        ended = await later.result(paused.run_id)
        assert (ended.status, ended.requests) == ("completed", ())
        assert (await later.inbox()).requests == []
        closed = await later.request(form.request_id)
        assert closed.decision is not None
        assert (closed.decision.decision, closed.decision.by) == (Cancel(), "system")
        with pytest.raises(CallEnded, match="the call that asked this has ended: the process that held it stopped"):
            await later.decide(form.request_id, Accept(content=PARTY))
    assert elicit_server.answers() == ["cancel"]
    assert elicit_server.bookings() == []


async def test_replay_elicitation_issues_the_call_again_and_hands_the_stored_answer_to_the_same_form(
    app_for: AppFactory, elicit_server: ElicitServer
) -> None:
    """With `replay_elicitation`, another runtime issues the call again and answers the server's form from the store."""
    binding = {"server": "booking", "tools": ["book_table"], "replay_elicitation": True}
    first = app_for(binding)
    async with first:
        paused = await first.run("book mon")
    later = app_for(binding)
    async with later:
        done = await later.decide(paused.requests[0].request_id, Accept(content=PARTY))
        assert done.run.status == "completed"
        assert done.run.requests == ()
    assert done.run.output == "Booked mon for 2 (Ada)"
    assert elicit_server.bookings() == ["mon:2:Ada"]
    assert elicit_server.answers() == ["cancel", "accept"]


async def test_a_read_only_tool_is_replayed_by_default(app_for: AppFactory, elicit_server: ElicitServer) -> None:
    """A tool the server marks read-only is safe to call again, so its form's answer is replayed without opting in."""
    first = app_for()
    async with first:
        paused = await first.run("quote tue")
    later = app_for()
    async with later:
        done = await later.decide(paused.requests[0].request_id, Accept(content={"people": 3, "name": "Bo"}))
    assert done.run.output == "A table on tue for 3 costs 90 EUR"


async def test_a_stateless_round_trip_is_answered_from_any_runtime(
    app_for: AppFactory, elicit_server: ElicitServer
) -> None:
    """A question a stateless server asks through its result is durable: another runtime answers it."""
    binding = {"server": "shop", "tools": ["book_table_guarded"]}
    first = app_for(binding)
    async with first:
        paused = await first.run("guarded wed")
    [request] = paused.requests
    assert isinstance(request, ElicitationRequest)
    assert (request.delivery, request.server, request.mode) == ("round_trip", "shop", "form")
    later = app_for(binding)
    async with later:
        done = await later.decide(request.request_id, Accept(content={"people": 4, "name": "Cy"}))
    assert done.run.output == "Booked wed for 4 (Cy)"


async def test_a_task_parked_on_input_is_answered_by_its_id_from_another_runtime(
    app_for: AppFactory, elicit_server: ElicitServer
) -> None:
    """A call the server runs as a task stays parked on the server; the request keeps its id and any runtime answers."""
    binding = {"server": "shop", "tools": ["refund_later"]}
    first = app_for(binding)
    async with first:
        paused = await first.run("refund 5")
    [request] = paused.requests
    assert isinstance(request, ElicitationRequest)
    assert request.delivery == "task"
    assert request.message == "Why refund 5?"
    assert request.task is not None and request.task["taskId"]
    later = app_for(binding)
    async with later:
        done = await later.decide(request.request_id, Accept(content={"reason": "broken on arrival"}))
    assert done.run.output == "Refunded 5: broken on arrival"


async def test_a_url_pushed_mid_call_is_shown_and_done_goes_back_on_the_call(
    app_for: AppFactory, elicit_server: ElicitServer
) -> None:
    """A URL elicitation shows its page; the person says done (accept without content) and the call finishes."""
    app = app_for()
    async with app:
        paused = await app.run("sign in")
        [request] = paused.requests
        assert isinstance(request, ElicitationRequest)
        assert (request.mode, request.url, request.elicitation_id) == (
            "url",
            f"{elicit_server.base_url}/login?user=ada",
            "login-1",
        )
        with pytest.raises(InvalidDecision, match="accepted without content"):
            await app.decide(request.request_id, Accept(content={"x": 1}))
        done = await app.decide(request.request_id, Accept())
    assert done.run.output == "sign-in accept"


async def test_a_url_the_server_requires_is_visited_then_the_call_is_retried(
    app_for: AppFactory, elicit_server: ElicitServer
) -> None:
    """URL-elicitation-required pauses on the page; after the visit and "done", any runtime retries the call."""
    first = app_for()
    async with first:
        paused = await first.run("contacts")
    [request] = paused.requests
    assert isinstance(request, ElicitationRequest)
    assert (request.mode, request.delivery, request.message) == ("url", "retry", "Sign in to the CRM first")
    assert request.url is not None
    assert httpx.get(request.url).text == "signed in"  # the person, out of band
    later = app_for()
    async with later:
        done = await later.decide(request.request_id, Accept())
    assert done.run.output == "Ada Lovelace, Charles Babbage"


async def test_declining_a_required_url_ends_the_call_without_a_retry(
    app_for: AppFactory, elicit_server: ElicitServer
) -> None:
    """Declined or cancelled, a required URL is not retried; the model reads that the person declined."""
    app = app_for()
    async with app:
        declined = await app.run("contacts")
        done = await app.decide(declined.requests[0].request_id, Decline())
        assert done.run.output == "Declined: the person declined what the server asked for."
        cancelled = await app.run("contacts")
        done = await app.decide(cancelled.requests[0].request_id, Cancel())
    assert done.run.output == "Cancelled: the person dismissed what the server asked for, so the call did not complete."


async def test_a_new_message_closes_an_open_form_and_the_server_hears_cancel(
    app_for: AppFactory, elicit_server: ElicitServer
) -> None:
    """Sending a message instead of answering skips the form; the call still waiting is told "cancel" at once."""
    app = app_for()
    async with app:
        paused = await app.run("book thu")
        await app.run("quote thu", thread_id=paused.thread_id)
        eventually(lambda: elicit_server.answers()[:1] == ["cancel"])
        assert (await app.result(paused.run_id)).status == "cancelled"
    assert elicit_server.bookings() == []


async def test_a_form_asked_in_a_delegate_cascades_to_the_top_and_the_answer_goes_down(
    make_mcp_app: MakeMcpApp, elicit_server: ElicitServer
) -> None:
    """A delegate's MCP form pauses the coordinator; the person answers it there and both runs finish."""
    agents = {
        "coord": {"delegates": [{"agent": "booker", "description": "Books tables"}]},
        "booker": {"mcp": [{"server": "booking", "tools": ["book_table"]}]},
    }
    app = make_mcp_app(servers(elicit_server), agents, model=model())
    async with app:
        paused = await app.run("ask book fri", agent="coord")
        [request] = paused.requests
        assert isinstance(request, ElicitationRequest)
        assert request.agent_path == "coord/booker"
        assert request.run_id != paused.run_id
        done = await app.decide(request.request_id, Accept(content=PARTY))
    assert done.run.run_id == paused.run_id
    assert done.run.output is not None
    answer, note = done.run.output.split("\n\n", 1)
    assert answer == "booker says: Booked fri for 2 (Ada)"
    # The coordinator reads what its delegate's server asked and what the person answered
    # (docs/concepts/pauses.md#nested-agents).
    assert note == (
        "(Note: booker asked the person, for the MCP server 'booking', 'Booking for fri: how many people, and "
        'under which name?\' → accepted {"people": 2, "name": "Ada"}.)'
    )
    assert elicit_server.bookings() == ["fri:2:Ada"]
