"""`Sayso.watch`: what changed for a principal, even when another process on the same store changed it.

Two runtimes over one SQLite file stand for two processes (the server and `sayso decide`): the
watching one learns of requests opened and decided, with who decided and through which
interface, and of the watched thread moving on; a principal learns only of what they may see.
The watch reads the store's outbox since its last look, never every open request, so it hears of
each change however many requests wait, and of a request whose time ran out as it runs out.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, aclosing
from pathlib import Path

import anyio
import pytest

from sayso import ApprovalRequest, Approve, PrincipalConfig, Sayso, load_config
from sayso._runtime import (
    Change,
    RequestClosed,
    RequestOpened,
    RequestVoted,
    RunChanged,
    ThreadsChanged,
    request_state_json,
)
from sayso._runtime._feed import GAP_WAIT, Feed
from sayso._store import FeedEvent, RunStart, SqlRunStore

from .conftest import EXAMPLE, ROOT
from .store.conftest import postgres_database

pytestmark = pytest.mark.anyio


def runtime(principals: list[dict[str, object]] | None = None) -> Sayso:
    """The file-manager example over this test's store; each call is another "process"."""
    config = Sayso.from_yaml(EXAMPLE).config
    if principals is not None:
        config = config.model_copy(update={"principals": [PrincipalConfig.model_validate(p) for p in principals]})
    return Sayso(config)


async def until(
    changes: AsyncIterator[list[Change]], done: Callable[[list[Change]], bool], timeout: float = 10
) -> list[Change]:
    """Collect changes until `done` says the collected ones are enough."""
    seen: list[Change] = []
    with anyio.fail_after(timeout):
        async for batch in changes:
            seen.extend(batch)
            if done(seen):
                return seen
    raise AssertionError("the watch ended")


async def test_a_decision_from_another_process_reaches_the_watch(tmp_path: Path) -> None:
    """A request opened and then approved from another runtime is reported opened, then closed with the
    decision, its principal and interface; the watched thread is reported moving on."""
    async with runtime() as server, runtime() as cli:
        started = await cli.run("delete notes")
        request_id = started.requests[0].request_id
        async with aclosing(server.watch(thread_id=started.thread_id, every=0.05)) as changes:
            assert await anext(changes) == []
            await cli.decide(request_id, Approve(), via="cli")
            seen = await until(changes, lambda s: any(isinstance(c, RunChanged) and c.run_id is None for c in s))
        closed = [c for c in seen if isinstance(c, RequestClosed)]
        assert len(closed) == 1 and closed[0].state.request.request_id == request_id
        decision = closed[0].state.decision
        assert decision is not None and (decision.decision, decision.principal, decision.via) == (
            Approve(),
            "local",
            "cli",
        )
        assert seen.index(closed[0]) < next(i for i, c in enumerate(seen) if isinstance(c, RunChanged))

        async with aclosing(server.watch(every=0.05)) as changes:
            assert await anext(changes) == []
            again = await cli.run("delete todo")
            seen = await until(changes, lambda s: any(isinstance(c, RequestOpened) for c in s))
        opened = [c for c in seen if isinstance(c, RequestOpened)]
        assert [c.request.request_id for c in opened] == [again.requests[0].request_id]
        assert any(isinstance(c, ThreadsChanged) for c in seen)


async def test_a_watch_reports_only_what_its_principal_may_see(tmp_path: Path) -> None:
    """Alice's new request reaches alice, an approver for her agent and one for every agent, never a stranger."""
    principals: list[dict[str, object]] = [
        {"name": "alice", "token": "a"},
        {"name": "bob", "token": "b"},
        {"name": "ops", "token": "o", "approver_for": ["files"]},
        {"name": "rev", "token": "r", "approver_for": ["*"]},
    ]
    async with runtime(principals) as server, runtime(principals) as other:
        watches = {name: server.watch(principal=name, every=0.05) for name in ("alice", "bob", "ops", "rev")}
        for changes in watches.values():
            assert await anext(changes) == []
        started = await other.run("delete notes", principal="alice")
        for name in ("alice", "ops", "rev"):
            seen = await until(watches[name], lambda s: any(isinstance(c, RequestOpened) for c in s))
            assert [c.request.request_id for c in seen if isinstance(c, RequestOpened)] == [
                started.requests[0].request_id
            ]
        # Bob's next look compares the store as it is now, alice's request in it, with his first one, taken
        # before it was opened: whatever he could learn of it, this look shows.
        assert await anext(watches["bob"]) == []
        for changes in watches.values():
            await changes.aclose()


