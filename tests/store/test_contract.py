"""The `RunStore` contract: every backend (memory, SQLite, PostgreSQL) passes exactly these cases.

The store is tested on its own: records are built here, no agent runs. Each step that must
happen once — a pause consumed, the first decision, an approved call started, a run taken
over — is checked by doing it twice and watching the second lose.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import anyio
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

from sayso._core.access import Principal
from sayso._core.audit import AuditHead, AuditKey, anchor_body, verify_chain
from sayso._core.audit_events import ExecutedEvent, ShownDecision
from sayso._core.deciding import DecisionAsk
from sayso._core.decisions import Approve, ArgEdit, Decision, DecisionRecord, Reject, Skip
from sayso._core.grants import Grant
from sayso._core.requests import (
    ApprovalRequest,
    ClientTool,
    DelegateRequest,
    Question,
    QuestionRequest,
    Request,
    Subject,
)
from sayso._core.starting import StartAsk
from sayso._store import (
    BegunRun,
    Claim,
    Decided,
    ExecutionRecord,
    ExecutionResult,
    InboxFilter,
    InvalidCursor,
    RemoteTask,
    RunQuery,
    RunRecord,
    RunStart,
    RunStore,
    TranscriptEntry,
    TranscriptPage,
)
from sayso.exceptions import (
    AgentNotFound,
    AlreadyDecided,
    ConfigError,
    InvalidInput,
    NotAllowed,
    PauseConsumed,
    RequestNotFound,
    RunConflict,
    RunNotFound,
    SaysoError,
    StoreError,
    ThreadBusy,
)

NOW = 1_000.0
LEASE = 30.0
ME = "host:1:me"


async def start(
    store: RunStore,
    thread_id: str = "thr_1",
    run_id: str = "run_1",
    *,
    owner: str = "alice",
    agent: str = "files",
    now: float = NOW,
    expect_active: str | None = None,
    **kwargs: Any,
) -> RunRecord:
    """Start a run held by this test's lease holder."""
    below = {key: kwargs.pop(key) for key in ("parent_run_id", "parent_call_id", "agent_path") if key in kwargs}
    starting = RunStart(
        thread_id=thread_id,
        owner=owner,
        agent=agent,
        run_id=run_id,
        prompt=f"prompt of {run_id}",
        client_tools=kwargs.pop("client_tools", ()),
        lease_holder=kwargs.pop("lease_holder", ME),
        lease_expires_at=now + LEASE,
        now=now,
        **below,
    )
    return await store.start_run(starting, expect_active=expect_active, **kwargs)


def approval(request_id: str, run: RunRecord, *, created_at: float = NOW, **fields: Any) -> ApprovalRequest:
    """An approval request raised by `run`."""
    return ApprovalRequest(
        request_id=request_id,
        run_id=run.run_id,
        thread_id=run.thread_id,
        agent_path=fields.pop("agent_path", run.path),
        tool_call_id=f"call_{request_id}",
        tool_name="delete_file",
        args=fields.pop("args", {"name": request_id}),
        created_at=created_at,
        hint="delete a file",
        principal=run.principal,
        **fields,
    )


def noted(mark: str, *, request_id: str = "req_1", args: dict[str, Any] | None = None) -> ExecutedEvent:
    """An audit event for the store to keep as written, told apart from the others by `mark` (its tool's name)."""
    return ExecutedEvent(event="executed", request_id=request_id, tool_name=mark, executed_args=args or {}, at=NOW)


def decision(request_id: str, *, approve: bool = True, at: float = NOW + 1) -> DecisionRecord:
    """A person's decision on a request."""
    return DecisionRecord(
        request_id=request_id,
        decision=Approve() if approve else Reject(reason="no"),
        by="person",
        principal="alice",
        decided_at=at,
    )


AT = datetime(2026, 1, 1, tzinfo=UTC)


def said(prompt: str, reply: str) -> list[ModelMessage]:
    """A user turn and the model's answer, stamped with a fixed time so they compare equal after a round trip."""
    return [
        ModelRequest(parts=[UserPromptPart(content=prompt, timestamp=AT)], timestamp=AT),
        ModelResponse(parts=[TextPart(content=reply)], timestamp=AT),
    ]


async def paused(
    store: RunStore, run: RunRecord, requests: list[Request], *, pause_id: str = "pau_1", now: float = NOW
) -> RunRecord:
    """Save a pause of `run` holding `requests`; the run as stored afterwards."""
    await store.save_pause(
        run, holder=ME, pause_id=pause_id, new_messages=said(run.prompt or "", "asking"), requests=requests, now=now
    )
    return await store.get_run(run.run_id)


async def claim(store: RunStore, run: RunRecord, **kwargs: Any) -> Claim:
    """Consume the pause `run` is paused on, for this test's lease holder."""
    assert run.pause_id is not None
    return await store.consume_pause(
        run,
        pause_id=run.pause_id,
        holder=ME,
        until=NOW + 10 + LEASE,
        now=NOW + 10,
        added=kwargs.pop("added", ()),
        **kwargs,
    )


# threads and runs


async def test_a_thread_takes_one_active_run_at_a_time(store: RunStore) -> None:
    """A second run on a thread with an active run is refused until the first ends."""
    first = await start(store)
    with pytest.raises(RunConflict):
        await start(store, run_id="run_2")
    thread = await store.get_thread("thr_1")
    assert thread is not None and (thread.owner, thread.agent, thread.active_run_id) == ("alice", "files", "run_1")
    await store.finish_run(first, holder=ME, new_messages=(), status="completed", output="ok", error=None, now=NOW + 1)
    second = await start(store, run_id="run_2", now=NOW + 2)
    assert second.status == "running"
    assert (await store.get_thread("thr_1")) == replace(thread, active_run_id="run_2")


async def test_a_run_reads_back_as_it_was_started(store: RunStore) -> None:
    """A run keeps its client tools, delegate fields and lease; an unknown run is `RunNotFound`."""
    tool = ClientTool(name="pick_file", parameters={"type": "object", "properties": {"path": {"type": "string"}}})
    run = await start(
        store, client_tools=[tool], parent_run_id="run_0", parent_call_id="call_0", agent_path="lead/files"
    )
    assert await store.get_run("run_1") == run
    assert run.client_tools == (tool,) and run.path == "lead/files" and run.lease_holder == ME
    with pytest.raises(RunNotFound):
        await store.get_run("run_nope")
    assert await store.get_thread("thr_nope") is None


async def test_finishing_a_run_frees_its_thread_and_keeps_its_outcome(store: RunStore) -> None:
    """A finished run records status, output and error, drops its lease and frees the thread."""
    run = await start(store)
    await store.finish_run(
        run, holder=ME, new_messages=said("p", "done"), status="failed", output=None, error="boom", now=NOW + 5
    )
    stored = await store.get_run("run_1")
    assert (stored.status, stored.output, stored.error, stored.lease_holder) == ("failed", None, "boom", None)
    assert stored.updated_at == NOW + 5 and stored.revision > run.revision
    thread = await store.get_thread("thr_1")
    assert thread is not None and thread.active_run_id is None


async def test_a_process_that_lost_the_lease_cannot_save(store: RunStore) -> None:
    """Saving a pause or an end needs the run's lease; another owner is refused and nothing changes."""
    run = await start(store, lease_holder="host:2:other")
    with pytest.raises(RunConflict):
        await store.save_pause(
            run, holder=ME, pause_id="pau_1", new_messages=(), requests=[approval("req_1", run)], now=NOW
        )
    with pytest.raises(RunConflict):
        await store.finish_run(run, holder=ME, new_messages=(), status="completed", output="x", error=None, now=NOW)
    assert (await store.get_run("run_1")).status == "running"
    assert await store.get_request("req_1") is None


async def test_take_over_only_when_the_lease_lapsed_or_its_owner_died(store: RunStore) -> None:
    """A live lease is not taken; a lapsed one or a dead owner's is, by exactly one caller."""
    run = await start(store)
    assert not await store.take_over(run.run_id, holder="host:2:b", until=NOW + 60, now=NOW + 1, dead_holders=[])
    assert await store.take_over(run.run_id, holder="host:2:b", until=NOW + 60, now=NOW + 1, dead_holders=[ME])
    assert not await store.renew_lease(run.run_id, ME, NOW + 90)
    assert await store.renew_lease(run.run_id, "host:2:b", NOW + 90)
    assert not await store.take_over(run.run_id, holder="host:3:c", until=NOW + 99, now=NOW + 89, dead_holders=[])
    assert await store.take_over(run.run_id, holder="host:3:c", until=NOW + 200, now=NOW + 91, dead_holders=[])
    assert not await store.take_over(run.run_id, holder="host:4:d", until=NOW + 200, now=NOW + 91, dead_holders=[])
    taken = await store.get_run(run.run_id)
    assert (taken.lease_holder, taken.lease_expires_at) == ("host:3:c", NOW + 200)


async def test_lapsed_runs_are_the_running_runs_nobody_may_hold(store: RunStore) -> None:
    """`lapsed_runs` lists running runs whose lease lapsed, oldest lease first, and with a host also that host's runs;
    never a live lease elsewhere, a paused run that is not held, or a finished one."""
    live = await start(store, "thr_1", "run_1", lease_holder="elsewhere:1:a")
    lapsed = await start(store, "thr_2", "run_2", lease_holder="elsewhere:2:b", now=NOW - 100)
    mine = await start(store, "thr_3", "run_3", lease_holder="host:7:me")
    older = await start(store, "thr_4", "run_4", lease_holder="elsewhere:3:c", now=NOW - 200)
    await paused(store, await start(store, "thr_5", "run_5", now=NOW - 300), [])
    assert [r.run_id for r in await store.lapsed_runs(now=NOW)] == [older.run_id, lapsed.run_id]
    assert [r.run_id for r in await store.lapsed_runs(now=NOW, host="host")] == [
        older.run_id,
        lapsed.run_id,
        mine.run_id,
    ]
    assert [r.run_id for r in await store.lapsed_runs(now=NOW, limit=1)] == [older.run_id]
    assert live.run_id not in {r.run_id for r in await store.lapsed_runs(now=NOW, host="nowhere")}
    assert live.run_id in {r.run_id for r in await store.lapsed_runs(now=NOW, host="elsewhere")}
    assert (await store.lapsed_runs(now=NOW))[0].lease_holder == "elsewhere:3:c"


async def test_stalled_runs_are_paused_runs_decided_long_ago_that_nobody_resumed(store: RunStore) -> None:
    """`stalled_runs` lists paused runs whose pause waits on no person (all decided, or only a delegate's call) and
    saw no decision since `before`; not runs with an open request, recent decisions, or a consumed pause."""
    one = await start(store, "thr_1", "run_1")
    await paused(store, one, [approval("req_1", one)], pause_id="pau_1")
    await store.record_decision(decision("req_1", at=NOW + 1))
    still_open = await start(store, "thr_2", "run_2")
    await paused(store, still_open, [approval("req_2", still_open), approval("req_3", still_open)], pause_id="pau_2")
    await store.record_decision(decision("req_2", at=NOW + 1))
    recent = await start(store, "thr_3", "run_3")
    await paused(store, recent, [approval("req_4", recent)], pause_id="pau_3")
    await store.record_decision(decision("req_4", at=NOW + 50))
    waiting = await start(store, "thr_4", "run_4")
    child = DelegateRequest(
        request_id="req_5",
        run_id="run_4",
        thread_id="thr_4",
        agent_path="files",
        tool_call_id="call_5",
        tool_name="helper",
        args={},
        created_at=NOW,
        child_run_id="run_x",
    )
    await paused(store, waiting, [child], pause_id="pau_4")
    resumed = await start(store, "thr_5", "run_5")
    resumed = await paused(store, resumed, [approval("req_6", resumed)], pause_id="pau_5")
    await store.record_decision(decision("req_6", at=NOW + 1))
    await claim(store, resumed)
    assert await store.stalled_runs(before=NOW + 10) == ["run_1", "run_4"]
    assert await store.stalled_runs(before=NOW + 60) == ["run_1", "run_3", "run_4"]
    assert await store.stalled_runs(before=NOW) == []


