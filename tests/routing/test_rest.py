"""Routing over REST: who may decide, quorum progress, separation of duties as a 403, the inbox per person."""

from __future__ import annotations

import pytest

from sayso import Config, PrincipalConfig, Sayso
from sayso.server import create_app

from ..conftest import InProcess

SELF = "'alice' started this run and may not decide its own calls"


async def test_two_of_finance_approve_over_rest(server: InProcess) -> None:
    alice, bob, carol, dana = (server.client(f"{n}-token") for n in ("alice", "bob", "carol", "dana"))
    async with alice, bob, carol, dana:
        run = (await alice.post("/v1/runs", json={"message": "refund 250 to acme"})).json()
        [request] = run["requests"]
        assert request["approvers"]["named"] == ["finance"]
        assert [p["name"] for p in request["approvers"]["principals"]] == ["bob", "carol"]
        assert request["quorum"]["text"] == "0 of 2, waiting for finance" and request["scopes"] == ["once"]
        url = f"/v1/requests/{request['id']}/decision"
        refused = await alice.post(url, json={"kind": "approve"})
        assert refused.status_code == 403 and SELF in refused.json()["detail"]
        outsider = await dana.post(url, json={"kind": "approve"})
        assert outsider.status_code == 403 and "'dana' is not an approver" in outsider.json()["detail"]
        inboxes = {n: (await c.get("/v1/requests")).json()["requests"] for n, c in (("alice", alice), ("bob", bob))}
        assert inboxes["alice"] == [] and [r["id"] for r in inboxes["bob"]] == [request["id"]]
        first = (await bob.post(url, json={"kind": "approve"})).json()
        assert first["recorded"] is True and first["quorum"]["text"] == "1 of 2, waiting for finance"
        assert first["run"]["status"] == "paused" and first["run"]["requests"][0]["quorum"]["approved_by"] == ["bob"]
        again = (await bob.post(url, json={"kind": "approve"})).json()
        assert again["recorded"] is False and again["quorum"]["approved_by"] == ["bob"]
        listed = (await carol.get("/v1/requests")).json()["requests"]
        assert (
            listed[0]["quorum"]["votes"][0]["principal"] == "bob" and listed[0]["quorum"]["votes"][0]["via"] == "rest"
        )
        done = (await carol.post(url, json={"kind": "approve"}, headers={"Sayso-Via": "web"})).json()
        assert done["run"]["status"] == "completed" and done["run"]["output"] == "Refunded 250 to acme."
        state = (await bob.get(f"/v1/requests/{request['id']}")).json()
    assert state["status"] == "decided" and state["principal"] == "carol"
    assert [v["principal"] for v in state["request"]["quorum"]["votes"]] == ["bob", "carol"]
    assert server.openapi.checked > 0


async def test_each_vote_is_a_transcript_line_before_the_decision(server: InProcess) -> None:
    async with server.client("alice-token") as alice, server.client("bob-token") as bob:
        run = (await alice.post("/v1/runs", json={"message": "refund 250 to acme"})).json()
        url = f"/v1/requests/{run['requests'][0]['id']}/decision"
        await bob.post(url, json={"kind": "approve"})
        async with server.client("carol-token") as carol:
            await carol.post(url, json={"kind": "approve"}, headers={"Sayso-Via": "web"})
        thread = (await alice.get(f"/v1/threads/{run['thread_id']}")).json()
    lines = [e["decision"] for e in thread["transcript"] if e["role"] == "decision"]
    assert [(d["principal"], d["via"], d.get("quorum")) for d in lines] == [
        ("bob", "rest", "vote 1 of 2"),
        ("carol", "web", None),
    ]


async def test_a_token_two_principals_come_to_share_signs_in_as_neither(
    refunds: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading refuses a shared token; one that becomes shared before the server reads tokens names nobody."""
    named = [PrincipalConfig(name=n, token_env=f"{n.upper()}_TOKEN") for n in ("alice", "bob")]
    sayso = Sayso(refunds.model_copy(update={"principals": named}))
    monkeypatch.setenv("BOB_TOKEN", "alice-token")
    served = await InProcess(app=create_app(sayso, expire_every_seconds=None), sayso=sayso).start()
    try:
        async with served.client("alice-token") as shared:
            assert (await shared.get("/v1/me")).status_code == 401
    finally:
        await served.stop()