async def test_whoever_may_see_a_routed_request_hears_it_opened_and_each_vote(tmp_path: Path) -> None:
    """Alice's refund waits for two of finance (docs/guides/routing.md): she may see it, her own thread's, but not
    approve it. Her watch hears it opened and hears bob's vote, as carol's (finance) does; dana, outside finance,
    hears of neither. Who hears is who may read it (`request`), not who may decide it."""
    principals = [PrincipalConfig(name=n, token=f"{n}-token") for n in ("alice", "bob", "carol", "dana")]
    config = load_config(ROOT / "examples" / "refunds" / "sayso.yaml").model_copy(update={"principals": principals})
    async with Sayso(config) as server, Sayso(config) as other:
        watches = {name: server.watch(principal=name, every=0.05) for name in ("alice", "carol", "dana")}
        for changes in watches.values():
            assert await anext(changes) == []
        started = await other.run("refund 250 to acme", principal="alice")
        request_id = started.requests[0].request_id
        assert (await server.request(request_id, principal="alice")).request.request_id == request_id
        for name in ("alice", "carol"):
            seen = await until(watches[name], lambda s: any(isinstance(c, RequestOpened) for c in s))
            assert [c.request.request_id for c in seen if isinstance(c, RequestOpened)] == [request_id]
        await other.decide(request_id, Approve(), principal="bob", via="rest")
        for name in ("alice", "carol"):
            seen = await until(watches[name], lambda s: any(isinstance(c, RequestVoted) for c in s))
            [voted] = [c for c in seen if isinstance(c, RequestVoted)]
            quorum = request_state_json(voted.state, now=time.time())["request"]["quorum"]
            assert (voted.state.request.request_id, quorum["text"]) == (request_id, "1 of 2, waiting for finance")
        # dana's look after the vote compares the store as it is now with her first one: whatever she could learn
        # of the request and its vote, this look shows.
        assert await anext(watches["dana"]) == []
        for changes in watches.values():
            await changes.aclose()


async def test_a_change_in_this_process_is_seen_without_waiting_for_the_next_look(tmp_path: Path) -> None:
    """A request opened by the watching runtime itself wakes its watch at once, long before the next look."""
    async with runtime() as app:
        async with aclosing(app.watch(every=60)) as changes:
            assert await anext(changes) == []
            started = await app.run("delete notes")
            seen = await until(changes, lambda s: any(isinstance(c, RequestOpened) for c in s), timeout=5)
    assert [c.request.request_id for c in seen if isinstance(c, RequestOpened)] == [started.requests[0].request_id]


async def test_a_request_whose_time_ran_out_is_closed_once(tmp_path: Path) -> None:
    """A request's time running out closes it on the watch at once, as expired (nothing is written then); the
    expiry the sweep records later is not said again."""
    now = [time.time()]
    config = runtime().config
    files = config.agents["files"]
    files = files.model_copy(update={"interrupt": files.interrupt.model_copy(update={"ttl_seconds": 60})})
    config = config.model_copy(update={"agents": {**config.agents, "files": files}})
    async with Sayso(config, clock=lambda: now[0]) as app:
        started = await app.run("delete notes")
        async with aclosing(app.watch(every=0.05)) as changes:
            assert await anext(changes) == []
            now[0] += 61
            seen = await until(changes, lambda s: any(isinstance(c, RequestClosed) for c in s))
            [closed] = [c for c in seen if isinstance(c, RequestClosed)]
            assert closed.state.request.request_id == started.requests[0].request_id
            assert request_state_json(closed.state, now=now[0])["status"] == "expired"
            await app.expire()
            seen = await until(changes, lambda s: any(isinstance(c, ThreadsChanged) for c in s))
        assert not any(isinstance(c, RequestClosed) for c in seen)


