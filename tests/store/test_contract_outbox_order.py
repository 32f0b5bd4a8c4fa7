"""The `RunStore` contract for senders side by side (docs/guides/operations.md#webhooks), on memory, SQLite, PostgreSQL.

A sender keeps its claim while it works through a batch (`renew_deliveries`), and a request's later
event to a hook waits while another sender has an earlier one of it in flight: each receiver gets a
request's opening before its decision, whichever replicas send them.
"""

from __future__ import annotations

from sayso._store import RunStore

from .test_contract import NOW, approval, decision, paused, start


async def test_a_requests_decision_waits_while_another_sender_has_its_opening_in_flight(store: RunStore) -> None:
    run = await start(store)
    await paused(store, run, [approval("req_1", run)])
    await store.fan_out_events(hooks=["h"], now=NOW)
    [opening] = await store.claim_deliveries(holder="a", now=NOW, until=NOW + 30)
    await store.record_decision(decision("req_1"))
    await store.fan_out_events(hooks=["h"], now=NOW + 1)
    assert await store.claim_deliveries(holder="b", now=NOW + 1, until=NOW + 31) == []
    assert await store.settle_delivery(opening.delivery_id, holder="a", status="delivered", now=NOW + 2)
    [decided] = await store.claim_deliveries(holder="b", now=NOW + 2, until=NOW + 32)
    assert (opening.kind, decided.kind) == ("request.opened", "request.decided")


async def test_one_sender_claims_a_requests_events_together_in_order(store: RunStore) -> None:
    run = await start(store)
    await paused(store, run, [approval("req_1", run)])
    await store.record_decision(decision("req_1"))
    await store.fan_out_events(hooks=["h"], now=NOW)
    claimed = await store.claim_deliveries(holder="a", now=NOW, until=NOW + 30)
    assert [d.kind for d in claimed] == ["request.opened", "request.decided"]


async def test_a_renewed_claim_is_not_taken_over_and_a_lapsed_one_taken_over_is_not_renewed(store: RunStore) -> None:
    run = await start(store)
    await paused(store, run, [approval("req_1", run), approval("req_2", run)])
    await store.fan_out_events(hooks=["h"], now=NOW)
    first, second = await store.claim_deliveries(holder="a", now=NOW, until=NOW + 10)
    assert await store.renew_deliveries([first.delivery_id], holder="a", until=NOW + 40) == {first.delivery_id}
    [taken] = await store.claim_deliveries(holder="b", now=NOW + 20, until=NOW + 50)
    assert taken.delivery_id == second.delivery_id  # its claim lapsed: another sender has it now
    held = await store.renew_deliveries([first.delivery_id, second.delivery_id], holder="a", until=NOW + 60)
    assert held == {first.delivery_id}
    assert not await store.settle_delivery(second.delivery_id, holder="a", status="delivered", now=NOW + 21)
    assert await store.settle_delivery(second.delivery_id, holder="b", status="delivered", now=NOW + 21)
