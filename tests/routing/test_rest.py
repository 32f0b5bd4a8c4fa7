"""Routing over REST: who may decide, quorum progress, separation of duties as a 403, the inbox per person."""

from __future__ import annotations

from typing import Any

import pytest

from sayso import Config, PrincipalConfig, Sayso
from sayso._runtime import rfc3339
from sayso.server import create_app

from ..conftest import InProcess
from ..models import tool_model
from ..protocols.conftest import example_config

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
        assert outsider.status_code == 404 and "finance" not in outsider.text
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


async def test_an_outsider_deciding_is_told_what_a_made_up_id_is(server: InProcess) -> None:
    """dana may not see finance's request: deciding it answers the 404 of an id that does not exist, naming no
    approver; alice, who sees it (her own run) but may not approve it, gets the 403 with the reason."""
    async with server.client("alice-token") as alice, server.client("dana-token") as dana:
        run = (await alice.post("/v1/runs", json={"message": "refund 250 to acme"})).json()
        request_id = run["requests"][0]["id"]
        made_up = await dana.post("/v1/requests/req_made_up/decision", json={"kind": "approve"})
        for kind in ("approve", "reject"):
            outsider = await dana.post(f"/v1/requests/{request_id}/decision", json={"kind": kind})
            assert outsider.status_code == 404 == made_up.status_code
            assert outsider.json()["detail"] == made_up.json()["detail"].replace("req_made_up", request_id)
            assert "finance" not in outsider.text
        assert (await dana.get(f"/v1/requests/{request_id}")).status_code == 404
        own = await alice.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"})
        assert own.status_code == 403 and SELF in own.json()["detail"]


async def test_vote_lines_count_approvals_of_the_required_ones(server: InProcess) -> None:
    """bob approves, carol edits (the count starts again on her arguments), bob approves them: the transcript's
    vote lines say 1 of 2 each, as the quorum did, not how many votes were cast (it said 1 of 3, 2 of 3)."""
    async with server.client("alice-token") as alice, server.client("bob-token") as bob:
        run = (await alice.post("/v1/runs", json={"message": "refund 250 to acme"})).json()
        url = f"/v1/requests/{run['requests'][0]['id']}/decision"
        await bob.post(url, json={"kind": "approve"})
        async with server.client("carol-token") as carol:
            edit = {"kind": "approve", "edited_args": {"amount": 200, "to": "acme"}}
            assert (await carol.post(url, json=edit)).json()["quorum"]["text"].startswith("1 of 2 (edited arguments)")
        assert (await bob.post(url, json={"kind": "approve"})).json()["run"]["status"] == "completed"
        thread = (await alice.get(f"/v1/threads/{run['thread_id']}")).json()
    lines = [e["decision"] for e in thread["transcript"] if e["role"] == "decision"]
    assert [(d["principal"], d.get("quorum")) for d in lines] == [
        ("bob", "vote 1 of 2"),
        ("carol", "vote 1 of 2 (an edit)"),
        ("bob", None),
    ]


async def test_a_thread_shows_each_reader_only_the_requests_they_may_see() -> None:
    """Alice's run waits on a deletion only bob approves and on her own question. Bob sees her thread while he may
    decide the deletion, and in it only the deletion: her question, which he may not read (`GET /v1/requests/{id}`
    is a 404), is in neither the thread's nor the run's open requests, nor in what his decision answers. Alice sees
    both."""

    def route(said: str) -> Any:
        return [("delete_file", {"name": "notes.txt"}), ("ask_user", {"questions": [{"question": "Why?"}]})]

    agents = example_config().model_dump()["agents"]
    agents["files"]["interrupt"]["tools"] = [{"name": "delete_file", "approvers": ["bob"]}]
    principals = [{"name": n, "token": f"{n}-token"} for n in ("alice", "bob")]
    sayso = Sayso(
        example_config(principals=principals, agents=agents),
        models={"demo": tool_model(route, read="Done: {results}")},
    )
    served = await InProcess(app=create_app(sayso, expire_every_seconds=None), sayso=sayso).start()
    try:
        async with served.client("alice-token") as alice, served.client("bob-token") as bob:
            run = (await alice.post("/v1/runs", json={"message": "delete notes"})).json()
            ids = {r["kind"]: r["id"] for r in run["requests"]}
            assert set(ids) == {"approval", "question"}
            assert (await bob.get(f"/v1/requests/{ids['question']}")).status_code == 404
            for path in (f"/v1/threads/{run['thread_id']}", f"/v1/runs/{run['run_id']}"):
                shown = (await bob.get(path)).json()
                listed = (shown["active_run"] if "active_run" in shown else shown)["requests"]
                assert [r["id"] for r in listed] == [ids["approval"]], path
                owners = (await alice.get(path)).json()
                listed = (owners["active_run"] if "active_run" in owners else owners)["requests"]
                assert sorted(r["id"] for r in listed) == sorted(ids.values()), path
            decided = (await bob.post(f"/v1/requests/{ids['approval']}/decision", json={"kind": "approve"})).json()
            assert decided["run"]["status"] == "paused" and decided["run"]["requests"] == []
    finally:
        await served.stop()


async def test_every_audit_record_says_when_it_happened_each_vote_too(refunds: Config) -> None:
    """bob's vote, carol's deciding one, the call run: each audit record has its time (`at`), a vote's the moment
    it was cast, as its body says (`voted_at`), not only the decisions and the other events."""
    auditor = PrincipalConfig(name="rev", token="rev-token", approver_for=["*"])
    sayso = Sayso(refunds.model_copy(update={"principals": [*refunds.principals, auditor]}))
    served = await InProcess(app=create_app(sayso, expire_every_seconds=None), sayso=sayso).start()
    try:
        async with served.client("alice-token") as alice, served.client("bob-token") as bob:
            run = (await alice.post("/v1/runs", json={"message": "refund 250 to acme"})).json()
            url = f"/v1/requests/{run['requests'][0]['id']}/decision"
            await bob.post(url, json={"kind": "approve"})
            async with served.client("carol-token") as carol:
                await carol.post(url, json={"kind": "approve"})
            async with served.client("rev-token") as rev:
                records = (await rev.get("/v1/audit")).json()["records"]
    finally:
        await served.stop()
    assert [r["body"]["event"] for r in records] == ["vote", "vote", "decision", "executed"]
    assert all(r["at"] is not None and r["at"].endswith("Z") for r in records), records
    assert records[0]["at"] == rfc3339(records[0]["body"]["voted_at"])
