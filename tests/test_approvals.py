"""Approval gates through the Python API: approve, edit, reject, skip, in-body approvals and resume rules."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic_ai import RunContext, Tool
from pydantic_ai.messages import ModelRequest, ToolReturnPart, UserPromptPart

from sayso import (
    AlreadyDecided,
    Approve,
    InvalidDecision,
    NotReady,
    PauseConsumed,
    Reject,
    RequestNotFound,
    RunConflict,
    Sayso,
    Skip,
    require_approval,
)
from sayso import tool as sayso_tool

from .conftest import MakeApp, approvals
from .models import Said, ToolModel, tool_model
from .tools import RAN, archive, delete_file


@sayso_tool(requires_approval=True, hint="Sends money.")
def pay(amount: int) -> str:
    """Pay someone."""
    RAN.append(("pay", {"amount": amount}))
    return f"paid {amount}"


def transfer(ctx: RunContext[Any], amount: int) -> str:
    """Move money; large amounts ask a person from inside the body."""
    RAN.append(("transfer-body", {"amount": amount}))
    if amount > 100:
        approval = require_approval(ctx, hint=f"Transfer of {amount} is above the limit.", payload={"limit": 100})
        return f"transferred {amount} (limit {approval.payload['limit']}, approved by {approval.principal})"
    return f"transferred {amount}"


def route(said: str) -> Said:
    """`delete NAME`, `pay N`, `transfer N` and `plain` call a tool each; `both` deletes `x` and archives `y` at
    once; anything else is answered with what was said."""
    if said == "both":
        return [("delete_file", {"name": "x"}), ("archive", {"name": "y"})]
    if said == "plain":
        return "declared", {}
    verb, _, rest = said.partition(" ")
    if verb in ("pay", "transfer") and rest.isdigit():
        return verb, {"amount": rest}
    if verb == "delete" and rest and " " not in rest:
        return "delete_file", {"name": rest}
    return f"you said: {said}"


def read(tool: str, result: str) -> str:
    return "after archive" if tool == "archive" else f"model read: {result}"


def declared() -> str:
    """A tool pydantic-ai itself marks as needing approval."""
    RAN.append(("declared", {}))
    return "declared ran"


@pytest.fixture
def app(make_app: MakeApp) -> Sayso:
    model = tool_model(route, read=read)
    return make_app(
        {
            "files": {
                "model": "m",
                "tools": [delete_file, archive, pay, transfer, Tool(declared, requires_approval=True)],
                "interrupt": {"tools": ["delete_*", {"name": "archive"}]},
            }
        },
        model=model,
    )


def calls_of(app: Sayso) -> list[ModelRequest]:
    """The last message of each request the files agent's model answered (what it read), oldest first."""
    model = app.agent_model("files")
    assert isinstance(model, ToolModel)
    return [asked.request for asked in model.asked]


async def test_approved_call_runs_before_any_model_call(app: Sayso) -> None:
    """The exact call runs on approval, and the first model request after it already holds its result."""
    async with app:
        paused = await app.run("delete a.txt")
        assert paused.status == "paused"
        [request] = approvals(paused.requests)
        assert (request.kind, request.tool_name, request.args) == ("approval", "delete_file", {"name": "a.txt"})
        assert request.hint == "Approval is required for tool(s): delete_file"
        assert RAN == []
        before = len(calls_of(app))
        done = await app.decide(request.request_id, Approve())
    assert done.run.status == "completed"
    assert done.run.output == "model read: deleted a.txt"
    assert RAN == [("delete_file", {"name": "a.txt"})]
    after = calls_of(app)[before:]
    assert len(after) == 1
    returns = [p for p in after[0].parts if isinstance(p, ToolReturnPart)]
    assert [(p.tool_call_id, p.content) for p in returns] == [(request.tool_call_id, "deleted a.txt")]


