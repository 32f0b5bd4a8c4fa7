"""Grants (list, revoke), the audit log (page, verify) and expiry over REST, in-process, with who may see what."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from sayso import Config, PrincipalConfig, load_config

from .conftest import EXAMPLE, InProcess, ServerFactory

PROBLEM = "application/problem+json"
ALICE = PrincipalConfig(name="alice", token="alice-token")
BOB = PrincipalConfig(name="bob", token="bob-token")
ADMIN = PrincipalConfig(name="admin", token="admin-token", approver_for=["*"])
OPS = PrincipalConfig(name="ops", token="ops-token", approver_for=["files"])


async def post(client: httpx.AsyncClient, path: str, body: dict[str, Any] | None = None) -> Any:
    """POST as JSON (even without a body, as every POST must be) and return the JSON body."""
    return (await client.post(path, json=body, headers={"Content-Type": "application/json"})).json()


async def get(client: httpx.AsyncClient, path: str, **params: Any) -> Any:
    """GET and return the JSON body."""
    return (await client.get(path, params=params)).json()


async def test_thread_grant_covers_the_next_call_until_revoked(server: InProcess, workdir: Path) -> None:
    """'Allow for this chat' lets the next delete in the folder run unasked; after revoking, it asks again."""
    async with server.client() as client:
        run = await post(client, "/v1/runs", {"message": "delete notes"})
        thread_id = run["thread_id"]
        approval = run["requests"][0]
        decided = await post(client, f"/v1/requests/{approval['id']}/decision", {"kind": "approve", "scope": "thread"})
        assert decided["run"]["output"] == "Deleted notes.txt."
        unasked = await post(client, "/v1/runs", {"message": "delete todo", "thread_id": thread_id})
        assert (unasked["status"], unasked["output"]) == ("completed", "Deleted todo.md.")
        elsewhere = await post(client, "/v1/runs", {"message": "delete report-2025"})
        assert elsewhere["status"] == "paused"  # a thread grant never reaches another thread
        [grant] = (await get(client, "/v1/grants"))["grants"]
        assert (grant["tool"], grant["scope"], grant["thread_id"], grant["principal"]) == (
            "delete_file",
            "thread",
            thread_id,
            "local",
        )
        assert (grant["subject_key"], grant["subject_label"]) == ("folder:.", "the sandbox's top folder")
        revoked = (await client.delete(f"/v1/grants/{grant['grant_id']}")).json()
        assert revoked["grant_id"] == grant["grant_id"] and revoked["revoked_at"] is not None
        assert (await get(client, "/v1/grants"))["grants"] == []
        again = await client.delete(f"/v1/grants/{grant['grant_id']}")
        assert (again.status_code, again.headers["content-type"]) == (404, PROBLEM)
        assert again.json()["grant_id"] == grant["grant_id"]
        (workdir / "sandbox" / "notes.txt").write_text("back\n")
        asks = await post(client, "/v1/runs", {"message": "delete notes", "thread_id": thread_id})
    assert asks["status"] == "paused"
    assert [r["tool_name"] for r in asks["requests"]] == ["delete_file"]
    assert not (workdir / "sandbox" / "todo.md").exists()


async def test_principals_see_and_revoke_only_their_own_grants(serve: ServerFactory) -> None:
    """A principal lists and revokes its own grants; others' are invisible (404); an admin sees and revokes all."""
    server = await serve(principals=[ALICE, BOB, ADMIN])
    alice, bob, admin = server.client("alice-token"), server.client("bob-token"), server.client("admin-token")
    async with alice, bob, admin:
        run = await post(alice, "/v1/runs", {"message": "delete notes"})
        await post(alice, f"/v1/requests/{run['requests'][0]['id']}/decision", {"kind": "approve", "scope": "always"})
        [grant] = (await get(alice, "/v1/grants"))["grants"]
        assert (grant["principal"], grant["scope"], grant["thread_id"]) == ("alice", "always", None)
        assert (await get(bob, "/v1/grants"))["grants"] == []
        hidden = await bob.delete(f"/v1/grants/{grant['grant_id']}")
        assert (hidden.status_code, hidden.json()["type"]) == (404, "https://sayso.dev/problems/not-found")
        assert [g["grant_id"] for g in (await get(admin, "/v1/grants"))["grants"]] == [grant["grant_id"]]
        assert (await admin.delete(f"/v1/grants/{grant['grant_id']}")).status_code == 200
        assert (await get(alice, "/v1/grants"))["grants"] == []
        [*_, last] = (await get(admin, "/v1/audit"))["records"]
    assert (last["body"]["event"], last["body"]["principal"]) == ("grant_revoked", "admin")