async def open_many_requests(count: int, *, per_pause: int = 100) -> None:
    """`count` open requests of `local`'s, older than any a test opens next, written through the store's verbs:
    `per_pause` to a pause, each on a thread of its own."""
    now = time.time() - 60
    async with SqlRunStore(os.environ["SAYSO_STORE"]) as store:
        for first in range(0, count, per_pause):
            start = RunStart(
                thread_id=f"thr_many_{first}",
                owner="local",
                agent="files",
                run_id=f"run_many_{first}",
                prompt="delete everything",
                lease_holder="elsewhere",
                lease_expires_at=now + 30,
                now=now,
            )
            requests = [
                ApprovalRequest(
                    request_id=f"req_many_{n:05}",
                    run_id=start.run_id,
                    thread_id=start.thread_id,
                    agent_path="files",
                    tool_call_id=f"call_{n}",
                    tool_name="delete_file",
                    args={"name": f"file-{n}"},
                    created_at=now + n / 1000,
                    hint="delete a file",
                    principal="local",
                )
                for n in range(first, min(count, first + per_pause))
            ]
            run = await store.start_run(start, expect_active=None, durable=False)
            pause_id = f"pau_many_{first}"
            await store.save_pause(
                run, holder="elsewhere", pause_id=pause_id, new_messages=[], requests=requests, now=now
            )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_watch_follows_requests_past_the_thousandth(monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    """With 1,200 requests already waiting, a decision on a newer one still reaches the watch, and so does
    a request opened after them all."""
    async with AsyncExitStack() as stack:
        if backend == "postgres":
            monkeypatch.setenv("SAYSO_STORE", await stack.enter_async_context(postgres_database()))
        server, cli = [await stack.enter_async_context(runtime()) for _ in range(2)]
        await open_many_requests(1200)
        started = await cli.run("delete notes")
        request_id = started.requests[0].request_id
        changes = await stack.enter_async_context(aclosing(server.watch(thread_id=started.thread_id, every=0.05)))
        assert await anext(changes) == []
        await cli.decide(request_id, Approve(), via="cli")
        seen = await until(changes, lambda s: any(isinstance(c, RequestClosed) for c in s))
        assert [c.state.request.request_id for c in seen if isinstance(c, RequestClosed)] == [request_id]
        again = await cli.run("delete todo")
        seen = await until(changes, lambda s: any(isinstance(c, RequestOpened) for c in s))
        assert [c.request.request_id for c in seen if isinstance(c, RequestOpened)] == [again.requests[0].request_id]


def positions(events: list[FeedEvent]) -> list[int]:
    return [e.seq for e in events]


def at(*seqs: int) -> list[FeedEvent]:
    """Outbox events at these positions, as `events_after` returns them."""
    return [FeedEvent(seq=s, kind="request.decided", request_id=f"req_{s}", created_at=0.0) for s in seqs]


def test_a_position_that_commits_late_is_read_and_one_never_filled_is_passed() -> None:
    """On PostgreSQL an event can appear after one written later (its transaction committed later): it is read
    when it appears. A position never filled (a transaction rolled back) is waited for, then passed."""
    feed = Feed(after=10, looked_at=0.0)
    assert positions(feed.take(at(11, 13, 15), now=0.0)) == [11, 13, 15]
    assert positions(feed.take(at(12, 13, 15), now=1.0)) == [12]
    assert feed.after == 13  # 14 is still waited for
    assert positions(feed.take(at(15, 16), now=GAP_WAIT - 1)) == [16] and feed.after == 13
    assert positions(feed.take(at(15, 16), now=GAP_WAIT)) == [] and feed.after == 16
    feed.restart()  # the outbox's positions started again (SQLite, after a prune took the newest events)
    assert positions(feed.take(at(7, 8), now=GAP_WAIT + 1)) == [7, 8] and feed.after == 8