async def test_a_paused_run_is_not_taken_over(store: RunStore) -> None:
    """Only running runs are taken over or renewed: a pause holds no lease."""
    run = await paused(store, await start(store), [])
    assert not await store.take_over(run.run_id, holder="host:2:b", until=NOW + 60, now=NOW + 99, dead_holders=[ME])
    assert not await store.renew_lease(run.run_id, ME, NOW + 90)


async def test_a_held_pause_is_renewed_by_its_holder_listed_when_it_lapses_and_released(store: RunStore) -> None:
    """A pause saved with a hold keeps its holder: renewed by it alone, listed by `lapsed_runs` once it lapsed (or
    as a run of its host), never taken over; released, it is an ordinary pause; consuming it hands the lease on."""
    run = await start(store)
    await store.save_pause(run, holder=ME, pause_id="pau_1", new_messages=(), requests=[], now=NOW, hold_until=NOW + 30)
    held = await store.get_run(run.run_id)
    assert (held.status, held.lease_holder, held.lease_expires_at) == ("paused", ME, NOW + 30)
    assert not await store.renew_lease(run.run_id, "host:2:b", NOW + 60)
    assert await store.renew_lease(run.run_id, ME, NOW + 60)
    assert (await store.get_run(run.run_id)).lease_expires_at == NOW + 60
    assert await store.lapsed_runs(now=NOW + 59) == []
    assert [r.run_id for r in await store.lapsed_runs(now=NOW + 61)] == [run.run_id]
    assert [r.run_id for r in await store.lapsed_runs(now=NOW, host="host")] == [run.run_id]
    assert not await store.take_over(run.run_id, holder="host:2:b", until=NOW + 99, now=NOW + 61, dead_holders=[ME])
    assert not await store.release_hold(run.run_id, "host:2:b")
    assert await store.release_hold(run.run_id, ME)
    released = await store.get_run(run.run_id)
    assert (released.status, released.lease_holder, released.lease_expires_at) == ("paused", None, None)
    assert await store.lapsed_runs(now=NOW + 61, host="host") == []
    assert not await store.renew_lease(run.run_id, ME, NOW + 90)
    other = await start(store, "thr_2", "run_2")
    await store.save_pause(
        other, holder=ME, pause_id="pau_2", new_messages=(), requests=[], now=NOW, hold_until=NOW + 30
    )
    claimed = await claim(store, await store.get_run("run_2"))
    assert (claimed.run.status, claimed.run.lease_holder) == ("running", ME)
    assert not await store.release_hold("run_2", ME)


async def test_a_pause_held_for_its_keeper_is_the_keeper_s_to_renew_and_release(store: RunStore) -> None:
    """A pause saved by its lease holder with another runtime as `keeper` (the one holding the live call) is held by
    that runtime: only it renews or releases the hold; without a hold, a keeper changes nothing."""
    keeper = "host:3:c"
    run = await start(store)
    await store.save_pause(
        run, holder=ME, pause_id="pau_1", new_messages=(), requests=[], now=NOW, hold_until=NOW + 30, keeper=keeper
    )
    held = await store.get_run(run.run_id)
    assert (held.status, held.lease_holder, held.lease_expires_at) == ("paused", keeper, NOW + 30)
    assert not await store.renew_lease(run.run_id, ME, NOW + 60)
    assert await store.renew_lease(run.run_id, keeper, NOW + 60)
    assert not await store.release_hold(run.run_id, ME)
    assert await store.release_hold(run.run_id, keeper)
    other = await start(store, "thr_2", "run_2")
    await store.save_pause(other, holder=ME, pause_id="pau_2", new_messages=(), requests=[], now=NOW, keeper=keeper)
    assert (await store.get_run("run_2")).lease_holder is None


# pauses


async def test_a_pause_is_consumed_once(store: RunStore) -> None:
    """The first consume claims the run (with the thread's history); the second raises `PauseConsumed`."""
    run = await start(store)
    run = await paused(store, run, [approval("req_1", run), approval("req_2", run)])
    assert (run.status, run.pause_id, run.lease_holder) == ("paused", "pau_1", None)
    first = await claim(store, run)
    assert first.run.status == "running" and first.run.resume_pause_id == "pau_1" and first.run.pause_id is None
    assert first.run.lease_holder == ME and first.run.revision == run.revision + 1
    assert first.history == said("prompt of run_1", "asking")
    assert await store.get_run(run.run_id) == first.run
    with pytest.raises(PauseConsumed):
        await claim(store, run)
    state = await store.pause_state("pau_1")
    assert (state.run_id, state.status) == ("run_1", "consumed")


async def test_a_pause_keeps_its_requests_in_order_with_their_decisions(store: RunStore) -> None:
    """`pause_state` lists the requests as raised and the decisions taken so far."""
    run = await start(store)
    question = QuestionRequest(
        request_id="req_q",
        run_id=run.run_id,
        thread_id=run.thread_id,
        agent_path="files",
        tool_call_id="call_q",
        tool_name="ask_user",
        created_at=NOW,
        questions=(Question(question="Which?", choices=("a", "b")),),
    )
    requests: list[Request] = [approval("req_b", run), question, approval("req_a", run)]
    await paused(store, run, requests)
    await store.record_decision(decision("req_a"))
    state = await store.pause_state("pau_1")
    assert state.status == "open" and state.requests == requests
    assert list(state.decisions) == ["req_a"] and state.decisions["req_a"] == decision("req_a")
    with pytest.raises(StoreError):
        await store.pause_state("pau_nope")


async def test_a_resume_whose_skip_was_decided_meanwhile_is_refused_and_changes_nothing(store: RunStore) -> None:
    """A claim that would skip a request a person decided meanwhile is a `RunConflict`: the pause stays open with
    the person's decision, and a claim planned afresh succeeds."""
    run = await start(store)
    run = await paused(store, run, [approval("req_1", run)])
    skip = DecisionRecord(
        request_id="req_1", decision=Skip(reason="forced"), by="system", principal=None, decided_at=NOW
    )
    await store.record_decision(decision("req_1"))
    with pytest.raises(RunConflict) as refused:
        await claim(store, run, added=[skip], audit=[noted("skipped")], executing=[])
    assert not isinstance(refused.value, PauseConsumed)
    state = await store.pause_state("pau_1")
    assert (state.status, state.decisions) == ("open", {"req_1": decision("req_1")})
    assert await store.count_audit() == 0
    got = await claim(store, run, executing=["req_1"])
    assert got.run.status == "running"


async def test_a_resume_records_its_skips_and_loads_history_only_when_asked(store: RunStore) -> None:
    """Decisions a resume adds land with the claim; `load_history=False` reads no history."""
    run = await start(store)
    run = await paused(store, run, [approval("req_9", run)])
    skip = DecisionRecord(
        request_id="req_9", decision=Skip(reason="moved on"), by="system", principal=None, decided_at=NOW
    )
    got = await claim(store, run, added=[skip], audit=[noted("skipped")], load_history=False)
    assert got.history is None
    found = await store.get_request("req_9")
    assert found is not None and found.decision == skip and found.pause_status == "consumed"
    assert [r.body for r in await store.audit_records()] == [noted("skipped")]


async def test_a_new_message_supersedes_a_paused_run(store: RunStore) -> None:
    """Starting a run over a paused one consumes its pause, cancels it and skips what was open."""
    old = await start(store)
    old = await paused(store, old, [approval("req_1", old)])
    skip = DecisionRecord(
        request_id="req_1", decision=Skip(reason="new message"), by="system", principal=None, decided_at=NOW + 2
    )
    new = await start(
        store,
        run_id="run_2",
        now=NOW + 2,
        expect_active="run_1",
        supersede_pause="pau_1",
        skips=[skip],
        audit=[noted("superseded")],
    )
    assert new.resume_pause_id == "pau_1"
    assert (await store.get_run("run_1")).status == "cancelled"
    assert (await store.pause_state("pau_1")).status == "consumed"
    found = await store.get_request("req_1")
    assert found is not None and found.decision == skip
    assert [r.body for r in await store.audit_records()] == [noted("superseded")]
    with pytest.raises(RunConflict):  # the thread moved on: what the caller saw is stale
        await start(store, run_id="run_3", expect_active="run_1", supersede_pause="pau_1")
    thread = await store.get_thread("thr_1")
    assert thread is not None and thread.active_run_id == "run_2"


async def test_superseding_a_consumed_pause_changes_nothing(store: RunStore) -> None:
    """When the pause was resumed meanwhile, the superseding run is refused with `PauseConsumed` and not started."""
    old = await start(store)
    old = await paused(store, old, [approval("req_1", old)])
    await claim(store, old)
    with pytest.raises(PauseConsumed):
        await start(store, run_id="run_2", expect_active="run_1", supersede_pause="pau_1")
    with pytest.raises(RunNotFound):
        await store.get_run("run_2")
    thread = await store.get_thread("thr_1")
    assert thread is not None and thread.active_run_id == "run_1"


# the cycle's one-transaction steps


async def begin(store: RunStore, run_id: str = "run_1", *, now: float = NOW, **kwargs: Any) -> BegunRun:
    """A run's first transaction on thread `thr_1`, for alice's grants."""
    starting = RunStart(
        thread_id=kwargs.pop("thread_id", "thr_1"),
        owner="alice",
        agent=kwargs.pop("agent", "files"),
        run_id=run_id,
        prompt=f"prompt of {run_id}",
        lease_holder=ME,
        lease_expires_at=now + LEASE,
        now=now,
    )
    return await store.begin_run(starting, grants_of="alice", **kwargs)


async def test_a_run_begins_with_its_thread_history_and_grants_in_one_step(store: RunStore) -> None:
    """`begin_run` creates or claims the thread, starts the run and reads history and the principal's live grants."""
    first = await begin(store)
    assert first.thread is None and first.history == [] and first.grants == []
    assert first.run is not None and (first.run.status, first.run.lease_holder, first.run.agent) == (
        "running",
        ME,
        "files",
    )
    assert await store.get_run("run_1") == first.run
    await store.finish_run(
        first.run, holder=ME, new_messages=said("hi", "hello"), status="completed", output="hello", error=None, now=NOW
    )
    run = await start(store, "thr_2", "run_x")
    await paused(store, run, [approval("req_1", run)])
    live, mine_revoked, expired, bobs = grant("grt_1"), grant("grt_2"), grant("grt_3"), grant("grt_4", principal="bob")
    await store.record_decisions(
        [decision("req_1")], grants=[live, mine_revoked, replace(expired, expires_at=NOW + 1), bobs]
    )
    await store.revoke_grant("grt_2", now=NOW)
    second = await begin(store, "run_2", now=NOW + 2, agent="other")
    assert second.thread is not None and (second.thread.owner, second.thread.active_run_id) == ("alice", None)
    assert second.run is not None and second.run.agent == "files"  # the thread's agent, whatever was asked
    assert second.history == said("hi", "hello")
    assert second.grants == [live]
    thread = await store.get_thread("thr_1")
    assert thread is not None and thread.active_run_id == "run_2"


