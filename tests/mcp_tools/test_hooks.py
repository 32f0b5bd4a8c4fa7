"""A before-call hook (docs/guides/mcp.md#pausing-from-a-hook): one rule per agent that runs before every tool call and
may pause it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sayso import (
    Accept,
    AgentNotFound,
    ApprovalRequest,
    Approve,
    AskApproval,
    Config,
    ConfigError,
    ElicitationRequest,
    HookCall,
    Reject,
    Sayso,
    VisitUrl,
)

from ..models import tool_model, verbs
from . import hooks
from .conftest import ElicitServer

ROUTE = verbs(contacts="crm_contacts", announce=("announce", "text"))
"""`contacts` lists the test server's contacts, `announce TEXT` announces it; the model says what the call returned."""


@pytest.fixture(autouse=True)
def fresh_hooks() -> Iterator[None]:
    """Each test starts with no calls seen and nothing announced."""
    hooks.seen.clear()
    hooks.sent.clear()
    yield


def make_app(tmp_path: Path, server: ElicitServer | None = None, **agent: Any) -> Sayso:
    """A runtime whose agent has the `announce` tool, and the CRM's tools when a server is given."""
    spec: dict[str, Any] = {"model": "m", "tools": ["tests.mcp_tools.hooks:announce"], **agent}
    config: dict[str, Any] = {"store": f"sqlite:///{tmp_path / 'sayso.db'}", "models": {"m": "test"}}
    if server is not None:
        config["mcp_servers"] = {"crm": {"url": server.mcp_url}}
        spec["mcp"] = [{"server": "crm", "tools": ["crm_contacts"]}]
    config["agents"] = {"host": spec}
    return Sayso(
        Config.model_validate({**config, "base_dir": tmp_path}), models={"m": tool_model(ROUTE, read="{result}")}
    )


async def test_the_login_example_sends_the_person_to_sign_in_before_any_tool_runs(
    tmp_path: Path, elicit_server: ElicitServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Until the person has signed in, every call (an MCP tool, a Python tool) pauses on the login page."""
    monkeypatch.setenv("CRM_URL", elicit_server.base_url)
    app = make_app(tmp_path, elicit_server, before_tool_call="tests.mcp_tools.hooks:sign_in_first")
    async with app:
        paused = await app.run("contacts", principal="ada")
        [request] = paused.requests
        assert isinstance(request, ElicitationRequest)
        assert (request.mode, request.server, request.delivery, request.tool_name) == (
            "url",
            None,
            "retry",
            "crm_contacts",
        )
        assert request.url == f"{elicit_server.base_url}/login?user=ada"
        announcing = await app.run("announce lunch", principal="ada")
        assert [r.tool_name for r in announcing.requests] == ["announce"]
        assert hooks.sent == []

        # "Done" without signing in: the hook runs again before the call and sends them back.
        again = await app.decide(request.request_id, Accept(), principal="ada")
        [second] = again.run.requests
        assert isinstance(second, ElicitationRequest) and second.request_id != request.request_id
        assert second.url == request.url
        assert hooks.seen[-1].visited

        assert httpx.get(second.url or "").text == "signed in"  # the person, out of band
        done = await app.decide(second.request_id, Accept(), principal="ada")
        assert done.run.output == "Ada Lovelace, Charles Babbage"
        finished = await app.decide(announcing.requests[0].request_id, Accept(), principal="ada")
        assert finished.run.output == "announced: lunch"
    assert hooks.sent == ["lunch"]
    assert [c.tool_name for c in hooks.seen] == ["crm_contacts", "announce", "crm_contacts", "crm_contacts", "announce"]


async def test_a_hook_asks_for_approval_and_runs_again_on_resume(tmp_path: Path) -> None:
    """The hook's approval is an ordinary approval request; approved, the hook sees so and lets the call run."""
    app = make_app(tmp_path, before_tool_call="tests.mcp_tools.hooks:second_pair_of_eyes")
    async with app:
        quiet = await app.run("announce the team lunch")
        assert quiet.output == "announced: the team lunch"
        paused = await app.run("announce free cake for everyone")
        [request] = paused.requests
        assert isinstance(request, ApprovalRequest)
        assert request.hint == "This reaches everyone: a second pair of eyes, please."
        assert request.payload == {"rule": "everyone"}
        assert hooks.sent == ["the team lunch"]
        done = await app.decide(request.request_id, Approve())
        assert done.run.output == "announced: free cake for everyone"

        rejected = await app.run("announce everyone is fired")
        done = await app.decide(rejected.requests[0].request_id, Reject(reason="no"))
        assert done.run.output == "Declined: no"
    assert hooks.sent == ["the team lunch", "free cake for everyone"]
    approved = [c for c in hooks.seen if c.args == {"text": "free cake for everyone"}]
    assert [c.approved for c in approved] == [False, True]


async def test_the_runtimes_decorator_declares_the_hook_from_python(tmp_path: Path) -> None:
    """`@app.before_tool_call(agent)` makes a Python function the agent's hook; a sync one works too."""
    app = make_app(tmp_path)
    asked: list[HookCall] = []

    @app.before_tool_call("host")
    def weekends_off(call: HookCall) -> AskApproval | None:
        asked.append(call)
        return None if call.approved else AskApproval(hint="It is the weekend.")

    async with app:
        paused = await app.run("announce brunch")
        assert [r.kind for r in paused.requests] == ["approval"]
        done = await app.decide(paused.requests[0].request_id, Approve())
    assert done.run.output == "announced: brunch"
    assert [(c.tool_name, c.agent_path, c.approved) for c in asked] == [
        ("announce", "host", False),
        ("announce", "host", True),
    ]
    with pytest.raises(AgentNotFound, match="no agent or workflow named 'nobody'"):
        app.before_tool_call("nobody")


def test_a_hook_that_cannot_take_the_call_is_a_config_error(tmp_path: Path) -> None:
    """A hook must take the call as its one argument; anything else fails when the agent is built."""
    with pytest.raises(ConfigError, match="takes the call as its one argument"):
        make_app(tmp_path, before_tool_call="tests.mcp_tools.hooks:not_a_hook")
    with pytest.raises(ValueError, match="before_tool_call must be an import spec or a function"):
        make_app(tmp_path, before_tool_call=42)


async def test_a_hook_that_returns_something_else_fails_the_run_with_the_reason(tmp_path: Path) -> None:
    """A hook's wrong answer is never taken as "run it": the run fails, naming what the hook returned."""
    app = make_app(tmp_path)
    app.before_tool_call("host")(lambda call: VisitUrl)  # type: ignore[arg-type, return-value]  # the class, not an instance
    async with app:
        failed = await app.run("announce x")
    assert failed.status == "failed"
    assert "return None, AskApproval or VisitUrl" in (failed.error or "")
    assert hooks.sent == []
