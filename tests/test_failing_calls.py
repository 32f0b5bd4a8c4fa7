"""A call that raises leaves the thread usable (issue 22 ¶2), through the Python API.

The model reads a tool's error as the call's result and the run carries on, as kagent does,
for free, gated (after approval), client, MCP and delegated calls. A run that fails anyway
stores a result for every call it leaves unanswered, so the next message on the thread works.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from sayso import AgentConfig, Approve, ClientError, ClientTool, Config, McpStdioServer, Sayso, mcp_bindings

from .conftest import MakeApp
from .mcp_tools.conftest import git_server
from .models import Call, ToolModel, tool_model

charged: list[int] = []


@pytest.fixture(autouse=True)
def reset() -> None:
    charged.clear()


def lookup(name: str) -> str:
    """Look a customer up."""
    raise LookupError(f"no customer named {name}")


def charge(amount: int) -> str:
    """Charge the card; the payment service is down."""
    raise ConnectionError("the payment service is down")


def refund(amount: int) -> str:
    """Refund the card."""
    charged.append(-amount)
    return f"refunded {amount}"


PICK = ClientTool(name="pick_card", description="The person picks a card in the browser.")

SHOP: dict[str, Call] = {
    "lookup": ("lookup", {"name": "Ada"}),
    "charge": ("charge", {"amount": 5}),
    "pick": ("pick_card", {}),
    "ask helper": ("helper", {"task": "charge 5"}),
}
"""What the shop's model calls for each message (anything else it answers with what was said)."""


def shop_model() -> ToolModel:
    return tool_model(
        lambda said: SHOP.get(said, f"you said: {said}"),
        read=lambda tool, result: f"{'coordinator' if tool == 'helper' else 'model'} read: {result}",
    )


@pytest.fixture
def app(make_app: MakeApp) -> Sayso:
    return make_app(
        {
            "shop": {
                "model": "shop",
                "tools": [lookup, charge],
                "interrupt": {"tools": ["charge"]},
                "delegates": [{"agent": "helper", "description": "the payments helper"}],
                "client_tools": ["pick_card"],
            },
            "helper": {"model": "helper", "tools": [charge], "interrupt": {"tools": ["charge"]}},
        },
        models={"shop": shop_model(), "helper": tool_model(lambda said: SHOP["charge"], read="helper read: {result}")},
    )


def unanswered(history: list[ModelMessage]) -> list[str]:
    """The ids of the calls in the history that no later message answers."""
    calls = [c.tool_call_id for m in history if isinstance(m, ModelResponse) for c in m.tool_calls]
    answered = {
        p.tool_call_id
        for m in history
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart | RetryPromptPart)
    }
    return [c for c in calls if c not in answered]


async def next_message_works(app: Sayso, thread_id: str) -> None:
    after = await app.run("hello again", thread_id=thread_id)
    assert (after.status, after.output) == ("completed", "you said: hello again")
    assert unanswered(await app.store.load_messages(thread_id)) == []


async def test_a_free_call_that_raises_is_read_by_the_model_and_the_run_goes_on(app: Sayso) -> None:
    async with app:
        done = await app.run("lookup", agent="shop")
        assert done.status == "completed", done.error
        assert done.output == "model read: Error: the tool lookup failed: LookupError: no customer named Ada"
        await next_message_works(app, done.thread_id)


async def test_an_approved_call_that_raises_is_read_by_the_model_and_the_audit_says_it_failed(app: Sayso) -> None:
    async with app:
        paused = await app.run("charge", agent="shop")
        done = await app.decide(paused.requests[0].request_id, Approve())
        assert done.run.status == "completed", done.run.error
        assert (
            done.run.output == "model read: Error: the tool charge failed: ConnectionError: the payment service is down"
        )
        [executed] = [r.body for r in await app.audit_log() if r.body["event"] == "executed"]
        assert executed["error"].endswith("the payment service is down")
        await next_message_works(app, done.run.thread_id)


async def test_a_client_call_that_fails_is_read_by_the_model(app: Sayso) -> None:
    async with app:
        paused = await app.run("pick", agent="shop", client_tools=[PICK])
        done = await app.decide(paused.requests[0].request_id, ClientError(message="the card reader broke"))
        assert (done.run.status, done.run.output) == ("completed", "model read: the card reader broke")
        await next_message_works(app, done.run.thread_id)


async def test_a_delegate_whose_approved_call_raises_answers_its_coordinator(app: Sayso) -> None:
    async with app:
        paused = await app.run("ask helper", agent="shop")
        [request] = paused.requests
        assert request.agent_path == "shop/helper"
        done = await app.decide(request.request_id, Approve())
        assert done.run.status == "completed", done.run.error
        assert done.run.output == (
            "coordinator read: helper read: Error: the tool charge failed: ConnectionError: the payment service is down"
        )
        await next_message_works(app, done.run.thread_id)