async def test_a_refused_or_busy_begin_writes_nothing(store: RunStore) -> None:
    """The core's `check_thread` refusing the thread, or the thread's run still active, leaves everything as it was."""
    await begin(store)
    bob = StartAsk(principal=Principal(name="bob"), agent=None, agents=("files",))
    other_agent = StartAsk(principal=Principal(name="alice"), agent="other", agents=("files", "other"))
    gone_agent = StartAsk(principal=Principal(name="alice"), agent=None, agents=("other",))

    await store.finish_run(
        await store.get_run("run_1"), holder=ME, new_messages=(), status="completed", output="", error=None, now=NOW
    )
    with pytest.raises(NotAllowed):
        await begin(store, "run_2", ask=bob)
    with pytest.raises(InvalidInput, match="belongs to agent 'files'"):
        await begin(store, "run_2", ask=other_agent)
    with pytest.raises(AgentNotFound):
        await begin(store, "run_2", ask=gone_agent)
    with pytest.raises(RunNotFound):
        await store.get_run("run_2")
    fresh = await begin(store, "run_new", ask=gone_agent, thread_id="thr_new")
    assert fresh.run is not None, "a new thread passes: its agent was checked before the transaction"
    await begin(store, "run_3")
    busy = await begin(store, "run_4")
    assert busy.run is None and busy.thread is not None and busy.thread.active_run_id == "run_3"
    with pytest.raises(RunNotFound):
        await store.get_run("run_4")


FOLDER = Subject(key="folder:reports", label="folder reports/")
"""What the approvals the decide tests raise are for (an `always` approval of one leaves a grant)."""


def ask(request_id: str, decision: Decision | None = None, *, who: str = "alice", **fields: Any) -> DecisionAsk:
    """A decision as the decide verb asks for it, by the thread's owner (a plain approval by default)."""
    return DecisionAsk(
        request_id=request_id,
        decision=decision or Approve(),
        principal=Principal(name=who),
        now=NOW + 10,
        holder=ME,
        grant_id=f"grt_{request_id}",
        **fields,
    )


async def decide(store: RunStore, request_id: str, asked: DecisionAsk | None = None) -> Decided | None:
    """Decide a request through `decide_request`, judged by the core's rule, for this test's lease holder."""
    return await store.decide_request(asked or ask(request_id), until=NOW + 10 + LEASE)


async def test_the_last_decision_and_the_resume_commit_together(store: RunStore) -> None:
    """Deciding the last open request records it, consumes the pause, marks the call and claims the run at once."""
    run = await start(store)
    run = await paused(store, run, [approval("req_1", run, subject=FOLDER, scopes=("once", "always"))])
    done = await decide(store, "req_1", ask("req_1", Approve(scope="always")))
    assert done is not None and done.claim is not None and done.verdict.grant is not None
    assert done.found.run == run and done.found.decision is None
    assert [r.request_id for r in done.state.requests] == ["req_1"]
    assert (done.claim.run.status, done.claim.run.lease_holder, done.claim.run.resume_pause_id) == (
        "running",
        ME,
        "pau_1",
    )
    assert done.claim.history == said("prompt of run_1", "asking") and done.claim.grants == [done.verdict.grant]
    assert (done.verdict.grant.grant_id, done.verdict.grant.subject_key) == ("grt_req_1", "folder:reports")
    assert await store.get_run("run_1") == done.claim.run
    found = await store.get_request("req_1")
    assert found is not None and found.decision == done.verdict.record and found.pause_status == "consumed"
    assert found.decision is not None and (found.decision.principal, found.decision.decided_at) == ("alice", NOW + 10)
    assert await store.begin_execution("req_1", "run_1", NOW) == ExecutionRecord(
        request_id="req_1", status="executing", result=None
    )
    assert [(r.body["event"], r.body["request_id"]) for r in await store.audit_records()] == [("decision", "req_1")]


async def test_a_judge_sees_what_is_stored_and_its_refusal_writes_nothing(store: RunStore) -> None:
    """The core's rule judges what was read; a refusal writes nothing; not the last decision leaves the pause open."""
    run = await start(store)
    await paused(store, run, [approval("req_1", run), approval("req_2", run)])
    assert await decide(store, "req_nope") is None
    with pytest.raises(RequestNotFound):  # mallory may not see it
        await decide(store, "req_2", ask("req_2", who="mallory"))
    assert (await store.pause_state("pau_1")).decisions == {} and await store.count_audit() == 0
    first = await decide(store, "req_1")
    assert first is not None and first.claim is None and first.verdict.resume is None
    assert (await store.pause_state("pau_1")).status == "open"
    again = await decide(store, "req_1")
    assert again is not None and again.verdict.record is None, "the same decision again is a harmless no-op"
    with pytest.raises(AlreadyDecided):
        await decide(store, "req_1", ask("req_1", Reject(reason="changed my mind")))
    last = await decide(store, "req_2")
    assert last is not None and last.claim is not None and first.verdict.record is not None
    assert last.state.decisions == {"req_1": first.verdict.record}


async def test_a_decision_asked_not_to_resume_leaves_the_pause_for_the_cycle(store: RunStore) -> None:
    """`resume=False`, or an engine elsewhere resuming top-level runs: the last decision recorded, nothing claimed."""
    first = await start(store)
    await paused(store, first, [approval("req_1", first)])
    other = await start(store, "thr_2", "run_2")
    await paused(store, other, [approval("req_2", other)], pause_id="pau_2")
    held = await decide(store, "req_1", ask("req_1", resume=False))
    elsewhere = await decide(store, "req_2", ask("req_2", claims_with_decision=False))
    assert held is not None and elsewhere is not None and held.claim is None and elsewhere.claim is None
    assert held.verdict.record is not None and elsewhere.verdict.record is not None
    for run in (first, other):
        assert (await store.get_run(run.run_id)).status == "paused"


async def test_concurrent_deciders_of_a_pause_resume_it_once(store: RunStore) -> None:
    """Racing `decide_request` calls on one request: one records and claims the run, the others are refused."""
    run = await start(store)
    await paused(store, run, [approval("req_1", run)])
    choices = [Approve(), Approve(edited_args={"name": "other"}), Reject(reason="no"), Reject(reason="not now")]
    outcomes = await at_once(*[lambda d=d: decide(store, "req_1", ask("req_1", d)) for d in choices])
    assert sum(isinstance(o, Decided) and o.claim is not None for o in outcomes) == 1
    assert sum(isinstance(o, AlreadyDecided) for o in outcomes) == 3
    assert await store.count_audit() == 1


async def test_a_claim_reads_the_principals_grants_when_asked(store: RunStore) -> None:
    """`consume_pause(grants_of=...)` reads the principal's live grants with the history; without it, none."""
    run = await start(store)
    run = await paused(store, run, [approval("req_1", run)])
    await store.record_decision(decision("req_1"), grant=grant("grt_1"))
    got = await claim(store, run, grants_of="alice")
    assert got.grants == [grant("grt_1")]


# decisions


async def test_the_first_decision_wins(store: RunStore) -> None:
    """A second decision is not recorded; `record_decision` returns the first."""
    run = await start(store)
    await paused(store, run, [approval("req_1", run)])
    assert await store.record_decision(decision("req_1"), audit=[noted("decided")]) is None
    earlier = await store.record_decision(decision("req_1", approve=False, at=NOW + 5), audit=[noted("late")])
    assert earlier == decision("req_1")
    found = await store.get_request("req_1")
    assert found is not None and found.decision == decision("req_1") and found.pause_status == "open"
    assert [r.body for r in await store.audit_records()] == [noted("decided")]
    assert await store.open_requests() == []


async def test_a_batch_of_decisions_is_recorded_whole_or_not_at_all(store: RunStore) -> None:
    """`record_decisions` writes nothing when any request was decided before, and returns those decisions."""
    run = await start(store)
    await paused(store, run, [approval("req_1", run), approval("req_2", run), approval("req_3", run)])
    await store.record_decision(decision("req_2"))
    earlier = await store.record_decisions(
        [decision("req_1"), decision("req_2", approve=False)], audit=[noted("batch")]
    )
    assert earlier == [decision("req_2")]
    assert (await store.pause_state("pau_1")).decisions == {"req_2": decision("req_2")}
    assert await store.count_audit() == 0
    grant = Grant(
        grant_id="gr_1",
        tool="delete_file",
        subject_key="k",
        subject_label="k",
        scope="always",
        principal="alice",
        agent="files",
        thread_id=None,
        created_at=NOW,
    )
    assert (
        await store.record_decisions([decision("req_1"), decision("req_3")], audit=[noted("batch")], grants=[grant])
        == []
    )
    assert set((await store.pause_state("pau_1")).decisions) == {"req_1", "req_2", "req_3"}
    assert await store.list_grants() == [grant]
    assert await store.count_audit() == 1


async def test_sayso_decisions_keep_what_a_person_decided(store: RunStore) -> None:
    """`add_decisions` records only requests not decided yet."""
    run = await start(store)
    await paused(store, run, [approval("req_1", run), approval("req_2", run)])
    await store.record_decision(decision("req_1"))
    expired = [
        DecisionRecord(request_id=r, decision=Skip(reason="expired"), by="expiry", principal=None, decided_at=NOW + 9)
        for r in ("req_1", "req_2")
    ]
    await store.add_decisions(expired, audit=[noted("expired")])
    decided = (await store.pause_state("pau_1")).decisions
    assert decided == {"req_1": decision("req_1"), "req_2": expired[1]}


async def test_a_request_reads_with_its_run(store: RunStore) -> None:
    """`request_with_run` returns the request, pause status, decision and raising run in one record."""
    run = await start(store)
    run = await paused(store, run, [approval("req_1", run)])
    found = await store.request_with_run("req_1")
    assert found is not None and found.request == approval("req_1", run) and found.run == run
    assert found.pause_status == "open" and found.decision is None
    assert await store.request_with_run("req_nope") is None and await store.get_request("req_nope") is None


async def test_a_run_lists_every_request_it_raised(store: RunStore) -> None:
    """`run_requests` spans the run's pauses, oldest first, with the decisions taken."""
    run = await start(store)
    run = await paused(store, run, [approval("req_1", run, created_at=NOW)])
    await store.record_decision(decision("req_1"))
    run = (await claim(store, run)).run
    await store.save_pause(
        run,
        holder=ME,
        pause_id="pau_2",
        new_messages=(),
        requests=[approval("req_2", run, created_at=NOW + 20)],
        now=NOW + 20,
    )
    asked = await store.run_requests("run_1")
    assert [r.request_id for r in asked.requests] == ["req_1", "req_2"]
    assert asked.decisions == {"req_1": decision("req_1")}