async def test_an_approver_sees_and_revokes_the_grant_they_gave_and_the_next_call_asks(serve: ServerFactory) -> None:
    """An approver who chose "Always allow" on alice's request can take it back: they list the grant they gave
    and revoke it, and alice's next delete asks again. Bob, who neither owns nor gave it, still sees nothing."""
    server = await serve(principals=[ALICE, BOB, OPS])
    alice, bob, ops = server.client("alice-token"), server.client("bob-token"), server.client("ops-token")
    async with alice, bob, ops:
        run = await post(alice, "/v1/runs", {"message": "delete notes"})
        await post(ops, f"/v1/requests/{run['requests'][0]['id']}/decision", {"kind": "approve", "scope": "always"})
        [grant] = (await get(ops, "/v1/grants"))["grants"]
        assert (grant["principal"], grant["granted_by"], grant["scope"]) == ("alice", "ops", "always")
        assert [g["grant_id"] for g in (await get(alice, "/v1/grants"))["grants"]] == [grant["grant_id"]]
        assert (await get(bob, "/v1/grants"))["grants"] == []
        assert (await bob.delete(f"/v1/grants/{grant['grant_id']}")).status_code == 404
        assert (await ops.delete(f"/v1/grants/{grant['grant_id']}")).status_code == 200
        assert (await get(alice, "/v1/grants"))["grants"] == []
        asks = await post(alice, "/v1/runs", {"message": "delete todo"})
    assert asks["status"] == "paused"


async def test_grants_come_a_page_at_a_time_newest_first_each_caller_seeing_only_theirs(
    serve: ServerFactory, workdir: Path
) -> None:
    """`GET /v1/grants` pages with `limit` and an opaque `cursor` (`next_cursor`, null on the last page), newest
    first: alice pages through the grants on her calls (one given by ops), ops through the one she gave, bob his
    own, an admin every one; another listing's cursor, or none sayso made, is a 422 problem."""
    server = await serve(principals=[ALICE, BOB, OPS, ADMIN])
    alice, bob = server.client("alice-token"), server.client("bob-token")
    ops, admin = server.client("ops-token"), server.client("admin-token")
    async with alice, bob, ops, admin:
        made: list[str] = []  # whose, oldest first
        for owner, decider in ((alice, alice), (alice, ops), (bob, bob), (alice, alice), (alice, alice)):
            (workdir / "sandbox").mkdir(exist_ok=True)
            (workdir / "sandbox" / "notes.txt").write_text("again\n")  # a thread grant: each thread asks anew
            run = await post(owner, "/v1/runs", {"message": "delete notes"})
            body = {"kind": "approve", "scope": "thread"}
            await post(decider, f"/v1/requests/{run['requests'][0]['id']}/decision", body)
            made.append("bob" if owner is bob else "alice")

        async def pages(client: httpx.AsyncClient, limit: int) -> list[tuple[str, str | None]]:
            seen: list[dict[str, Any]] = []
            page = await get(client, "/v1/grants", limit=limit)
            while True:
                assert len(page["grants"]) <= limit
                seen += page["grants"]
                if page["next_cursor"] is None:
                    return [(g["principal"], g["granted_by"]) for g in seen]
                page = await get(client, "/v1/grants", limit=limit, cursor=page["next_cursor"])

        everyone = await pages(admin, 2)
        first = await get(alice, "/v1/grants", limit=3)
        threads = (await get(alice, "/v1/threads", limit=1))["next_cursor"]
        refused = [await alice.get("/v1/grants", params={"cursor": raw}) for raw in ("not-a-cursor", threads)]
        assert [g["principal"] for g in (await get(alice, "/v1/grants"))["grants"]] == ["alice"] * 4
        assert (await pages(alice, 2), await pages(ops, 1), await pages(bob, 1)) == (
            [("alice", "alice"), ("alice", "alice"), ("alice", "ops"), ("alice", "alice")],
            [("alice", "ops")],
            [("bob", "bob")],
        )
        assert (await alice.get("/v1/grants", params={"limit": 201})).status_code == 422
    assert [principal for principal, _ in everyone] == made[::-1]
    assert len(first["grants"]) == 3 and first["next_cursor"] is not None
    for bad in refused:
        assert (bad.status_code, bad.headers["content-type"]) == (422, PROBLEM)
        assert "is not a cursor sayso handed out" in bad.json()["detail"]


async def test_only_approvers_read_the_audit_log_and_run_expiry(serve: ServerFactory) -> None:
    """The audit log and the expiry sweep are for approvers (403 for others); the owner still decides."""
    server = await serve(principals=[ALICE, OPS])
    async with server.client("alice-token") as alice, server.client("ops-token") as ops:
        run = await post(alice, "/v1/runs", {"message": "delete notes"})
        await post(alice, f"/v1/requests/{run['requests'][0]['id']}/decision", {"kind": "reject", "reason": "no"})
        for response in (
            await alice.get("/v1/audit"),
            await alice.get("/v1/audit/verify"),
            await alice.post("/v1/expire"),
        ):
            assert (response.status_code, response.headers["content-type"]) == (403, PROBLEM)
            assert response.json()["type"] == "https://sayso.dev/problems/forbidden"
        assert (await get(ops, "/v1/audit"))["total"] >= 1
        assert (await get(ops, "/v1/audit/verify"))["intact"] is True
        assert await post(ops, "/v1/expire") == {"runs": []}


