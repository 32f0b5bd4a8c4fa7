"""Runtime events (`Sayso.add_listener`): the same announcements whichever interface acted."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from sayso import Approve, Sayso, UsageError

from .conftest import MakeApp
from .tools import delete_file


def files_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model of these tests: `delete NAME` deletes it, `both` deletes a and b, a tool's result is read back."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    said = [p.content for p in last.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)]
    if not said:
        results = [str(p.content) for p in last.parts if isinstance(p, ToolReturnPart)]
        return ModelResponse(parts=[TextPart("\n".join(results))])
    words = said[-1].split()
    if words[:1] == ["delete"] and len(words) == 2:
        return ModelResponse(parts=[ToolCallPart("delete_file", {"name": words[1]})])
    if words == ["both"]:
        return ModelResponse(parts=[ToolCallPart("delete_file", {"name": n}) for n in ("a", "b")])
    return ModelResponse(parts=[TextPart("ok")])


def make(make_app: MakeApp, clock: Callable[[], float] = time.time, **interrupt: Any) -> Sayso:
    agents = {"files": {"model": "m", "tools": [delete_file], "interrupt": {"tools": ["delete_file"], **interrupt}}}
    return make_app(agents, model=FunctionModel(files_model), clock=clock)


async def test_opened_decided_and_skipped_requests_are_announced(make_app: MakeApp) -> None:
    """Listeners hear each request opened and decided, by a person or by the system when a new message skips it, and
    nothing for a repeat."""
    events: list[tuple[str, Any]] = []
    app = make(make_app)
    app.add_listener(lambda event, data: events.append((event, data)))
    async with app:
        paused = await app.run("both")
        first, second = paused.requests
        await app.decide(first.request_id, Approve(), principal="local")
        await app.decide(first.request_id, Approve(), principal="local")  # a repeat announces nothing
        await app.run("never mind", thread_id=paused.thread_id)
    assert [(e, d["request"]["id"]) for e, d in events] == [
        ("request.opened", first.request_id),
        ("request.opened", second.request_id),
        ("request.decided", first.request_id),
        ("request.decided", second.request_id),
    ]
    assert (events[2][1]["decision"]["kind"], events[2][1]["by"], events[2][1]["principal"]) == (
        "approve",
        "person",
        "local",
    )
    assert (events[3][1]["decision"]["kind"], events[3][1]["by"], events[3][1]["principal"]) == (
        "skip",
        "person",
        "local",
    )


async def test_expired_requests_are_announced_once(make_app: MakeApp) -> None:
    """An expired request is announced once, however many times the expiry sweep runs."""
    events: list[str] = []
    now = [1000.0]
    app = make(make_app, clock=lambda: now[0], ttl_seconds=10)
    app.add_listener(lambda event, data: events.append(event))
    async with app:
        await app.run("delete x")
        now[0] = 2000.0
        await app.expire()
        await app.expire()
    assert events == ["request.opened", "request.expired"]


async def test_the_outbox_is_pruned_past_the_configured_retention(make_app: MakeApp) -> None:
    """`prune_events` deletes a delivered event and its delivery once older than `webhooks_retention_days` (by the
    runtime's clock), keeps it before, and refuses a retention that is not positive."""
    now = [1_000.0]
    app = make(make_app, clock=lambda: now[0])
    app.config.webhooks_retention_days = 2
    async with app:
        await app.run("delete x")
        [event] = await app.claim_events(["hook"])
        assert await app.settle_event(event.delivery_id, status="delivered")
        now[0] += 2 * 86_400
        assert await app.prune_events() == 0  # settled exactly two days ago: kept
        now[0] += 1
        # The delivery, then its event, and the run's own update (`run.updated`, which no webhook takes).
        assert await app.prune_events() == 3
        assert await app.claim_events(["hook"]) == []
        with pytest.raises(UsageError, match="positive"):
            await app.prune_events(retention_days=0)