async def test_stored_requests_do_not_change_with_the_callers_objects(store: RunStore) -> None:
    """What the store hands back is its own copy: mutating it or the saved object changes nothing stored."""
    run = await start(store)
    request = approval("req_1", run, args={"name": "a", "nested": {"x": 1}})
    await paused(store, run, [request])
    request.args["nested"]["x"] = 2
    state = await store.pause_state("pau_1")
    assert state.requests[0].args == {"name": "a", "nested": {"x": 1}}
    state.requests[0].args["name"] = "changed"
    assert (await store.pause_state("pau_1")).requests[0].args["name"] == "a"


# the ledger of approved calls


async def test_an_approved_call_is_marked_once_and_finished_with_its_result(store: RunStore) -> None:
    """`begin_execution` marks a call once; again it returns the earlier entry, with the result once finished."""
    run = await start(store)
    assert await store.begin_execution("req_1", run.run_id, NOW) is None
    assert await store.begin_execution("req_1", run.run_id, NOW + 1) == ExecutionRecord(
        request_id="req_1", status="executing", result=None
    )
    await store.finish_execution("req_1", b'"deleted"', NOW + 2, audit=[noted("executed")])
    assert await store.begin_execution("req_1", run.run_id, NOW + 3) == ExecutionRecord(
        request_id="req_1", status="done", result=b'"deleted"'
    )
    assert [r.body for r in await store.audit_records()] == [noted("executed")]


async def test_consuming_a_pause_marks_the_calls_about_to_run(store: RunStore) -> None:
    """Marks written with the claim are there before the calls run; the next save finishes them with their audit."""
    run = await start(store)
    run = await paused(store, run, [approval("req_1", run), approval("req_2", run)])
    await store.record_decisions([decision("req_1"), decision("req_2")])
    running = (await claim(store, run, executing=["req_1", "req_2"])).run
    assert await store.begin_execution("req_1", run.run_id, NOW) == ExecutionRecord(
        request_id="req_1", status="executing", result=None
    )
    await store.finish_run(
        running,
        holder=ME,
        new_messages=said("", "done"),
        status="completed",
        output="done",
        error=None,
        now=NOW + 11,
        executions=[ExecutionResult(request_id="req_1", result=b"1", audit=noted("executed", request_id="req_1"))],
    )
    assert await store.begin_execution("req_1", run.run_id, NOW) == ExecutionRecord(
        request_id="req_1", status="done", result=b"1"
    )
    assert await store.begin_execution("req_2", run.run_id, NOW) == ExecutionRecord(
        request_id="req_2", status="executing", result=None
    )
    assert [r.body["request_id"] for r in await store.audit_records()] == ["req_1"]


async def test_a_pause_saved_after_calls_ran_finishes_their_marks(store: RunStore) -> None:
    """`save_pause` with executions writes their results in the same commit."""
    run = await start(store)
    await store.begin_execution("req_0", run.run_id, NOW)
    await store.save_pause(
        run,
        holder=ME,
        pause_id="pau_1",
        new_messages=(),
        requests=[approval("req_1", run)],
        now=NOW,
        executions=[ExecutionResult(request_id="req_0", result=b'"ok"', audit=noted("executed"))],
    )
    assert await store.begin_execution("req_0", run.run_id, NOW) == ExecutionRecord(
        request_id="req_0", status="done", result=b'"ok"'
    )
    assert await store.count_audit() == 1


async def test_stuck_calls_are_those_no_running_run_will_finish_and_resolve_once(store: RunStore) -> None:
    """`stuck_executions` lists `executing` entries of runs no longer running (or of one run); resolving one as
    unknown records its audit once however often it is tried, and the entry then reads `unknown`."""
    running = await start(store, "thr_1", "run_1")
    await store.begin_execution("req_live", running.run_id, NOW)
    ended = await start(store, "thr_2", "run_2")
    await store.begin_execution("req_cut", ended.run_id, NOW + 1)
    await store.begin_execution("req_done", ended.run_id, NOW + 2)
    await store.finish_execution("req_done", b"1", NOW + 3)
    await store.finish_run(ended, holder=ME, new_messages=(), status="failed", output=None, error="x", now=NOW + 4)
    assert [(e.request_id, e.run_id, e.started_at) for e in await store.stuck_executions()] == [
        ("req_cut", "run_2", NOW + 1)
    ]
    assert [e.request_id for e in await store.stuck_executions(run_id="run_1")] == ["req_live"]
    for _ in range(2):
        await store.finish_execution(
            "req_cut", b'"unknown"', NOW + 5, audit=[noted("outcome_unknown")], status="unknown"
        )
    assert await store.stuck_executions() == []
    assert await store.begin_execution("req_cut", ended.run_id, NOW + 6) == ExecutionRecord(
        request_id="req_cut", status="unknown", result=b'"unknown"'
    )
    assert [r.body for r in await store.audit_records()] == [noted("outcome_unknown")]


# grants


def grant(
    grant_id: str, *, principal: str = "alice", tool: str = "delete_file", key: str = "folder:reports", at: float = NOW
) -> Grant:
    """An `always` grant on a folder."""
    return Grant(
        grant_id=grant_id,
        tool=tool,
        subject_key=key,
        subject_label="folder reports/",
        scope="always",
        principal=principal,
        agent="files",
        granted_by="ops",
        thread_id=None,
        created_at=at,
    )


async def test_grants_are_created_with_a_decision_listed_and_revoked(store: RunStore) -> None:
    """A grant made with a decision is listed newest first, found for its call, and revoked once."""
    run = await start(store)
    await paused(store, run, [approval("req_1", run), approval("req_2", run), approval("req_3", run)])
    await store.record_decision(decision("req_1"), grant=grant("gr_1"))
    await store.record_decision(decision("req_2"), grant=grant("gr_2", principal="bob", at=NOW + 1))
    await store.record_decision(decision("req_3"), grant=grant("gr_3", key="folder:other", at=NOW + 2))
    assert [g.grant_id for g in await store.list_grants()] == ["gr_3", "gr_2", "gr_1"]
    assert await store.list_grants(principal="bob") == [grant("gr_2", principal="bob", at=NOW + 1)]
    assert await store.grants_for(principal="alice", tool="delete_file", subject_key="folder:reports") == [
        grant("gr_1")
    ]
    revoked = await store.revoke_grant("gr_1", now=NOW + 5, audit=[noted("revoked")])
    assert revoked == replace(grant("gr_1"), revoked_at=NOW + 5)
    assert await store.revoke_grant("gr_1", now=NOW + 6, audit=[noted("again")]) is None
    assert await store.grants_for(principal="alice", tool="delete_file", subject_key="folder:reports") == []
    assert [g.grant_id for g in await store.list_grants(principal="alice")] == ["gr_3"]
    assert [g.grant_id for g in await store.list_grants(principal="alice", active_only=False)] == ["gr_3", "gr_1"]
    assert [r.body for r in await store.audit_records()] == [noted("revoked")]


