"""The `RunStore` contract of what a watch reads at each look, on memory, SQLite and PostgreSQL.

A watch remembers where it stopped in the outbox and reads only what came since; it asks which
requests ran out of time since its last look; and it asks which of the requests it heard of its
principal's inbox lists. Each answer is about what changed, never about every open request.
"""

from __future__ import annotations

from sayso._core.requests import Request
from sayso._store import InboxFilter, RunStore

from .test_contract import NOW, approval, decide, paused, start


async def test_the_outbox_is_read_from_where_a_reader_stopped(store: RunStore) -> None:
    """Events come oldest first after the position given, a page at a time; `None` gives only the head."""
    empty = await store.events_after(None)
    assert (empty.events, empty.head) == ([], 0)
    run = await start(store)
    await paused(store, run, [approval("req_1", run), approval("req_2", run)])
    start_at = (await store.events_after(None)).head
    assert start_at > 0
    await decide(store, "req_1")
    page = await store.events_after(start_at)
    assert [(e.kind, e.request_id) for e in page.events] == [("request.decided", "req_1")]
    assert page.head == page.events[-1].seq > start_at
    whole = await store.events_after(0)
    said = [(e.kind, e.request_id) for e in whole.events]
    # One commit's events come together, in whichever order its statements were sent.
    assert sorted(said[:3]) == [("request.opened", "req_1"), ("request.opened", "req_2"), ("run.updated", "run_1")]
    assert said[3:] == [("request.decided", "req_1")]
    assert [e.seq for e in whole.events] == sorted({e.seq for e in whole.events})
    first = await store.events_after(0, limit=2)
    rest = await store.events_after(first.events[-1].seq, limit=2)
    assert [*first.events, *rest.events] == whole.events
    assert (await store.events_after(page.head)).events == []


async def test_requests_whose_time_ran_out_are_found_by_when(store: RunStore) -> None:
    """Undecided requests whose expiry falls in the span, soonest first; a decided one, or one that never expires,
    never."""
    run = await start(store)
    requests: list[Request] = [
        approval("req_late", run, expires_at=NOW + 10),
        approval("req_soon", run, expires_at=NOW + 5),
        approval("req_done", run, expires_at=NOW + 20),
        approval("req_never", run),
    ]
    await paused(store, run, requests)
    await decide(store, "req_done")
    assert await store.requests_expired(after=NOW, until=NOW + 4) == []
    assert await store.requests_expired(after=NOW, until=NOW + 5) == ["req_soon"]
    assert await store.requests_expired(after=NOW + 5, until=NOW + 100) == ["req_late"]
    assert await store.requests_expired(after=NOW, until=NOW + 100) == ["req_soon", "req_late"]


async def test_the_inbox_narrows_to_the_requests_asked_about(store: RunStore) -> None:
    """`request_ids` lists those of the given requests the inbox lists anyway (none for an empty list)."""
    mine = await start(store, "thr_1", "run_1", owner="alice")
    await paused(store, mine, [approval("req_a", mine), approval("req_b", mine), approval("req_c", mine)])
    theirs = await start(store, "thr_2", "run_2", owner="bob")
    await paused(store, theirs, [approval("req_bob", theirs)], pause_id="pau_2")

    async def ids(asked: list[str], owner: str | None = None) -> list[str]:
        page = await store.inbox(InboxFilter(request_ids=asked, owner=owner, decider=owner), now=NOW, limit=10)
        return sorted(r.request_id for r in page.requests)

    assert await ids(["req_a", "req_c", "req_bob", "req_gone"]) == ["req_a", "req_bob", "req_c"]
    assert await ids(["req_a", "req_bob"], owner="alice") == ["req_a"]
    assert await ids([]) == []
