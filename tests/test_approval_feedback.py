"""Confirmation with data (ADK Go, seed 004): feedback sent with an approval, and the body deciding a rejection."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import RunContext

from sayso import ApprovalRequest, Approve, InvalidDecision, Reject, Sayso, Skip, TooLarge, require_approval

from .conftest import MakeApp
from .models import calls_then_reply, tool_model

ran: list[str] = []


class Feedback(BaseModel):
    """What the person sends back with the approval of an itinerary."""

    liked: list[str]
    comment: str = ""


def review_itinerary(ctx: RunContext[Any], city: str) -> str:
    """Show the itinerary for a city to the person and learn what they like."""
    ran.append(city)
    itinerary = [f"old town of {city}", "harbour", "museum"]
    approval = require_approval(
        ctx,
        hint=f"Here is your itinerary for {city}. Which items appeal to you?",
        payload={"itinerary": itinerary},
        response_schema=Feedback,
        on_reject="call",
    )
    if not approval.approved:
        return f"Itinerary rejected by user: {approval.reason}"
    assert isinstance(approval.response, Feedback)
    return f"Itinerary approved; liked {', '.join(approval.response.liked)} ({approval.response.comment})"


def book_flight(ctx: RunContext[Any], to: str) -> str:
    """Book a flight."""
    ran.append(to)
    require_approval(ctx, hint=f"Book a flight to {to}?")
    return f"booked {to}"


def route(said: str) -> tuple[str, dict[str, Any]]:
    verb, city = said.split(" ", 1)
    return ("review_itinerary", {"city": city}) if verb == "plan" else ("book_flight", {"to": city})


@pytest.fixture
def app(make_app: MakeApp) -> Sayso:
    ran.clear()
    return make_app({"guide": {"model": "m", "tools": [review_itinerary, book_flight]}}, model=tool_model(route))


async def test_the_approval_carries_feedback_that_the_body_reads_as_its_model(app: Sayso) -> None:
    """`Approve(payload=...)` is checked against the tool's `response_schema`; the body gets it as a `Feedback`."""
    async with app:
        paused = await app.run("plan Lisbon")
        [request] = paused.requests
        assert isinstance(request, ApprovalRequest)
        assert request.payload == {"itinerary": ["old town of Lisbon", "harbour", "museum"]}
        assert request.response_schema is not None and request.response_schema["required"] == ["liked"]
        assert request.on_reject == "call"
        done = await app.decide(request.request_id, Approve(payload={"liked": ["harbour"], "comment": "no museums"}))
        audit = [r.body for r in await app.audit_log() if r.body.get("request_id") == request.request_id]
    assert done.run.output == "model read: Itinerary approved; liked harbour (no museums)"
    assert ran == ["Lisbon", "Lisbon"]
    assert audit[0]["response"] == {"liked": ["harbour"], "comment": "no museums"}


async def test_feedback_that_breaks_the_schema_is_refused_and_the_request_stays_open(app: Sayso) -> None:
    """A payload missing a required field (or none at all) is refused naming the field; a good one then goes through."""
    async with app:
        [request] = (await app.run("plan Porto")).requests
        with pytest.raises(InvalidDecision, match="payload: liked: field required"):
            await app.decide(request.request_id, Approve(payload={"comment": "hm"}))
        with pytest.raises(InvalidDecision, match="payload: "):
            await app.decide(request.request_id, Approve())
        assert (await app.request(request.request_id)).decision is None
        done = await app.decide(request.request_id, Approve(payload={"liked": []}))
    assert done.run.output == "model read: Itinerary approved; liked  ()"


async def test_feedback_larger_than_the_answer_limit_is_refused_and_the_request_stays_open(app: Sayso) -> None:
    """The feedback sent with an approval is an answer: past `limits.answer_bytes` it is refused before anything is
    recorded, as a rejection's reason or an input's value is, and the body never reads it."""
    async with app:
        [request] = (await app.run("plan Porto")).requests
        with pytest.raises(TooLarge, match="the answer takes"):
            await app.decide(request.request_id, Approve(payload={"liked": ["x" * 200_000]}))
        assert (await app.request(request.request_id)).decision is None
        done = await app.decide(request.request_id, Approve(payload={"liked": ["harbour"]}))
    assert done.run.output == "model read: Itinerary approved; liked harbour ()"
    assert ran == ["Porto", "Porto"]


async def test_a_rejection_runs_the_body_again_to_decide_itself(app: Sayso) -> None:
    """With `on_reject="call"` the body runs on a rejection, reads `approved=False` and the reason, and answers."""
    async with app:
        [request] = (await app.run("plan Rome")).requests
        done = await app.decide(request.request_id, Reject(reason="too touristy"))
    assert done.run.output == "model read: Itinerary rejected by user: too touristy"
    assert ran == ["Rome", "Rome"]


async def test_a_skip_still_denies_without_running_the_body(app: Sayso) -> None:
    """Only a rejection calls the body again; a skip is a denial the model reads."""
    async with app:
        [request] = (await app.run("plan Oslo")).requests
        done = await app.decide(request.request_id, Skip(reason="later"))
    assert done.run.output == "model read: Skipped: later"
    assert ran == ["Oslo"]


async def test_an_approval_without_a_schema_takes_any_payload_and_a_rejection_denies(app: Sayso) -> None:
    """Without `response_schema` a payload goes unchecked (ADK's confirmation payload); a rejection denies the call."""
    async with app:
        [first, second] = [(await app.run(f"fly {city}")).requests[0] for city in ("Oslo", "Bergen")]
        assert isinstance(first, ApprovalRequest) and first.response_schema is None and first.on_reject == "deny"
        approved = await app.decide(first.request_id, Approve(payload={"seat": "12A"}))
        done = await app.decide(second.request_id, Reject(reason="too expensive"))
    assert approved.run.output == "model read: booked Oslo"
    assert done.run.output == "model read: Declined: too expensive"
    assert ran == ["Oslo", "Bergen", "Oslo"]


async def test_an_unusable_response_schema_fails_the_run_naming_it(make_app: MakeApp) -> None:
    """A `response_schema` that is neither a type, a model nor a JSON Schema fails the run with a config error."""

    def ask_badly(ctx: RunContext[Any]) -> str:
        """Ask with a broken schema."""
        require_approval(ctx, hint="x", response_schema={"type": "nonsense"})
        return "never"

    model = calls_then_reply(("ask_badly", {}), reply="never read")
    async with make_app({"guide": {"model": "m", "tools": [ask_badly]}}, model=model) as app:
        failed = await app.run("go")
    assert failed.status == "failed"
    assert failed.error is not None and failed.error.startswith(
        "ConfigError: response_schema is not a valid JSON Schema"
    )


async def test_an_approval_without_the_feedback_asked_for_says_so(app: Sayso) -> None:
    """Approving without any payload where the tool asked for feedback names what is missing, in plain words."""
    async with app:
        [request] = (await app.run("plan Faro")).requests
        with pytest.raises(InvalidDecision) as refused:
            await app.decide(request.request_id, Approve())
    assert refused.value.problem == "payload: this approval needs the feedback the tool asked for (liked, comment)"
    assert "none" not in refused.value.problem.lower()
