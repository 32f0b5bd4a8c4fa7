"""The `RunStore` contract for routed requests (docs/guides/routing.md), on memory, SQLite and PostgreSQL.

A vote is written inside the transaction that judged it, after the votes it read: a vote counted
twice, or two voters each judging on a count that misses the other, collide on the vote's
position and are judged again, so the Nth approval is counted once and resolves the request once.
"""

from __future__ import annotations

from sayso._core.audit import AuditRecord
from sayso._core.deciding import DecisionAsk
from sayso._core.decisions import Approve, Reject
from sayso._core.routing import resolve
from sayso._store import Decided, InboxFilter, RunStore

from .test_contract import NOW, approval, ask, at_once, decide, paused, start

FINANCE = resolve(["finance"], {"finance": ["alice", "bob", "carol", "dave"]}, approvals_required=3)


def voter(who: str, decision: Approve | Reject | None = None) -> DecisionAsk:
    """`who`'s vote as the decide verb asks for it: judged by the core's rule (`tally` counts it)."""
    return ask("req_1", decision or Approve(), who=who, via="rest")


def voters(records: list[AuditRecord]) -> list[tuple[str, str]]:
    """The audit log's events, with who voted or decided."""
    return [(r.body["event"], str(r.body["principal"])) for r in records]


async def routed_pause(store: RunStore) -> None:
    run = await start(store)
    await paused(store, run, [approval("req_1", run, routing=FINANCE)])


async def test_votes_are_kept_in_order_and_leave_the_pause_open(store: RunStore) -> None:
    """A vote short of the quorum is recorded with its audit; the pause stays open; reads return the votes."""
    await routed_pause(store)
    first = await decide(store, "req_1", voter("bob"))
    assert first is not None and first.verdict.vote is not None and first.claim is None
    await decide(store, "req_1", voter("carol"))
    found = await store.get_request("req_1")
    assert found is not None and found.decision is None and found.pause_status == "open"
    assert [v.principal for v in found.votes] == ["bob", "carol"]
    assert [v.principal for v in (await store.votes(["req_1", "req_none"]))["req_1"]] == ["bob", "carol"]
    assert voters(await store.audit_records()) == [("vote", "bob"), ("vote", "carol")]


async def test_the_same_persons_second_vote_counts_nothing(store: RunStore) -> None:
    await routed_pause(store)
    outcomes = await at_once(*[lambda: decide(store, "req_1", voter("bob"))] * 3)
    assert sum(isinstance(o, Decided) and o.verdict.vote is not None for o in outcomes) == 1
    assert sum(isinstance(o, Decided) and o.verdict.vote is None for o in outcomes) == 2
    found = await store.get_request("req_1")
    assert found is not None and [v.principal for v in found.votes] == ["bob"]
    assert await store.count_audit() == 1


async def test_concurrent_voters_are_each_counted_and_resolve_once(store: RunStore) -> None:
    """Three approvers at the same moment on a quorum of three: every vote counts, one resolves and resumes."""
    await routed_pause(store)
    outcomes = await at_once(*[lambda who=who: decide(store, "req_1", voter(who)) for who in ("bob", "carol", "dave")])
    assert all(isinstance(o, Decided) and o.verdict.vote is not None for o in outcomes), outcomes
    assert sum(o.claim is not None for o in outcomes) == 1
    found = await store.get_request("req_1")
    assert found is not None and found.decision is not None and found.pause_status == "consumed"
    assert sorted(v.principal for v in found.votes) == ["bob", "carol", "dave"]
    assert await store.count_audit() == 4  # three votes and one decision


async def test_a_rejection_resolves_at_once(store: RunStore) -> None:
    await routed_pause(store)
    await decide(store, "req_1", voter("bob"))
    done = await decide(store, "req_1", voter("carol", Reject(reason="duplicate")))
    assert done is not None and done.claim is not None
    found = await store.get_request("req_1")
    assert found is not None and found.decision is not None and found.decision.decision == Reject(reason="duplicate")