async def test_mcp_calls_that_raise_are_read_by_the_model(tmp_path: Path) -> None:
    """`mcp-server-git` on a folder that is not a repository: status (free) and commit (gated) both fail."""
    folder = tmp_path / "not-a-repo"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    git: dict[str, Call] = {
        "status": ("git_status", {"repo_path": str(folder)}),
        "commit": ("git_commit", {"repo_path": str(folder), "message": "m"}),
    }
    model = tool_model(
        lambda said: git.get(said, f"you said: {said}"),
        read=lambda tool, result: f"{tool.removeprefix('git_')} read: {result}",
    )
    config = Config(
        store=f"sqlite:///{tmp_path / 'sayso.db'}",
        agents={
            "ops": AgentConfig(
                model="m", mcp=mcp_bindings("git", tools=["git_status", "git_commit"], require_approval=["git_commit"])
            )
        },
        mcp_servers={"git": McpStdioServer.model_validate(git_server(tmp_path / "repo"))},
        base_dir=tmp_path,
    )
    async with Sayso(config, models={"m": model}) as app:
        status = await app.run("status")
        assert status.status == "completed", status.error
        assert status.output is not None and status.output.startswith("status read: ")
        paused = await app.run("commit", thread_id=status.thread_id)
        done = await app.decide(paused.requests[0].request_id, Approve())
        assert done.run.status == "completed", done.run.error
        assert done.run.output is not None and done.run.output.startswith("commit read: ")
        await next_message_works(app, status.thread_id)


def provider_down_after_tools(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that asks for a refund, and whose provider is down when the refund's result comes back."""
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        raise RuntimeError("the model provider is down")
    text = str(getattr(last, "content", ""))
    if text == "refund":
        return ModelResponse(parts=[ToolCallPart("refund", {"amount": 5}), ToolCallPart("lookup", {"name": "Ada"})])
    return ModelResponse(parts=[TextPart(f"you said: {text}")])


async def test_a_run_that_fails_after_a_pause_leaves_no_call_unanswered(make_app: MakeApp) -> None:
    """The model fails after the approved call ran: the run fails, the history keeps what ran, the thread goes on."""
    app = make_app(
        {"shop": {"model": "m", "tools": [refund, lookup], "interrupt": {"tools": ["refund", "lookup"]}}},
        model=FunctionModel(provider_down_after_tools),
    )
    async with app:
        paused = await app.run("refund")
        first, second = paused.requests
        await app.decide(second.request_id, Approve())
        failed = await app.decide(first.request_id, Approve())
        assert failed.run.status == "failed"
        assert failed.run.error == "RuntimeError: the model provider is down"
        assert charged == [-5]
        history = await app.store.load_messages(paused.thread_id)
        assert unanswered(history) == []
        results = {
            p.tool_name: p
            for m in history
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        }
        assert results["refund"].content == "refunded 5"
        assert results["refund"].metadata["approval"]["decision"] == "approve"
        roles = [e.role for e in await app.transcript(paused.thread_id)]
        assert roles[-1] == "error" and "decision" in roles
        after = await app.run("hello again", thread_id=paused.thread_id)
        assert (after.status, after.output) == ("completed", "you said: hello again")


class Receipt:
    """What a careless tool returns: a plain object JSON has no form for."""

    def __init__(self) -> None:
        self.at = datetime.now(UTC)


RECEIPTS: dict[str, object] = {}
"""What `receipt` returns, by the test."""


def receipt(amount: int) -> object:
    """Print a receipt (as something the history cannot hold)."""
    charged.append(amount)
    return RECEIPTS["returned"]


UNSTORABLE = (
    "which cannot be stored as JSON (return text, a number, a list or a dict of them, a pydantic model or a dataclass)"
)


@pytest.mark.parametrize(
    ("gated", "returned", "read"),
    [
        (False, Receipt(), f"returned a Receipt, {UNSTORABLE}"),
        (True, Receipt(), f"returned a Receipt, {UNSTORABLE}"),
        (False, {"lines": [Receipt()]}, f"returned a dict holding a Receipt, {UNSTORABLE}"),
        (False, {frozenset([1]): "x"}, f"returned a dict, {UNSTORABLE}: `frozenset` not valid as object key"),
    ],
)
async def test_a_call_whose_result_cannot_be_stored_names_the_tool_and_type_and_the_thread_goes_on(
    make_app: MakeApp, gated: bool, returned: object, read: str
) -> None:
    """Before, the run failed with pydantic's `PydanticSerializationError: Unable to serialize unknown type`."""
    RECEIPTS["returned"] = returned
    app = make_app(
        {"shop": {"model": "m", "tools": [receipt], "interrupt": {"tools": ["receipt"] if gated else []}}},
        model=tool_model(
            lambda said: ("receipt", {"amount": 7}) if said == "receipt" else f"you said: {said}",
            read="model read: {result}",
        ),
    )
    async with app:
        run = await app.run("receipt")
        if gated:
            run = (await app.decide(run.requests[0].request_id, Approve())).run
        assert run.status == "completed", run.error
        assert run.output == f"model read: Error: the tool receipt {read}"
        assert charged == [7]
        await next_message_works(app, run.thread_id)


async def test_a_structured_result_holding_a_lone_surrogate_is_kept_with_a_replacement_character(
    make_app: MakeApp,
) -> None:
    """Text a tool decoded badly is no one's mistake to refuse: kept with U+FFFD, as the history keeps such text.

    Before, the run failed with `PydanticSerializationError: ... surrogates not allowed`.
    """
    RECEIPTS["returned"] = {"note": "paid \ud800"}
    app = make_app(
        {"shop": {"model": "m", "tools": [receipt]}},
        model=tool_model(lambda said: ("receipt", {"amount": 7}) if said == "receipt" else f"you said: {said}"),
    )
    async with app:
        run = await app.run("receipt")
        assert run.status == "completed", run.error
        assert run.output == 'model read: {"note": "paid \\ufffd"}'
        await next_message_works(app, run.thread_id)