async def test_edited_arguments_run_and_are_recorded(app: Sayso) -> None:
    """Edited arguments are what runs; the result records proposed, approved and executed args and who approved."""
    async with app:
        paused = await app.run("delete a.txt")
        request = paused.requests[0]
        done = await app.decide(request.request_id, Approve(edited_args={"name": "b.txt"}))
        history = await app.store.load_messages(paused.thread_id)
    assert RAN == [("delete_file", {"name": "b.txt"})]
    assert done.run.output == "model read: deleted b.txt"
    [result] = [p for m in history if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
    approval = result.metadata["approval"]
    assert approval["decision"] == "approve"
    assert approval["by"] == "person"
    assert approval["principal"] == "local"
    assert approval["proposed_args"] == {"name": "a.txt"}
    assert approval["approved_args"] == approval["executed_args"] == {"name": "b.txt"}


async def test_invalid_edit_is_refused_and_the_pause_stays_open(app: Sayso) -> None:
    """An edit breaking the tool's schema is refused naming the problem; nothing runs and the request stays open."""
    async with app:
        paused = await app.run("delete a.txt")
        request_id = paused.requests[0].request_id
        with pytest.raises(InvalidDecision, match="edited arguments are invalid: .*'name' is a required property"):
            await app.decide(request_id, Approve(edited_args={"file": "b.txt"}))
        still = await app.result(paused.run_id)
        assert still.status == "paused"
        assert [r.request_id for r in still.requests] == [request_id]
        assert RAN == []
        done = await app.decide(request_id, Approve())
    assert done.run.status == "completed"


@pytest.mark.parametrize(
    ("decision", "model_reads"),
    [
        pytest.param(Reject(reason="not that one"), "Declined: not that one", id="reject-with-reason"),
        pytest.param(Reject(), "Declined by the person.", id="reject"),
        pytest.param(Skip(reason="decide later"), "Skipped: decide later", id="skip"),
    ],
)
async def test_calls_not_approved_never_run_and_the_model_reads_why(
    app: Sayso, decision: Reject | Skip, model_reads: str
) -> None:
    """A rejected or skipped call never runs, and the model reads the reason (or a default decline) in its place."""
    async with app:
        paused = await app.run("delete a.txt")
        done = await app.decide(paused.requests[0].request_id, decision)
    assert RAN == []
    assert done.run.output == f"model read: {model_reads}"


async def test_tools_declared_as_needing_approval_pause(app: Sayso) -> None:
    """Tools that declare they need approval, through sayso's decorator (with its hint) or pydantic-ai, pause with no
    interrupt rule."""
    async with app:
        paused = await app.run("pay 30")
        assert approvals(paused.requests)[0].hint == "Sends money."
        done = await app.decide(paused.requests[0].request_id, Approve())
        declared_pause = await app.run("plain")
        assert declared_pause.status == "paused"
        assert declared_pause.requests[0].tool_name == "declared"
        await app.decide(declared_pause.requests[0].request_id, Approve())
    assert done.run.output == "model read: paid 30"
    assert RAN == [("pay", {"amount": 30}), ("declared", {})]


async def test_tool_asks_from_inside_its_body_and_runs_again_from_the_top(app: Sayso) -> None:
    """A tool may ask mid-body with a hint and payload; once approved it reruns from the top and sees the approver."""
    async with app:
        small = await app.run("transfer 10")
        assert small.status == "completed"
        paused = await app.run("transfer 500", principal="alice")
        [request] = approvals(paused.requests)
        assert request.hint == "Transfer of 500 is above the limit."
        assert request.payload == {"limit": 100}
        assert request.from_body
        done = await app.decide(request.request_id, Approve(), principal="alice")
    assert done.run.output == "model read: transferred 500 (limit 100, approved by alice)"
    assert RAN == [
        ("transfer-body", {"amount": 10}),
        ("transfer-body", {"amount": 500}),
        ("transfer-body", {"amount": 500}),
    ]


async def test_parallel_requests_are_decided_one_at_a_time(app: Sayso) -> None:
    """Parallel requests are decided separately: nothing runs and the model waits until the last is decided, then
    reads every outcome."""
    async with app:
        paused = await app.run("both")
        first, second = paused.requests
        assert first.request_id != second.request_id
        assert (first.tool_name, second.tool_name) == ("delete_file", "archive")
        model_calls = len(calls_of(app))
        partial = await app.decide(second.request_id, Approve())
        assert partial.run.status == "paused"
        assert [r.request_id for r in partial.run.requests] == [first.request_id]
        assert RAN == []
        assert len(calls_of(app)) == model_calls
        done = await app.decide(first.request_id, Reject(reason="keep x"))
    assert RAN == [("archive", {"name": "y"})]
    assert done.run.status == "completed"
    seen = calls_of(app)[model_calls].parts
    contents = {p.tool_name: p.content for p in seen if isinstance(p, ToolReturnPart)}
    assert contents == {"delete_file": "Declined: keep x", "archive": "archived y"}


async def test_forced_resume_skips_what_is_still_open(app: Sayso) -> None:
    """A resume with requests still open is refused naming them; a forced one skips them and tells the model why."""
    async with app:
        paused = await app.run("both")
        first, second = paused.requests
        await app.decide(second.request_id, Approve())
        with pytest.raises(NotReady, match=first.request_id):
            await app.resume(paused.run_id)
        done = await app.resume(paused.run_id, force=True)
    assert done.status == "completed"
    assert RAN == [("archive", {"name": "y"})]
    last = calls_of(app)[-1].parts
    contents = {p.tool_name: p.content for p in last if isinstance(p, ToolReturnPart)}
    assert contents["delete_file"] == "Skipped: the run was resumed before this request was answered"


async def test_unknown_repeated_and_conflicting_decisions(app: Sayso) -> None:
    """An unknown request is refused, an identical repeat decision is a no-op, a conflicting one is refused, and a
    finished run cannot be resumed."""
    async with app:
        with pytest.raises(RequestNotFound, match="req_nope"):
            await app.decide("req_nope", Approve())
        paused = await app.run("both")
        first, second = paused.requests
        assert (await app.decide(first.request_id, Reject(reason="no"))).recorded
        repeat = await app.decide(first.request_id, Reject(reason="no"))
        assert not repeat.recorded
        assert repeat.run.status == "paused"
        with pytest.raises(AlreadyDecided, match="the first decision wins"):
            await app.decide(first.request_id, Approve())
        await app.decide(second.request_id, Approve())
        with pytest.raises(AlreadyDecided):
            await app.decide(second.request_id, Skip())
        with pytest.raises(RunConflict, match="only a paused run can be resumed"):
            await app.resume(paused.run_id)
    assert RAN == [("archive", {"name": "y"})]


async def test_a_decision_on_a_request_closed_unanswered_says_how_it_was_closed(app: Sayso) -> None:
    """A request its run went on without (a cancel, a new message) was closed, not decided by anyone: a late decision
    is refused saying so and why, not "already decided (skip by person)"."""
    async with app:
        cancelled = await app.run("both")
        await app.cancel(cancelled.run_id)
        with pytest.raises(AlreadyDecided) as refused:
            await app.decide(cancelled.requests[0].request_id, Approve())
        assert refused.value.problem == (
            "it was closed unanswered by local: the run was cancelled before this request was answered"
        )
        superseded = await app.run("both")
        await app.run("archive z", thread_id=superseded.thread_id)
        with pytest.raises(AlreadyDecided, match="closed unanswered by local: the person sent a message instead"):
            await app.decide(superseded.requests[0].request_id, Approve())
    assert ("archive", {"name": "y"}) not in RAN


async def test_a_pause_is_consumed_once(app: Sayso, make_app: MakeApp) -> None:
    """A pause is consumed by its first resume: a second resume of it is refused and the approved call runs once."""
    async with app:
        paused = await app.run("delete a.txt")
        await app.decide(paused.requests[0].request_id, Approve(), resume=False)
        record = await app.store.get_run(paused.run_id)
        assert record.pause_id is not None
        first = await app.resume(paused.run_id)
        with pytest.raises(PauseConsumed):  # a second resume that saw the same pause
            await app.store.consume_pause(
                record, pause_id=record.pause_id, holder="another", until=2e9, now=time.time(), added=()
            )
    assert first.status == "completed"
    assert RAN == [("delete_file", {"name": "a.txt"})]


async def test_new_message_while_paused_skips_open_requests(app: Sayso) -> None:
    """A new message on a paused thread cancels the run and skips its open requests, so the model reads why alongside
    the message and late decisions are refused."""
    async with app:
        paused = await app.run("both")
        answer = await app.run("what now?", thread_id=paused.thread_id)
        old = await app.result(paused.run_id)
        with pytest.raises(AlreadyDecided):
            await app.decide(paused.requests[0].request_id, Approve())
    assert answer.status == "completed"
    assert answer.output == "you said: what now?"
    assert old.status == "cancelled"
    assert RAN == []
    last = calls_of(app)[-1].parts
    skipped = {p.tool_name: p.content for p in last if isinstance(p, ToolReturnPart)}
    assert skipped == {
        "delete_file": "Skipped: the person sent a message instead of answering",
        "archive": "Skipped: the person sent a message instead of answering",
    }
    assert any(isinstance(p, UserPromptPart) and p.content == "what now?" for p in last)


async def test_a_thread_takes_one_run_at_a_time_and_stays_with_its_agent(make_app: MakeApp) -> None:
    """A second message while a run is still working is refused by name; so is another agent on the thread."""
    import anyio

    from sayso import InvalidInput, ThreadBusy

    started, release = anyio.Event(), anyio.Event()

    async def slow(name: str) -> str:
        """Take a while."""
        started.set()
        await release.wait()
        return f"slow {name}"

    model = tool_model(lambda said: ("slow", {"name": "x"}) if said == "slow" else "hi", read="{result}")
    app = make_app({"a": {"model": "m", "tools": [slow]}, "b": {"model": "m"}}, model=model)
    async with app:
        first = await app.run("hello", agent="a")
        outcome: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def working() -> None:
                outcome.append(await app.run("slow", thread_id=first.thread_id))

            tg.start_soon(working)
            await started.wait()  # the first run is inside its tool call
            with pytest.raises(ThreadBusy, match="already has a run in progress"):
                await app.run("again", thread_id=first.thread_id)
            release.set()
        with pytest.raises(InvalidInput, match="belongs to agent 'a', not 'b'"):
            await app.run("hi", thread_id=first.thread_id, agent="b")
    assert outcome[0].output == "slow x"