async def test_the_inbox_lists_a_routed_request_to_its_deciders_only(store: RunStore) -> None:
    """Not to its thread's owner (who started the run), not to an approver for the agent: to the named approvers."""
    await routed_pause(store)

    async def listed(who: str, agents: list[str] | None = None) -> list[str]:
        query = InboxFilter(owner=who, approved_agents=agents or [], decider=who)
        return [r.request_id for r in (await store.inbox(query, now=NOW, limit=10)).requests]

    assert await listed("alice") == [] and await listed("erin", ["files"]) == []
    assert await listed("bob") == ["req_1"] and await listed("dave") == ["req_1"]
    every = await store.inbox(InboxFilter(), now=NOW, limit=10)
    assert [r.request_id for r in every.requests] == ["req_1"]


async def test_an_admin_is_listed_every_thread_but_a_routed_request_only_as_its_decider(store: RunStore) -> None:
    """`every_agent` (an approver for `*`) lists every owner's requests on any agent, as the admin may decide them;
    a routed request still only to its deciders."""
    await routed_pause(store)  # alice's, routed to finance
    bob = await start(store, "thr_2", "run_2", owner="bob", agent="ops")
    await paused(
        store, bob, [approval("req_ops", bob), approval("req_deep", bob, agent_path="ops/files")], pause_id="p2"
    )
    carol = await start(store, "thr_3", "run_3", owner="carol", agent="unconfigured")
    await paused(store, carol, [approval("req_any", carol)], pause_id="p3")

    async def listed(who: str, agent: str | None = None) -> list[str]:
        scope = InboxFilter(owner=who, approved_agents=[], every_agent=True, decider=who, agent=agent)
        return sorted(r.request_id for r in (await store.inbox(scope, now=NOW, limit=10)).requests)

    assert await listed("rev") == ["req_any", "req_deep", "req_ops"]
    assert await listed("bob") == ["req_1", "req_any", "req_deep", "req_ops"]  # bob is one of finance
    assert await listed("rev", agent="files") == ["req_deep"]


async def voted_events(store: RunStore) -> list[tuple[str, int | None]]:
    """The `request.voted` events of the outbox, as one webhook claims them: `(request, vote's position)`."""
    await store.fan_out_events(hooks=["hook"], now=NOW + 10, kinds=("request.voted",))
    claimed = await store.claim_deliveries(holder="me", now=NOW + 10, until=NOW + 60, hooks=["hook"])
    return sorted((d.request_id, d.step) for d in claimed if d.kind == "request.voted")


async def test_each_vote_writes_one_webhook_event_in_its_commit(store: RunStore) -> None:
    """A vote repeated or cast at once with others is one outbox event per counted vote, the last one's included."""
    await routed_pause(store)
    await at_once(*[lambda: decide(store, "req_1", voter("bob"))] * 3)
    assert await voted_events(store) == [("req_1", 0)]
    await at_once(*[lambda who=who: decide(store, "req_1", voter(who)) for who in ("carol", "dave")])
    assert await voted_events(store) == [("req_1", 1), ("req_1", 2)]
    found = await store.get_request("req_1")
    assert found is not None and found.decision is not None  # the third approval resolved it, and was announced


async def test_a_rejection_is_announced_as_a_vote_and_a_decision(store: RunStore) -> None:
    await routed_pause(store)
    await decide(store, "req_1", voter("bob"))
    await decide(store, "req_1", voter("carol", Reject(reason="too much")))
    await store.fan_out_events(hooks=["hook"], now=NOW + 10)
    claimed = await store.claim_deliveries(holder="me", now=NOW + 10, until=NOW + 60, hooks=["hook"])
    assert sorted((d.kind, d.step) for d in claimed if d.kind != "request.opened") == [
        ("request.decided", None),
        ("request.voted", 0),
        ("request.voted", 1),
    ]