async def test_grants_page_newest_first_for_whoever_sees_them(store: RunStore) -> None:
    """A grant page holds the active grants whose principal or giver is asked for (all when none is), newest first
    (ties by id), each once across pages; a revoked grant is on none; a cursor of another listing is refused."""
    run = await start(store)
    made = [("gr_1", "alice", "ops"), ("gr_2", "bob", "bob"), ("gr_3", "alice", "alice"), ("gr_4", "carol", "ops")]
    made += [("gr_5", "alice", "alice"), ("gr_6", "alice", "ops"), ("gr_7", "dave", "dave")]
    await paused(store, run, [approval(f"req_{n}", run) for n in range(1, 9)])
    for n, (grant_id, principal, giver) in enumerate(made, start=1):
        given = replace(grant(grant_id, principal=principal, key=f"folder:{n}", at=NOW + n // 2), granted_by=giver)
        await store.record_decision(decision(f"req_{n}"), grant=given)
    await store.revoke_grant("gr_5", now=NOW + 9)

    async def read(seen_by: str | None, limit: int) -> list[str]:
        page = await store.grant_page(seen_by=seen_by, limit=limit)
        listed = [g.grant_id for g in page.grants]
        while page.next_cursor is not None:
            page = await store.grant_page(seen_by=seen_by, limit=limit, cursor=page.next_cursor)
            assert 0 < len(page.grants) <= limit
            listed += [g.grant_id for g in page.grants]
        return listed

    for limit in (1, 2, 3, 10):
        assert await read(None, limit) == ["gr_7", "gr_6", "gr_4", "gr_3", "gr_2", "gr_1"]
        assert await read("alice", limit) == ["gr_6", "gr_3", "gr_1"]
        assert await read("ops", limit) == ["gr_6", "gr_4", "gr_1"]
        assert await read("bob", limit) == ["gr_2"]
        assert await read("eve", limit) == []
    threads = base64.urlsafe_b64encode(json.dumps(["threads", NOW, "thr_1"]).encode()).decode().rstrip("=")
    for cursor in ("not-a-cursor", threads):
        with pytest.raises(InvalidCursor):
            await store.grant_page(seen_by=None, limit=2, cursor=cursor)


# the audit log


async def test_the_audit_chain_links_every_record(store: RunStore) -> None:
    """Appended records are numbered from 1, each hashing the one before, and the chain verifies."""
    await store.append_audit([noted("a", args={"n": 1}), noted("b", args={"nested": {"z": [1, 2], "a": None}})])
    await store.append_audit([])
    await store.append_audit([noted("naïve ✓")])
    records = await store.audit_records()
    assert [r.seq for r in records] == [1, 2, 3]
    assert records[1].body == noted("b", args={"nested": {"z": [1, 2], "a": None}})
    assert records[2].prev_hash == records[1].hash and records[0].prev_hash == "0" * 64
    assert verify_chain(records) is None
    assert await store.count_audit() == 3


async def test_a_keyed_chain_signs_every_record_and_checkpoints_its_head(store: RunStore) -> None:
    """With an audit key each record and the head carry the key's MACs, the head moves with every commit and is
    announced after it; without the key nothing more can be appended, and an unsigned chain takes signed records
    only after an anchor record vouches for it."""
    assert await store.audit_head() is None
    await store.append_audit([noted("old")])
    key = AuditKey(b"a-key-of-sixteen-bytes")
    announced: list[AuditHead] = []
    store.use_audit_key(key, on_head=announced.append)
    with pytest.raises(ConfigError, match="sayso audit anchor"):
        await store.append_audit([noted("signed")])
    unsigned = await store.audit_head()
    assert unsigned is not None and (unsigned.seq, unsigned.mac) == (1, None)
    await store.append_audit([anchor_body(unsigned, at=NOW), noted("signed")])
    records = await store.audit_records()
    head = await store.audit_head()
    assert [r.mac is not None for r in records] == [False, True, True]
    assert records[2].mac == key.sign_record(3, records[2].hash)
    assert head == AuditHead(seq=3, hash=records[2].hash, mac=key.sign_head(3, records[2].hash))
    assert announced == [head]
    assert verify_chain(records, key=key, head=head) is None
    store.use_audit_key(None)
    with pytest.raises(ConfigError, match="SAYSO_AUDIT_KEY"):
        await store.append_audit([noted("unsigned")])
    assert await store.count_audit() == 3 and await store.audit_head() == head


async def test_audit_pages_run_both_ways(store: RunStore) -> None:
    """Pages follow `seq` oldest or newest first and hand a cursor on until the last page."""
    await store.append_audit([noted(f"e{n}") for n in range(1, 6)])
    first = await store.audit_page(newest_first=False, limit=2, cursor=None)
    assert [r.seq for r in first.records] == [1, 2] and first.next_cursor == 2 and first.total == 5
    second = await store.audit_page(newest_first=False, limit=2, cursor=first.next_cursor)
    last = await store.audit_page(newest_first=False, limit=2, cursor=second.next_cursor)
    assert (
        [r.seq for r in second.records] == [3, 4] and [r.seq for r in last.records] == [5] and last.next_cursor is None
    )
    newest = await store.audit_page(newest_first=True, limit=3, cursor=None)
    older = await store.audit_page(newest_first=True, limit=3, cursor=newest.next_cursor)
    assert [r.seq for r in newest.records] == [5, 4, 3] and newest.next_cursor == 3
    assert [r.seq for r in older.records] == [2, 1] and older.next_cursor is None
    exact = await store.audit_page(newest_first=False, limit=5, cursor=None)
    assert len(exact.records) == 5 and exact.next_cursor is None


# the inbox


async def test_the_inbox_pages_open_requests_oldest_first(store: RunStore) -> None:
    """Keyset paging returns each open request once, in (created_at, id) order, ending with no cursor."""
    run = await start(store)
    times = {"req_a": NOW + 3, "req_b": NOW + 1, "req_c": NOW + 1, "req_d": NOW + 2, "req_e": NOW + 4}
    await paused(store, run, [approval(r, run, created_at=at) for r, at in times.items()])
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await store.inbox(InboxFilter(), now=NOW + 10, limit=2, cursor=cursor)
        seen += [r.request_id for r in page.requests]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == ["req_b", "req_c", "req_d", "req_a", "req_e"] and pages == 3
    with pytest.raises(InvalidCursor) as refused:
        await store.inbox(InboxFilter(), now=NOW, limit=2, cursor="not-a-cursor")
    assert isinstance(refused.value, SaysoError) and isinstance(refused.value, ValueError)


async def test_every_inbox_page_counts_all_that_its_filter_lists(store: RunStore) -> None:
    """`total` is how many requests the filter and the caller's visibility list across every page, not the page's
    length: what a badge shows; expired, decided and other principals' requests are not counted."""
    mine = await start(store, "thr_1", "run_1", owner="alice")
    waiting: list[Request] = [approval(f"req_{n}", mine, created_at=NOW + n) for n in range(5)]
    await paused(store, mine, [*waiting, approval("req_late", mine, expires_at=NOW + 5), approval("req_done", mine)])
    await store.record_decision(decision("req_done"))
    theirs = await start(store, "thr_2", "run_2", owner="bob", agent="ops")
    await paused(store, theirs, [approval("req_ops", theirs)], pause_id="pau_2")
    first = await store.inbox(InboxFilter(owner="alice"), now=NOW + 6, limit=2)
    second = await store.inbox(InboxFilter(owner="alice"), now=NOW + 6, limit=2, cursor=first.next_cursor)
    assert (len(first.requests), first.total) == (2, 5) and (len(second.requests), second.total) == (2, 5)
    assert (await store.inbox(InboxFilter(), now=NOW + 6, limit=50)).total == 6
    assert (await store.inbox(InboxFilter(owner="carol"), now=NOW + 6, limit=50)).total == 0


async def test_the_inbox_leaves_out_what_no_one_can_answer_now(store: RunStore) -> None:
    """Decided, expired, delegate and consumed-pause requests are not listed."""
    run = await start(store)
    child = await start(store, "thr_child", "run_child", parent_run_id="run_1", agent_path="files/helper")
    delegate = DelegateRequest(
        request_id="req_del",
        run_id=run.run_id,
        thread_id=run.thread_id,
        agent_path="files",
        tool_call_id="call_del",
        tool_name="helper",
        created_at=NOW,
        child_run_id=child.run_id,
    )
    await paused(
        store,
        run,
        [approval("req_open", run), approval("req_done", run), approval("req_old", run, expires_at=NOW + 5), delegate],
    )
    await store.record_decision(decision("req_done"))
    await paused(store, child, [approval("req_gone", child)], pause_id="pau_child")
    await claim(store, await store.get_run("run_child"))
    page = await store.inbox(InboxFilter(), now=NOW + 6, limit=10)
    assert [r.request_id for r in page.requests] == ["req_open"]
    assert [r.request_id for r in await store.open_requests()] == ["req_open", "req_old"]


async def test_the_inbox_filters_by_kind_agent_thread_and_age(store: RunStore) -> None:
    """Each filter narrows the inbox; an agent matches anywhere on a request's path, never by prefix of a name."""
    lead = await start(store, "thr_1", "run_1", agent="lead")
    await paused(
        store,
        lead,
        [
            approval("req_lead", lead, created_at=NOW - 100),
            approval("req_files", lead, agent_path="lead/files", created_at=NOW - 50),
            approval("req_deep", lead, agent_path="lead/files/reader", created_at=NOW - 10),
            approval("req_like", lead, agent_path="lead/files_x", created_at=NOW - 5),
        ],
    )
    other = await start(store, "thr_2", "run_2", agent="ops")
    q = QuestionRequest(
        request_id="req_q",
        run_id="run_2",
        thread_id="thr_2",
        agent_path="ops",
        tool_call_id="c",
        tool_name="ask_user",
        created_at=NOW - 1,
        questions=(Question(question="?"),),
    )
    await paused(store, other, [q], pause_id="pau_2")

    async def ids(**query: Any) -> list[str]:
        return [r.request_id for r in (await store.inbox(InboxFilter(**query), now=NOW, limit=50)).requests]

    assert await ids(kind="question") == ["req_q"]
    assert await ids(agent="files") == ["req_files", "req_deep"]
    assert await ids(agent="reader") == ["req_deep"]
    assert await ids(agent="files_") == []
    assert await ids(agent="lead/files") == ["req_files", "req_deep"]
    assert await ids(thread_id="thr_2") == ["req_q"]
    assert await ids(older_than=50) == ["req_lead", "req_files"]
    assert await ids(newer_than=10) == ["req_deep", "req_like", "req_q"]


async def test_the_inbox_shows_a_principal_their_threads_and_approved_agents(store: RunStore) -> None:
    """Visibility is the owner's threads plus requests rooted at an approved agent; neither given shows none."""
    mine = await start(store, "thr_1", "run_1", owner="alice", agent="files")
    await paused(store, mine, [approval("req_mine", mine)])
    theirs = await start(store, "thr_2", "run_2", owner="bob", agent="ops")
    await paused(
        store,
        theirs,
        [approval("req_ops", theirs), approval("req_ops_files", theirs, agent_path="ops/files")],
        pause_id="pau_2",
    )
    third = await start(store, "thr_3", "run_3", owner="carol", agent="opsx")
    await paused(store, third, [approval("req_opsx", third)], pause_id="pau_3")

    async def ids(**query: Any) -> list[str]:
        return sorted(r.request_id for r in (await store.inbox(InboxFilter(**query), now=NOW, limit=50)).requests)

    assert await ids(owner="alice") == ["req_mine"]
    assert await ids(owner="alice", approved_agents=["ops"]) == ["req_mine", "req_ops", "req_ops_files"]
    assert await ids(approved_agents=["files"]) == ["req_mine"]
    assert await ids(approved_agents=[]) == []
    assert await ids() == ["req_mine", "req_ops", "req_ops_files", "req_opsx"]


# messages and threads


async def test_messages_are_kept_per_thread_and_per_run(store: RunStore) -> None:
    """The thread's log is every batch in order; `run_messages` is what one run added."""
    first = await start(store)
    await store.finish_run(
        first, holder=ME, new_messages=said("one", "1"), status="completed", output="1", error=None, now=NOW + 1
    )
    second = await start(store, run_id="run_2", now=NOW + 2)
    second = await paused(store, second, [])
    await store.finish_run(
        (await claim(store, second)).run,
        holder=ME,
        new_messages=said("", "2"),
        status="completed",
        output="2",
        error=None,
        now=NOW + 12,
    )
    assert await store.load_messages("thr_1") == said("one", "1") + said("prompt of run_2", "asking") + said("", "2")
    assert await store.run_messages("run_2") == said("prompt of run_2", "asking") + said("", "2")
    assert await store.run_messages("run_1") == said("one", "1")
    assert await store.run_messages("run_nope") == [] and await store.load_messages("thr_nope") == []
    assert await store.last_seq("thr_1") == 3 and await store.last_seq("thr_nope") == 0


async def test_a_transcript_shows_text_and_tool_calls_after_a_batch(store: RunStore) -> None:
    """Transcript entries carry the batch and run they came from; `after_seq` skips earlier batches."""
    run = await start(store)
    call = ModelResponse(
        parts=[ToolCallPart(tool_name="delete_file", args={"name": "a"}, tool_call_id="c1")], timestamp=AT
    )
    await store.save_pause(
        run, holder=ME, pause_id="pau_1", new_messages=[*said("hi", "hello")[:1], call], requests=[], now=NOW
    )
    run = await store.get_run("run_1")
    result = ModelRequest(
        parts=[ToolReturnPart(tool_name="delete_file", content="deleted a", tool_call_id="c1", timestamp=AT)],
        timestamp=AT,
    )
    await store.finish_run(
        (await claim(store, run)).run,
        holder=ME,
        new_messages=[result, *said("", "bye")[1:]],
        status="completed",
        output="bye",
        error=None,
        now=NOW + 11,
    )
    at = AT.timestamp()
    later = [
        TranscriptEntry(
            seq=2,
            run_id="run_1",
            role="tool_result",
            tool_name="delete_file",
            tool_call_id="c1",
            text="deleted a",
            at=at,
        ),
        TranscriptEntry(seq=2, run_id="run_1", role="assistant", text="bye", at=at),
    ]
    assert await store.transcript("thr_1") == [
        TranscriptEntry(seq=1, run_id="run_1", role="user", text="hi", at=at),
        TranscriptEntry(
            seq=1,
            run_id="run_1",
            role="tool_call",
            tool_name="delete_file",
            tool_call_id="c1",
            args={"name": "a"},
            at=at,
        ),
        *later,
    ]
    assert await store.transcript("thr_1", after_seq=1) == later


async def test_a_transcript_shows_the_decision_a_result_carries(store: RunStore) -> None:
    """A result's approval record becomes a decision line before it, without the raw arguments."""
    run = await start(store)
    decided = ShownDecision(
        decision="approve",
        by="person",
        principal="alice",
        via="cli",
        decided_at=NOW + 5,
        scope="once",
        edits=[ArgEdit(field="name", before="a", after="b")],
    )
    record = {**decided, "proposed_args": {"name": "a", "token": "s3cret"}}
    result = ModelRequest(
        parts=[
            ToolReturnPart(
                tool_name="delete_file",
                content="deleted b",
                tool_call_id="c1",
                timestamp=AT,
                metadata={"approval": record},
            )
        ],
        timestamp=AT,
    )
    await store.finish_run(
        run, holder=ME, new_messages=[result], status="completed", output=None, error=None, now=NOW + 6
    )
    line, shown = await store.transcript("thr_1")
    assert line == TranscriptEntry(
        seq=1,
        run_id="run_1",
        role="decision",
        tool_name="delete_file",
        tool_call_id="c1",
        decision=decided,
        at=NOW + 5,
    )
    assert shown.role == "tool_result" and shown.text == "deleted b"


async def test_a_transcript_shows_where_runs_failed(store: RunStore) -> None:
    """A failed run's message and error appear in order, whether or not it stored messages first."""
    first = await start(store, now=NOW)
    await store.finish_run(first, holder=ME, new_messages=(), status="failed", output=None, error="boom", now=NOW + 1)
    second = await start(store, run_id="run_2", now=NOW + 2, expect_active=None)
    await store.finish_run(
        second, holder=ME, new_messages=said("hi", "hello"), status="completed", output="hello", error=None, now=NOW + 3
    )
    third = await paused(store, await start(store, run_id="run_3", now=NOW + 4), [], pause_id="pau_3", now=NOW + 4)
    await store.finish_run(
        (await claim(store, third)).run,
        holder=ME,
        new_messages=(),
        status="failed",
        output=None,
        error="late",
        now=NOW + 12,
    )
    lines = [(e.run_id, e.role, e.text, e.seq) for e in await store.transcript("thr_1")]
    assert lines == [
        ("run_1", "user", "prompt of run_1", 0),
        ("run_1", "error", "boom", 0),
        ("run_2", "user", "hi", 1),
        ("run_2", "assistant", "hello", 1),
        ("run_3", "user", "prompt of run_3", 2),
        ("run_3", "assistant", "asking", 2),
        ("run_3", "error", "late", 2),
    ]
    assert [(e.role, e.text) for e in await store.transcript("thr_1", after_seq=1)] == [
        ("user", "prompt of run_3"),
        ("assistant", "asking"),
        ("error", "late"),
    ]


async def test_a_transcript_pages_newest_first_each_line_once(store: RunStore) -> None:
    """A long thread is read a page at a time from its newest lines back: the pages, put back in order, are the
    whole transcript, failures in their places too, whatever the page size (a page may end inside a batch); the
    page carries the thread's title, as the thread list shows it; a cursor no store made, or made for another
    thread, is refused."""
    silent = await start(store, now=NOW)  # fails before storing anything: its message and error from the run
    await store.finish_run(silent, holder=ME, new_messages=(), status="failed", output=None, error="boom", now=NOW)
    at = NOW + 1
    for n in range(2, 9):
        run = await start(store, run_id=f"run_{n}", now=at)
        if n == 4:  # pauses, then fails once resumed: its error follows what it stored
            run = await paused(store, run, [], pause_id="pau_4", now=at)
            run = (await claim(store, run)).run
            await store.finish_run(run, holder=ME, new_messages=(), status="failed", output=None, error="late", now=at)
        elif n == 6:
            await store.finish_run(run, holder=ME, new_messages=(), status="failed", output=None, error="x", now=at)
        else:
            replies = said(f"hi {n}", f"hello {n}") + said(f"more {n}", f"again {n}")
            await store.finish_run(
                run, holder=ME, new_messages=replies, status="completed", output="", error=None, now=at
            )
        at += 1
    whole = await store.transcript("thr_1")
    assert len(whole) == 27
    for limit in (1, 2, 3, 5, 27, 40):
        page = await store.transcript_page("thr_1", limit=limit)
        assert page.entries == whole[-limit:] and page.title == "prompt of run_1"
        read = list(page.entries)
        while page.next_cursor is not None:
            page = await store.transcript_page("thr_1", limit=limit, cursor=page.next_cursor)
            assert 0 < len(page.entries) <= limit
            read = [*page.entries, *read]
        assert read == whole, limit
    assert await store.transcript_page("thr_none", limit=5) == TranscriptPage(entries=[], next_cursor=None, title=None)
    with pytest.raises(InvalidCursor):
        await store.transcript_page("thr_1", limit=2, cursor="not-a-cursor")
    older = (await store.transcript_page("thr_1", limit=2)).next_cursor
    assert older is not None
    with pytest.raises(InvalidCursor, match="another thread"):  # another thread's cursor is no position in this one
        await store.transcript_page("thr_none", limit=2, cursor=older)


async def test_top_level_runs_page_newest_first_by_owner_agent_thread_status_and_time(store: RunStore) -> None:
    """A2A's task list: the top-level runs of one agent's threads (one owner's, or everyone's; one thread; one status;
    updated since), newest update first (ties by id), a page at a time from the last run shown, each run once, and
    how many there are across every page. A delegate's run, another agent's and another owner's are not listed."""
    for n in range(25):
        run = await start(store, f"thr_a{n}", f"run_a{n:02}", now=NOW + n % 7)  # updates tie across threads
        if n % 3 == 0:
            await store.finish_run(
                run, holder=ME, new_messages=(), status="completed", output="", error=None, now=run.updated_at
            )
    await start(store, "thr_a0", "run_a0_again", now=NOW + 9)  # a second task in one thread
    for n in range(3):
        await start(store, f"thr_b{n}", f"run_b{n}", owner="bob", now=NOW + n)
    await start(store, "thr_other", "run_other", agent="helper", now=NOW + 3)
    await start(
        store, "thr_sub", "run_sub", now=NOW + 4, parent_run_id="run_a01", parent_call_id="c1", agent_path="files/files"
    )
    runs = [await store.get_run(f"run_a{n:02}") for n in range(25)] + [await store.get_run("run_a0_again")]
    runs = [r for r in runs if r is not None]

    def newest(selected: list[RunRecord]) -> list[str]:
        return [r.run_id for r in sorted(selected, key=lambda r: (r.updated_at, r.run_id), reverse=True)]

    async def read(query: RunQuery, limit: int) -> tuple[list[str], int]:
        page = await store.top_runs(query, limit=limit)
        listed, total = [r.run_id for r in page.runs], page.total
        while page.more:
            last = page.runs[-1]
            page = await store.top_runs(query, limit=limit, before=(last.updated_at, last.run_id))
            assert 0 < len(page.runs) <= limit and page.total == total
            listed += [r.run_id for r in page.runs]
        return listed, total

    bobs = [r for r in [await store.get_run(f"run_b{n}") for n in range(3)] if r is not None]
    for limit in (1, 4, 100):
        assert await read(RunQuery(agent="files", owner="alice"), limit) == (newest(runs), 26)
        assert await read(RunQuery(agent="files"), limit) == (newest(runs + bobs), 29)
        in_a0 = [r for r in runs if r.thread_id == "thr_a0"]
        assert await read(RunQuery(agent="files", owner="alice", thread_id="thr_a0"), limit) == (newest(in_a0), 2)
        done = [r for r in runs if r.status == "completed"]
        assert await read(RunQuery(agent="files", owner="alice", status="completed"), limit) == (newest(done), 9)
        late = [r for r in runs if r.updated_at >= NOW + 5]
        assert await read(RunQuery(agent="files", owner="alice", updated_from=NOW + 5), limit) == (
            newest(late),
            len(late),
        )
        assert await read(RunQuery(agent="helper", owner="alice"), limit) == (["run_other"], 1)
        assert await read(RunQuery(agent="files", owner="carol"), limit) == ([], 0)


async def test_a_decision_keeps_the_interface_it_came_through(store: RunStore) -> None:
    """`via` is stored with a decision and read back with the request and its pause."""
    run = await paused(store, await start(store), [approval("req_1", await store.get_run("run_1"))])
    via_cli = replace(decision("req_1"), via="cli")
    await store.record_decision(via_cli)
    found = await store.get_request("req_1")
    assert found is not None and found.decision == via_cli and found.decision.via == "cli"
    assert run.pause_id is not None
    assert (await store.pause_state(run.pause_id)).decisions["req_1"].via == "cli"


async def test_threads_list_newest_first_without_delegate_threads(store: RunStore) -> None:
    """A principal sees their threads newest first, titled by the first message; delegates' threads are hidden."""
    await start(store, "thr_1", "run_1", owner="alice", now=NOW)
    await start(store, "thr_2", "run_2", owner="bob", now=NOW + 1)
    long_prompt = RunStart(
        thread_id="thr_3",
        owner="alice",
        agent="files",
        run_id="run_3",
        prompt="x" * 100,
        lease_holder=ME,
        lease_expires_at=NOW + 99,
        now=NOW + 2,
    )
    await store.start_run(long_prompt, expect_active=None)
    await start(
        store, "thr_child", "run_child", owner="alice", now=NOW + 3, parent_run_id="run_1", agent_path="files/helper"
    )
    listed = (await store.threads(owner="alice", limit=10)).threads
    assert [(t.thread_id, t.title) for t in listed] == [("thr_3", "x" * 80), ("thr_1", "prompt of run_1")]
    assert listed[0].active_run_id == "run_3" and listed[0].owner == "alice"
    assert [t.thread_id for t in (await store.threads(owner=None, limit=2)).threads] == ["thr_3", "thr_2"]


async def test_threads_page_newest_first_each_thread_once(store: RunStore) -> None:
    """Keyset paging over (created_at, id), newest first: every thread of the owner exactly once, threads started
    at the same moment too, and one started between two pages does not push an older one into the next page again
    (it is on the first page when read again); a cursor no store made is refused."""
    for n, at in enumerate([NOW, NOW + 1, NOW + 1, NOW + 1, NOW + 2, NOW + 3], start=1):
        await start(store, f"thr_{n}", f"run_{n}", owner="alice", now=at)
    await start(store, "thr_bob", "run_bob", owner="bob", now=NOW + 4)
    seen: list[str] = []
    page = await store.threads(owner="alice", limit=2)
    await start(store, "thr_new", "run_new", owner="alice", now=NOW + 9)
    while True:
        seen += [t.thread_id for t in page.threads]
        if page.next_cursor is None:
            break
        page = await store.threads(owner="alice", limit=2, cursor=page.next_cursor)
    assert seen == ["thr_6", "thr_5", "thr_4", "thr_3", "thr_2", "thr_1"]
    exact = await store.threads(owner="alice", limit=7)
    assert len(exact.threads) == 7 and exact.next_cursor is None and exact.threads[0].thread_id == "thr_new"
    every = await store.threads(owner=None, limit=3)
    rest = await store.threads(owner=None, limit=10, cursor=every.next_cursor)
    assert [t.thread_id for t in every.threads + rest.threads][:3] == ["thr_new", "thr_bob", "thr_6"]
    assert len(every.threads + rest.threads) == 8 and rest.next_cursor is None
    with pytest.raises(InvalidCursor):
        await store.threads(owner="alice", limit=2, cursor="not-a-cursor")


# expiry and cancelling


async def test_expired_runs_are_those_whose_open_requests_all_expired(store: RunStore) -> None:
    """A paused run is expired once every open request passed its time; decided ones do not count."""
    a = await start(store, "thr_a", "run_a")
    await paused(
        store,
        a,
        [approval("req_a1", a, expires_at=NOW + 5), approval("req_a2", a, expires_at=NOW + 8)],
        pause_id="pau_a",
    )
    b = await start(store, "thr_b", "run_b")
    await paused(store, b, [approval("req_b1", b, expires_at=NOW + 5), approval("req_b2", b)], pause_id="pau_b")
    assert await store.expired_runs(NOW + 6) == []
    assert await store.expired_runs(NOW + 8) == ["run_a"]
    await store.record_decision(decision("req_b2"))
    assert await store.expired_runs(NOW + 6) == ["run_b"]
    assert sorted(await store.expired_runs(NOW + 8)) == ["run_a", "run_b"]


async def test_cancelling_a_paused_run_closes_its_pause_and_skips_what_was_open(store: RunStore) -> None:
    """`cancel_run` consumes the pause, keeps decisions already taken, cancels the run and frees the thread."""
    run = await start(store)
    run = await paused(store, run, [approval("req_1", run), approval("req_2", run)])
    await store.record_decision(decision("req_1"))
    skips = [
        DecisionRecord(
            request_id=r, decision=Skip(reason="parent moved on"), by="system", principal=None, decided_at=NOW + 3
        )
        for r in ("req_1", "req_2")
    ]
    await store.cancel_run(run, now=NOW + 3, skips=skips, audit=[noted("cancelled")])
    assert (await store.get_run("run_1")).status == "cancelled"
    state = await store.pause_state("pau_1")
    assert state.status == "consumed" and state.decisions == {"req_1": decision("req_1"), "req_2": skips[1]}
    thread = await store.get_thread("thr_1")
    assert thread is not None and thread.active_run_id is None
    with pytest.raises(PauseConsumed):
        await claim(store, run)


# remote delegates and adapters' marks


async def test_a_proxy_run_remembers_its_remote_task(store: RunStore) -> None:
    """The remote task of a proxy run reads back and can be replaced; a local run has none."""
    assert await store.remote_task("run_1") is None
    await store.set_remote_task("run_1", url="http://a", task_id="t1", context_id="c1")
    await store.set_remote_task("run_1", url="http://b", task_id="t2", context_id="c2")
    assert await store.remote_task("run_1") == RemoteTask(url="http://b", task_id="t2", context_id="c2")


async def test_marks_are_kept_per_namespace_and_overwritten(store: RunStore) -> None:
    """A mark reads back under its namespace and key only; setting it again replaces it."""
    assert await store.get_mark("a2a.activation", "run_1") is None
    await store.set_mark("a2a.activation", "run_1", '{"activated": false}')
    await store.set_mark("other", "run_1", "x")
    await store.set_mark("a2a.activation", "run_1", '{"activated": true}')
    assert await store.get_mark("a2a.activation", "run_1") == '{"activated": true}'
    assert await store.get_mark("other", "run_1") == "x"
    assert await store.get_mark("a2a.activation", "run_2") is None


async def test_a_claimed_mark_is_kept_once_and_of_concurrent_claimers_one_wins(store: RunStore) -> None:
    """`claim_mark` keeps a value only where none is (one-time tokens, replayed payloads): one claimer of many wins."""
    outcomes = await at_once(*[lambda n=n: store.claim_mark("links.used", "tok_1", f"try {n}") for n in range(4)])
    assert sorted(outcomes) == [False, False, False, True]
    kept = await store.get_mark("links.used", "tok_1")
    assert kept in {f"try {n}" for n in range(4)}
    assert await store.claim_mark("links.used", "tok_1", "again") is False
    assert await store.get_mark("links.used", "tok_1") == kept
    assert await store.claim_mark("links.used", "tok_2", "other") is True


async def test_concurrent_updates_of_a_mark_lose_nothing(store: RunStore) -> None:
    """`update_mark` reads and replaces a value as one step: twelve callers adding to one list at once all stay in
    it, and an update whose change refuses leaves the value as it was."""

    def adding(n: int) -> Callable[[str | None], str]:
        return lambda raw: json.dumps([*(json.loads(raw) if raw else []), n])

    await at_once(*[lambda n=n: store.update_mark("a2a.push", "task_1", adding(n)) for n in range(12)])
    kept = await store.get_mark("a2a.push", "task_1")
    assert kept is not None and sorted(json.loads(kept)) == list(range(12))

    def refusing(raw: str | None) -> str:
        raise ValueError("full")

    with pytest.raises(ValueError, match="full"):
        await store.update_mark("a2a.push", "task_1", refusing)
    assert await store.get_mark("a2a.push", "task_1") == kept
    assert await store.update_mark("a2a.push", "task_2", adding(7)) == "[7]"


# workflow runs


async def test_a_workflow_state_is_saved_with_the_runs_progress_its_pause_and_its_end(store: RunStore) -> None:
    """A workflow run's state reads back as last saved: while running, with its pause (and with the claim of
    that pause, when asked for), and with its end."""
    run = await start(store, agent="concierge")
    assert await store.workflow_state(run.run_id) is None
    await store.save_workflow_state(run, holder=ME, state=b'{"node": "b"}', now=NOW + 1, new_messages=said("go", ""))
    assert await store.workflow_state(run.run_id) == b'{"node": "b"}'
    assert await store.load_messages(run.thread_id) == said("go", "")
    await store.save_pause(
        run,
        holder=ME,
        pause_id="pau_1",
        new_messages=(),
        requests=[approval("req_1", run)],
        now=NOW + 2,
        workflow_state=b'{"node": "b", "status": "paused"}',
    )
    assert await store.workflow_state(run.run_id) == b'{"node": "b", "status": "paused"}'
    claim_ = await claim(store, await store.get_run(run.run_id), load_workflow_state=True, load_history=False)
    assert claim_.workflow_state == b'{"node": "b", "status": "paused"}' and claim_.history is None
    claimed = claim_.run
    await store.finish_run(
        claimed,
        holder=ME,
        new_messages=(),
        status="completed",
        output="done",
        error=None,
        now=NOW + 20,
        workflow_state=b'{"status": "completed"}',
    )
    assert await store.workflow_state(run.run_id) == b'{"status": "completed"}'
    assert await store.workflow_state("run_other") is None


async def test_a_workflow_state_is_saved_only_under_the_runs_lease(store: RunStore) -> None:
    """A process that lost the lease cannot save a workflow state; the stored one stays."""
    run = await start(store, agent="concierge")
    await store.save_workflow_state(run, holder=ME, state=b"{}", now=NOW + 1)
    assert await store.take_over(run.run_id, holder="host:2:b", until=NOW + 60, now=NOW + 2, dead_holders=[ME])
    with pytest.raises(RunConflict):
        await store.save_workflow_state(run, holder=ME, state=b'{"late": true}', now=NOW + 3)
    assert await store.workflow_state(run.run_id) == b"{}"


async def test_a_failed_run_is_reopened_once_and_takes_its_thread_back(store: RunStore) -> None:
    """`reopen_run` makes a failed run run again under the caller's lease; a second caller is refused."""
    run = await start(store, agent="concierge")
    await store.finish_run(run, holder=ME, new_messages=(), status="failed", output=None, error="boom", now=NOW + 1)
    reopened = await store.reopen_run(run, holder="host:2:b", until=NOW + 60, now=NOW + 2)
    assert (reopened.status, reopened.error, reopened.lease_holder) == ("running", None, "host:2:b")
    assert reopened == await store.get_run(run.run_id)
    thread = await store.get_thread(run.thread_id)
    assert thread is not None and thread.active_run_id == run.run_id
    with pytest.raises(RunConflict, match="only a failed run"):
        await store.reopen_run(run, holder="host:3:c", until=NOW + 60, now=NOW + 3)


async def test_a_failed_run_is_not_reopened_once_its_thread_moved_on(store: RunStore) -> None:
    """A failed run whose thread has a newer active run stays failed: `ThreadBusy`."""
    run = await start(store, agent="concierge")
    await store.finish_run(run, holder=ME, new_messages=(), status="failed", output=None, error="boom", now=NOW + 1)
    await start(store, run_id="run_2", agent="concierge", now=NOW + 2)
    with pytest.raises(ThreadBusy):
        await store.reopen_run(run, holder=ME, until=NOW + 60, now=NOW + 3)
    assert (await store.get_run(run.run_id)).status == "failed"
    with pytest.raises(RunNotFound):
        await store.reopen_run(replace(run, run_id="run_nope"), holder=ME, until=NOW + 60, now=NOW + 3)


async def test_a_run_started_and_resumed_without_waiting_for_the_disk_reads_back_the_same(store: RunStore) -> None:
    """`durable=False` changes when a commit reaches the disk, never what it writes or who wins."""
    run = await start(store, durable=False)
    assert await store.get_run(run.run_id) == run
    run = await paused(store, run, [approval("req_1", run)])
    claimed = await claim(store, run, durable=False)
    assert claimed.run == await store.get_run(run.run_id)
    with pytest.raises(PauseConsumed):
        await claim(store, run, durable=False)


async def test_a_store_answers_ping(store: RunStore) -> None:
    """An open store answers."""
    await store.ping()


# races: several callers at the same moment, exactly one wins


async def at_once(*steps: Callable[[], Awaitable[Any]]) -> list[Any]:
    """Run the steps concurrently; each one's result or sayso error, in the order given."""
    outcomes: list[Any] = [None] * len(steps)

    async def one(i: int) -> None:
        try:
            outcomes[i] = await steps[i]()
        except SaysoError as refused:
            outcomes[i] = refused

    async with anyio.create_task_group() as tg:
        for i in range(len(steps)):
            tg.start_soon(one, i)
    return outcomes


async def test_concurrent_consumers_of_a_pause_have_one_winner(store: RunStore) -> None:
    """Of several resumes at the same moment exactly one claims the run; the rest get `PauseConsumed`."""
    run = await start(store)
    run = await paused(store, run, [approval("req_1", run)])
    outcomes = await at_once(*[lambda: claim(store, run, executing=["req_1"])] * 4)
    assert sum(isinstance(o, Claim) for o in outcomes) == 1
    assert sum(isinstance(o, PauseConsumed) for o in outcomes) == 3


async def test_concurrent_decisions_on_a_request_keep_the_first(store: RunStore) -> None:
    """Racing decisions record one; every loser is told which decision won."""
    run = await start(store)
    await paused(store, run, [approval("req_1", run)])
    tries = [decision("req_1", approve=n % 2 == 0, at=NOW + n) for n in range(4)]
    outcomes = await at_once(*[lambda d=d: store.record_decision(d, audit=[noted(f"{d.decided_at}")]) for d in tries])
    winner = (await store.pause_state("pau_1")).decisions["req_1"]
    assert outcomes.count(None) == 1 and all(o == winner for o in outcomes if o is not None)
    assert await store.count_audit() == 1


async def test_concurrent_marks_of_an_approved_call_start_it_once(store: RunStore) -> None:
    """Of several `begin_execution` calls at once, one starts the call and the rest see its mark."""
    outcomes = await at_once(*[lambda: store.begin_execution("req_1", "run_1", NOW)] * 4)
    assert outcomes.count(None) == 1
    assert [o for o in outcomes if o is not None] == [
        ExecutionRecord(request_id="req_1", status="executing", result=None)
    ] * 3


async def test_concurrent_first_runs_on_a_new_thread_have_one_winner(store: RunStore) -> None:
    """Two runs starting a new thread at once: one starts it, the other gets `RunConflict`."""
    outcomes = await at_once(*[lambda n=n: start(store, run_id=f"run_{n}") for n in range(3)])
    assert sum(isinstance(o, RunRecord) for o in outcomes) == 1
    assert sum(isinstance(o, RunConflict) for o in outcomes) == 2


async def test_concurrent_audit_appends_keep_one_chain(store: RunStore) -> None:
    """Appends from many writers at once still number the records 1..n in one verifiable chain, whether the chain
    is empty when they start (no head to lock yet) or not."""
    for _ in range(2):
        await at_once(*[lambda n=n: store.append_audit([noted(f"{n}"), noted(f"{n}-second")]) for n in range(6)])
    records = await store.audit_records()
    assert [r.seq for r in records] == list(range(1, 25)) and verify_chain(records) is None


async def test_a_pause_id_is_stored_once(store: RunStore) -> None:
    """Saving a second pause under an id already stored is a `StoreError` and leaves the run as it was."""
    run = await start(store)
    await paused(store, run, [approval("req_1", run)])
    other = await start(store, "thr_2", "run_2")
    with pytest.raises(StoreError):
        await store.save_pause(other, holder=ME, pause_id="pau_1", new_messages=said("x", "y"), requests=[], now=NOW)
    assert (await store.get_run("run_2")).status == "running"
    assert await store.load_messages("thr_2") == []


@pytest.mark.parametrize(
    "cursor",
    [
        pytest.param("bm90IGpzb24", id="not-json"),
        pytest.param("eyJhIjogMX0", id="not-a-pair"),
        pytest.param("W3RydWUsICJyZXFfMSJd", id="flag-not-time"),
    ],
)
async def test_a_cursor_the_store_did_not_make_is_refused(store: RunStore, cursor: str) -> None:
    """Well-formed base64 that does not hold a (time, id) pair is an `InvalidCursor` too."""
    with pytest.raises(InvalidCursor):
        await store.inbox(InboxFilter(), now=NOW, limit=5, cursor=cursor)


# the outbox


async def test_changes_write_outbox_events_that_fan_out_once_per_webhook(store: RunStore) -> None:
    """A saved pause writes one event per request and a decision one more, in their own commits; each event fans
    out once into one delivery per webhook, with ids that are the same for every sender."""
    run = await start(store)
    run = await paused(store, run, [approval("req_1", run), approval("req_2", run)])
    assert await store.fan_out_events(hooks=[], now=NOW) == 0
    await store.record_decision(decision("req_1"))
    assert await store.fan_out_events(hooks=["h1", "h2"], now=NOW) == 3
    assert await store.fan_out_events(hooks=["h1", "h2"], now=NOW) == 0
    claimed = await store.claim_deliveries(holder="a", now=NOW, until=NOW + 30)
    assert len(claimed) == 6 and len({c.delivery_id for c in claimed}) == 6
    assert sorted((c.kind, c.request_id) for c in claimed if c.hook == "h1") == [
        ("request.decided", "req_1"),
        ("request.opened", "req_1"),
        ("request.opened", "req_2"),
    ]
    assert all(c.delivery_id.startswith("dlv_") and c.delivery_id.endswith(c.hook) for c in claimed)
    assert await store.delivery_counts() == {"pending": 6}


async def test_a_top_level_runs_pause_and_end_are_run_updates_fanned_out_only_to_who_asks_for_them(
    store: RunStore,
) -> None:
    """A top-level run's pause and its end each write a `run.updated` event (its id in `request_id`); webhooks'
    fan-out leaves them, a sender naming the kind takes them, and each claims only its own hook's deliveries."""
    waiting = await start(store)
    waiting = await paused(store, waiting, [approval("req_1", waiting)])
    await store.record_decision(decision("req_1"))
    done = await start(store, "thr_2", "run_2")
    await store.finish_run(done, holder=ME, new_messages=(), status="completed", output="ok", error=None, now=NOW + 2)
    assert await store.fan_out_events(hooks=["web"], now=NOW + 2) == 2  # the request's opening and decision
    assert await store.fan_out_events(hooks=["push"], now=NOW + 2, kinds=("run.updated",)) == 2
    pushed = await store.claim_deliveries(holder="a", now=NOW + 2, until=NOW + 30, hooks=["push"])
    assert sorted((c.kind, c.request_id, c.hook) for c in pushed) == [
        ("run.updated", "run_1", "push"),
        ("run.updated", "run_2", "push"),
    ]
    webhooks = await store.claim_deliveries(holder="b", now=NOW + 2, until=NOW + 30, hooks=["web"])
    assert sorted(c.kind for c in webhooks) == ["request.decided", "request.opened"]


async def test_run_updates_fanned_out_for_marked_runs_only_pass_the_others_over_for_good(store: RunStore) -> None:
    """With `marked`, only the updates of runs with a mark in that namespace get a delivery (A2A keeps a task's
    push configs as its marks); the others are fanned out to no one, and a later mark does not bring them back."""
    for n in (1, 2):
        run = await start(store, f"thr_{n}", f"run_{n}")
        await store.finish_run(run, holder=ME, new_messages=(), status="completed", output="ok", error=None, now=NOW)
    await store.set_mark("push", "run_2", "[]")
    await store.set_mark("other", "run_1", "x")
    assert await store.fan_out_events(hooks=["push"], now=NOW + 1, kinds=("run.updated",), marked="push") == 2
    await store.set_mark("push", "run_1", "[]")
    assert await store.fan_out_events(hooks=["push"], now=NOW + 1, kinds=("run.updated",), marked="push") == 0
    pushed = await store.claim_deliveries(holder="a", now=NOW + 2, until=NOW + 30, hooks=["push"])
    assert [(c.kind, c.request_id) for c in pushed] == [("run.updated", "run_2")]
    assert await store.delivery_counts() == {"pending": 1}


async def test_a_delivery_is_claimed_by_one_sender_until_settled_or_its_claim_lapses(store: RunStore) -> None:
    """A claimed delivery is not claimed again while the claim holds; only its holder settles it; a retry waits
    for its time with the attempt counted; a lapsed claim is taken over; settled deliveries are done."""
    run = await start(store)
    await paused(store, run, [approval("req_1", run), approval("req_2", run)])
    await store.fan_out_events(hooks=["h"], now=NOW)
    first, second = await store.claim_deliveries(holder="a", now=NOW, until=NOW + 30)
    assert await store.claim_deliveries(holder="b", now=NOW + 1, until=NOW + 31) == []
    assert not await store.settle_delivery(first.delivery_id, holder="b", status="delivered", now=NOW + 2)
    assert await store.settle_delivery(first.delivery_id, holder="a", status="delivered", now=NOW + 2)
    assert await store.settle_delivery(
        second.delivery_id, holder="a", status="pending", now=NOW + 2, retry_at=NOW + 10, error="HTTP 503"
    )
    assert await store.claim_deliveries(holder="b", now=NOW + 5, until=NOW + 35) == []
    [again] = await store.claim_deliveries(holder="b", now=NOW + 10, until=NOW + 40)
    assert (again.delivery_id, again.attempts) == (second.delivery_id, 1)
    [taken] = await store.claim_deliveries(holder="c", now=NOW + 41, until=NOW + 70)
    assert taken.delivery_id == second.delivery_id
    assert not await store.settle_delivery(second.delivery_id, holder="b", status="failed", now=NOW + 42)
    assert await store.settle_delivery(second.delivery_id, holder="c", status="failed", now=NOW + 42, error="HTTP 410")
    assert await store.claim_deliveries(holder="d", now=NOW + 99, until=NOW + 130) == []
    assert await store.delivery_counts() == {"delivered": 1, "failed": 1}


async def test_a_receivers_error_holding_a_nul_settles_its_delivery(store: RunStore) -> None:
    """What a webhook's receiver answered is not sayso's to refuse: an error holding a NUL or a lone surrogate
    (PostgreSQL's text keeps neither) is kept with U+FFFD, and the delivery is retried as any other."""
    run = await start(store)
    await paused(store, run, [approval("req_1", run)])
    await store.fan_out_events(hooks=["h"], now=NOW)
    [claimed] = await store.claim_deliveries(holder="a", now=NOW, until=NOW + 30)
    said = "HTTP 502: bad\x00gateway \ud800"
    assert await store.settle_delivery(
        claimed.delivery_id, holder="a", status="pending", now=NOW + 1, retry_at=NOW + 5, error=said
    )
    [again] = await store.claim_deliveries(holder="b", now=NOW + 5, until=NOW + 35)
    assert (again.delivery_id, again.attempts) == (claimed.delivery_id, 1)


async def test_pruning_takes_settled_deliveries_and_done_events_past_the_cut_off(store: RunStore) -> None:
    """`prune_outbox` deletes deliveries delivered, skipped or failed before the cut-off and events none of whose
    deliveries is left, or never fanned out; a pending delivery, claimed or not, and its event stay."""
    run = await start(store)
    await paused(store, run, [approval("req_1", run), approval("req_2", run), approval("req_3", run)])
    await store.record_decision(decision("req_1", at=NOW + 1))
    assert await store.fan_out_events(hooks=["h"], now=NOW + 1) == 4
    claimed: dict[tuple[str, str], str] = {
        (c.kind, c.request_id): c.delivery_id
        for c in await store.claim_deliveries(holder="a", now=NOW + 1, until=NOW + 30)
    }
    settle: dict[tuple[str, str], dict[str, Any]] = {
        ("request.opened", "req_1"): {"status": "delivered"},
        ("request.opened", "req_2"): {"status": "failed", "error": "HTTP 410"},
        ("request.decided", "req_1"): {"status": "skipped"},
        ("request.opened", "req_3"): {"status": "pending", "retry_at": NOW + 100, "error": "HTTP 503"},
    }
    for key, outcome in settle.items():
        assert await store.settle_delivery(claimed[key], holder="a", now=NOW + 2, **outcome)
    await store.record_decision(decision("req_2", at=NOW + 3))  # an event no server fanned out
    # Settled at the cut-off, not before it; only the run's own update (`run.updated`, which no webhook takes,
    # never fanned out here) is older.
    assert await store.prune_outbox(before=NOW + 2) == 1
    assert await store.delivery_counts() == {"delivered": 1, "failed": 1, "skipped": 1, "pending": 1}
    # 3 settled deliveries, their 3 events, and the event never fanned out; req_3's pending one and its event stay.
    assert await store.prune_outbox(before=NOW + 10) == 7
    assert await store.delivery_counts() == {"pending": 1}
    assert await store.fan_out_events(hooks=["h"], now=NOW + 10) == 0
    assert await store.prune_outbox(before=NOW + 10) == 0
    [retry] = await store.claim_deliveries(holder="b", now=NOW + 100, until=NOW + 130)
    assert await store.prune_outbox(before=NOW + 1_000) == 0  # claimed: still pending
    assert await store.settle_delivery(retry.delivery_id, holder="b", status="delivered", now=NOW + 101)
    assert await store.prune_outbox(before=NOW + 101) == 0
    assert await store.prune_outbox(before=NOW + 1_000) == 2
    assert await store.delivery_counts() == {}


async def test_pruning_goes_in_batches_of_at_most_the_limit(store: RunStore) -> None:
    """Each `prune_outbox` call deletes at most `limit` rows, deliveries before events, until nothing is left."""
    run = await start(store)
    await paused(store, run, [approval(f"req_{n}", run) for n in range(5)])
    await store.fan_out_events(hooks=["h1", "h2"], now=NOW)
    for delivery in await store.claim_deliveries(holder="a", now=NOW, until=NOW + 30):
        await store.settle_delivery(delivery.delivery_id, holder="a", status="delivered", now=NOW + 1)
    assert await store.delivery_counts() == {"delivered": 10}
    # 10 deliveries, 5 events and the run's own update (`run.updated`, never fanned out to webhooks).
    assert [await store.prune_outbox(before=NOW + 5, limit=4) for _ in range(5)] == [4, 4, 4, 4, 0]
    assert await store.delivery_counts() == {}