async def test_approver_for_another_agent_may_not_decide(serve: ServerFactory) -> None:
    """An approver for another agent neither sees nor decides the request: deciding it is the 404 of a made-up id."""
    other = PrincipalConfig(name="other", token="other-token", approver_for=["reports"])
    server = await serve(principals=[ALICE, other])
    async with server.client("alice-token") as alice, server.client("other-token") as client:
        run = await post(alice, "/v1/runs", {"message": "delete notes"})
        request_id = run["requests"][0]["id"]
        assert (await get(client, "/v1/requests"))["requests"] == []
        refused = await client.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"})
        assert (refused.status_code, refused.json()["type"]) == (404, "https://sayso.dev/problems/not-found")
        assert refused.json()["request_id"] == request_id
        assert (await get(alice, f"/v1/requests/{request_id}"))["status"] == "open"


async def test_audit_log_pages_and_verify_finds_the_first_altered_record(server: InProcess, workdir: Path) -> None:
    """The log pages both ways with a cursor; verify says intact, then names the record edited in the database."""
    async with server.client() as client:
        for _ in range(2):
            run = await post(client, "/v1/runs", {"message": "delete report"})
            await post(client, f"/v1/requests/{run['requests'][0]['id']}/decision", {"kind": "skip"})
        whole = await get(client, "/v1/audit")
        total = whole["total"]
        assert total >= 2 and len(whole["records"]) == total and whole["next_cursor"] is None
        assert [r["seq"] for r in whole["records"]] == list(range(1, total + 1))
        assert whole["records"][1]["prev_hash"] == whole["records"][0]["hash"]
        first = await get(client, "/v1/audit", limit=1)
        assert ([r["seq"] for r in first["records"]], first["next_cursor"]) == ([1], 1)
        second = await get(client, "/v1/audit", limit=1, cursor=first["next_cursor"])
        assert [r["seq"] for r in second["records"]] == [2]
        newest = await get(client, "/v1/audit", order="desc", limit=1)
        assert [r["seq"] for r in newest["records"]] == [total]
        before = await get(client, "/v1/audit", order="desc", cursor=newest["next_cursor"])
        assert [r["seq"] for r in before["records"]] == list(range(total - 1, 0, -1))
        verified = await get(client, "/v1/audit/verify")
        assert (verified["intact"], verified["records"], verified["problem"]) == (True, total, None)
        assert verified["anchored"] is False and verified["note"].startswith("UNANCHORED")
        with sqlite3.connect(workdir / "sayso.db") as db:
            db.execute("UPDATE audit SET body = replace(body, 'skip', 'approve') WHERE seq = 2")
        broken = await get(client, "/v1/audit/verify")
    assert broken["intact"] is False
    assert broken["problem"] == {"seq": 2, "problem": "record 2 was altered after it was written"}


@pytest.fixture
def short_ttl_config(workdir: Path) -> Config:
    """The file-manager example whose approvals expire after a minute."""
    config = load_config(EXAMPLE)
    config.agents["files"].interrupt.ttl_seconds = 60
    return config


async def test_expire_closes_runs_whose_requests_expired(serve: ServerFactory, short_ttl_config: Config) -> None:
    """POST /v1/expire closes a run whose request passed its TTL; a late decision is then refused."""
    now = [1_000_000.0]
    server = await serve(config=short_ttl_config, clock=lambda: now[0])
    async with server.client() as client:
        run = await post(client, "/v1/runs", {"message": "delete notes"})
        request = run["requests"][0]
        assert request["expires_at"] == now[0] + 60
        now[0] += 59
        assert await post(client, "/v1/expire") == {"runs": []}  # not expired yet
        now[0] += 2
        [closed] = (await post(client, "/v1/expire"))["runs"]
        assert (closed["run_id"], closed["status"]) == (run["run_id"], "completed")
        assert (await get(client, f"/v1/requests/{request['id']}"))["decided_by"] == "expiry"
        late = await client.post(f"/v1/requests/{request['id']}/decision", json={"kind": "approve"})
        assert late.status_code == 410


async def test_an_expired_request_stays_expired_once_the_sweep_recorded_it(
    serve: ServerFactory, short_ttl_config: Config
) -> None:
    """`GET /v1/requests/{id}` says `expired` once the time ran out, and still after the expiry sweep recorded it
    (its decision then says what was recorded); a late decision is refused as expired, in the same words, both times."""
    now = [1_000_000.0]
    server = await serve(config=short_ttl_config, clock=lambda: now[0])
    async with server.client() as client:
        run = await post(client, "/v1/runs", {"message": "delete notes"})
        path = f"/v1/requests/{run['requests'][0]['id']}"
        now[0] += 61
        before = await get(client, path)
        late = await client.post(f"{path}/decision", json={"kind": "approve"})
        await post(client, "/v1/expire")
        after = await get(client, path)
        later = await client.post(f"{path}/decision", json={"kind": "approve"})
    assert (before["status"], before["decision"]) == ("expired", None)
    assert (after["status"], after["decision"]["kind"], after["decided_by"]) == ("expired", "expired", "expiry")
    assert (late.status_code, later.status_code) == (410, 410)
    assert later.json()["detail"] == late.json()["detail"]
