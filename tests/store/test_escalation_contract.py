"""The store's escalation timers, the same on memory, SQLite and PostgreSQL: due steps, each fired once."""

from __future__ import annotations

import asyncio

from sayso._core.escalation import EscalationStep
from sayso._store import RunStore

from .test_contract import NOW, approval, decision, paused, start

STEPS = (EscalationStep(after_seconds=60, remind=True), EscalationStep(after_seconds=120, notify=("slack:#ops",)))


async def test_a_step_is_due_from_when_the_request_was_raised(store: RunStore) -> None:
    run = await start(store)
    await paused(store, run, [approval("req_1", run, escalation=STEPS), approval("req_2", run)])
    assert await store.due_escalations(NOW + 59) == []
    [due] = await store.due_escalations(NOW + 60)
    assert (due.request_id, due.step, due.due_at) == ("req_1", 0, NOW + 60)


async def test_a_step_fires_once_with_its_event_and_the_next_comes_due(store: RunStore) -> None:
    run = await start(store)
    await paused(store, run, [approval("req_1", run, escalation=STEPS)])
    fire = store.fire_escalation("req_1", step=0, next_at=NOW + 120, audit=[], now=NOW + 60)
    again = store.fire_escalation("req_1", step=0, next_at=NOW + 120, audit=[], now=NOW + 60)
    assert sorted(await asyncio.gather(fire, again)) == [False, True]
    assert await store.due_escalations(NOW + 119) == []
    [due] = await store.due_escalations(NOW + 120)
    assert due.step == 1
    assert await store.fire_escalation("req_1", step=1, next_at=None, audit=[], now=NOW + 120)
    assert await store.due_escalations(NOW + 10_000) == []
    await store.fan_out_events(hooks=["channels"], now=NOW + 121, kinds=("request.escalated",))
    claimed = await store.claim_deliveries(holder="me", now=NOW + 121, until=NOW + 200, hooks=["channels"])
    assert sorted((d.kind, d.step) for d in claimed) == [("request.escalated", 0), ("request.escalated", 1)]


async def test_a_decided_request_escalates_no_more(store: RunStore) -> None:
    run = await start(store)
    await paused(store, run, [approval("req_1", run, escalation=STEPS)])
    await store.add_decisions([decision("req_1")])
    assert await store.due_escalations(NOW + 60) == []
    assert not await store.fire_escalation("req_1", step=0, next_at=None, audit=[], now=NOW + 60)


async def test_a_step_due_after_the_request_expires_never_comes_due(store: RunStore) -> None:
    run = await start(store)
    await paused(store, run, [approval("req_1", run, escalation=STEPS[1:], expires_at=NOW + 100)])
    assert await store.due_escalations(NOW + 1_000) == []


async def test_a_step_that_adds_approvers_lists_the_request_for_them_in_its_commit(store: RunStore) -> None:
    """`add_approvers` widens the stored request and its deciders with the step: the inbox lists it for the
    added principal, `get_request` reads the wider routing, and a repeat of the step widens nothing."""
    from dataclasses import replace

    from sayso._core.routing import resolve
    from sayso._store import InboxFilter

    finance = resolve(["finance"], {"finance": ["bob", "carol"]}, approvals_required=2)
    run = await start(store)
    await paused(store, run, [approval("req_1", run, routing=finance, escalation=STEPS)])

    async def inbox(who: str) -> list[str]:
        query = InboxFilter(owner=who, approved_agents=[], decider=who)
        return [r.request_id for r in (await store.inbox(query, now=NOW, limit=10)).requests]

    assert await inbox("dana") == []
    state = await store.get_request("req_1")
    assert state is not None
    wider = finance.widened(["cfo"], resolve(["cfo"], {"cfo": ["dana"]}).approvers)
    widened = replace(state.request, routing=wider)
    assert await store.fire_escalation("req_1", step=0, next_at=None, audit=[], now=NOW + 60, widened=widened)
    assert not await store.fire_escalation("req_1", step=0, next_at=None, audit=[], now=NOW + 60, widened=widened)
    assert await inbox("dana") == ["req_1"] and await inbox("bob") == ["req_1"] and await inbox("eve") == []
    found = await store.get_request("req_1")
    assert found is not None and found.request.routing is not None
    assert found.request.routing.named == ("finance", "cfo")
    assert found.request.routing.deciders("alice") == ("bob", "carol", "dana")
