"""`Sayso.watch`: what changed for a principal, even when another process on the same store changed it.

Two runtimes over one SQLite file stand for two processes (the server and `sayso decide`): the
watching one learns of requests opened and decided, with who decided and through which
interface, and of the watched thread moving on; a principal learns only of what they may see.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from pathlib import Path

import anyio
import pytest

from sayso import Approve, PrincipalConfig, Sayso
from sayso._runtime import Change, RequestClosed, RequestOpened, RunChanged, ThreadsChanged

from .conftest import EXAMPLE

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


async def test_a_change_in_this_process_is_seen_without_waiting_for_the_next_look(tmp_path: Path) -> None:
    """A request opened by the watching runtime itself wakes its watch at once, long before the next look."""
    async with runtime() as app:
        async with aclosing(app.watch(every=60)) as changes:
            assert await anext(changes) == []
            started = await app.run("delete notes")
            seen = await until(changes, lambda s: any(isinstance(c, RequestOpened) for c in s), timeout=5)
    assert [c.request.request_id for c in seen if isinstance(c, RequestOpened)] == [started.requests[0].request_id]
