"""Grants (list, revoke), the audit log (page, verify) and expiry over REST, with who may see what."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from sayso import Config, PrincipalConfig, load_config

from .conftest import EXAMPLE, RunningServer, ServerFactory

PROBLEM = "application/problem+json"
ALICE = PrincipalConfig(name="alice", token="alice-token")
BOB = PrincipalConfig(name="bob", token="bob-token")
ADMIN = PrincipalConfig(name="admin", token="admin-token", approver_for=["*"])
OPS = PrincipalConfig(name="ops", token="ops-token", approver_for=["files"])


def test_thread_grant_covers_the_next_call_until_revoked(server: RunningServer, workdir: Path) -> None:
    """'Allow for this chat' lets the next delete in the folder run unasked; after revoking, it asks again."""
    with server.client() as client:
        run = client.post("/v1/runs", json={"message": "delete notes"}).json()
        thread_id = run["thread_id"]
        approval = run["requests"][0]
        decided = client.post(
            f"/v1/requests/{approval['id']}/decision", json={"kind": "approve", "scope": "thread"}
        ).json()
        assert decided["run"]["output"] == "Deleted notes.txt."
        unasked = client.post("/v1/runs", json={"message": "delete todo", "thread_id": thread_id}).json()
        assert (unasked["status"], unasked["output"]) == ("completed", "Deleted todo.md.")
        elsewhere = client.post("/v1/runs", json={"message": "delete report-2025"}).json()
        assert elsewhere["status"] == "paused"  # a thread grant never reaches another thread
        [grant] = client.get("/v1/grants").json()["grants"]
        assert (grant["tool"], grant["scope"], grant["thread_id"], grant["principal"]) == (
            "delete_file",
            "thread",
            thread_id,
            "local",
        )
        assert (grant["subject_key"], grant["subject_label"]) == ("folder:.", "the sandbox's top folder")
        revoked = client.delete(f"/v1/grants/{grant['grant_id']}").json()
        assert revoked["grant_id"] == grant["grant_id"] and revoked["revoked_at"] is not None
        assert client.get("/v1/grants").json()["grants"] == []
        again = client.delete(f"/v1/grants/{grant['grant_id']}")
        assert (again.status_code, again.headers["content-type"]) == (404, PROBLEM)
        assert again.json()["grant_id"] == grant["grant_id"]
        (workdir / "sandbox" / "notes.txt").write_text("back\n")
        asks = client.post("/v1/runs", json={"message": "delete notes", "thread_id": thread_id}).json()
    assert asks["status"] == "paused"
    assert [r["tool_name"] for r in asks["requests"]] == ["delete_file"]
    assert not (workdir / "sandbox" / "todo.md").exists()


def test_principals_see_and_revoke_only_their_own_grants(serve: ServerFactory) -> None:
    """A principal lists and revokes its own grants; others' are invisible (404); an admin sees and revokes all."""
    server = serve(principals=[ALICE, BOB, ADMIN])
    alice, bob, admin = server.client("alice-token"), server.client("bob-token"), server.client("admin-token")
    with alice, bob, admin:
        run = alice.post("/v1/runs", json={"message": "delete notes"}).json()
        alice.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json={"kind": "approve", "scope": "always"})
        [grant] = alice.get("/v1/grants").json()["grants"]
        assert (grant["principal"], grant["scope"], grant["thread_id"]) == ("alice", "always", None)
        assert bob.get("/v1/grants").json()["grants"] == []
        hidden = bob.delete(f"/v1/grants/{grant['grant_id']}")
        assert (hidden.status_code, hidden.json()["type"]) == (404, "https://sayso.dev/problems/not-found")
        assert [g["grant_id"] for g in admin.get("/v1/grants").json()["grants"]] == [grant["grant_id"]]
        assert admin.delete(f"/v1/grants/{grant['grant_id']}").status_code == 200
        assert alice.get("/v1/grants").json()["grants"] == []
        [*_, last] = admin.get("/v1/audit").json()["records"]
    assert (last["body"]["event"], last["body"]["principal"]) == ("grant_revoked", "admin")


def test_only_approvers_read_the_audit_log_and_run_expiry(serve: ServerFactory) -> None:
    """The audit log and the expiry sweep are for approvers (403 for others); the owner still decides."""
    server = serve(principals=[ALICE, OPS])
    with server.client("alice-token") as alice, server.client("ops-token") as ops:
        run = alice.post("/v1/runs", json={"message": "delete notes"}).json()
        alice.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json={"kind": "reject", "reason": "no"})
        for response in (alice.get("/v1/audit"), alice.get("/v1/audit/verify"), alice.post("/v1/expire")):
            assert (response.status_code, response.headers["content-type"]) == (403, PROBLEM)
            assert response.json()["type"] == "https://sayso.dev/problems/forbidden"
        assert ops.get("/v1/audit").json()["total"] >= 1
        assert ops.get("/v1/audit/verify").json()["intact"] is True
        assert ops.post("/v1/expire").json() == {"runs": []}


def test_approver_for_another_agent_may_not_decide(serve: ServerFactory) -> None:
    """An approver for another agent neither sees nor decides the request: the runtime's `NotAllowed` is a 403."""
    other = PrincipalConfig(name="other", token="other-token", approver_for=["reports"])
    server = serve(principals=[ALICE, other])
    with server.client("alice-token") as alice, server.client("other-token") as client:
        run = alice.post("/v1/runs", json={"message": "delete notes"}).json()
        request_id = run["requests"][0]["id"]
        assert client.get("/v1/requests").json()["requests"] == []
        refused = client.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"})
        assert (refused.status_code, refused.json()["type"]) == (403, "https://sayso.dev/problems/not-allowed")
        assert refused.json()["request_id"] == request_id
        assert alice.get(f"/v1/requests/{request_id}").json()["status"] == "open"


def test_audit_log_pages_and_verify_finds_the_first_altered_record(server: RunningServer, workdir: Path) -> None:
    """The log pages both ways with a cursor; verify says intact, then names the record edited in the database."""
    with server.client() as client:
        for _ in range(2):
            run = client.post("/v1/runs", json={"message": "delete report"}).json()
            client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json={"kind": "skip"})
        whole = client.get("/v1/audit").json()
        total = whole["total"]
        assert total >= 2 and len(whole["records"]) == total and whole["next_cursor"] is None
        assert [r["seq"] for r in whole["records"]] == list(range(1, total + 1))
        assert whole["records"][1]["prev_hash"] == whole["records"][0]["hash"]
        first = client.get("/v1/audit", params={"limit": 1}).json()
        assert ([r["seq"] for r in first["records"]], first["next_cursor"]) == ([1], 1)
        second = client.get("/v1/audit", params={"limit": 1, "cursor": first["next_cursor"]}).json()
        assert [r["seq"] for r in second["records"]] == [2]
        newest = client.get("/v1/audit", params={"order": "desc", "limit": 1}).json()
        assert [r["seq"] for r in newest["records"]] == [total]
        before = client.get("/v1/audit", params={"order": "desc", "cursor": newest["next_cursor"]}).json()
        assert [r["seq"] for r in before["records"]] == list(range(total - 1, 0, -1))
        assert client.get("/v1/audit/verify").json() == {"intact": True, "records": total, "problem": None}
        with sqlite3.connect(workdir / "sayso.db") as db:
            db.execute("UPDATE audit SET body = replace(body, 'skip', 'approve') WHERE seq = 2")
        broken = client.get("/v1/audit/verify").json()
    assert broken["intact"] is False
    assert broken["problem"] == {"seq": 2, "problem": "record 2 was altered after it was written"}


@pytest.fixture
def short_ttl_config(workdir: Path) -> Config:
    """The file-manager example whose approvals expire after half a second."""
    config = load_config(EXAMPLE)
    config.agents["files"].interrupt.ttl_seconds = 0.5
    return config


def test_expire_closes_runs_whose_requests_expired(serve: ServerFactory, short_ttl_config: Config) -> None:
    """POST /v1/expire closes a run whose request passed its TTL; a late decision is then refused."""
    server = serve(config=short_ttl_config)
    with server.client() as client:
        run = client.post("/v1/runs", json={"message": "delete notes"}).json()
        request = run["requests"][0]
        assert request["expires_at"] is not None
        assert client.post("/v1/expire").json() == {"runs": []}  # not expired yet
        time.sleep(max(0.0, request["expires_at"] - time.time()) + 0.1)
        [closed] = client.post("/v1/expire").json()["runs"]
        assert (closed["run_id"], closed["status"]) == (run["run_id"], "completed")
        assert client.get(f"/v1/requests/{request['id']}").json()["decided_by"] == "expiry"
        late = client.post(f"/v1/requests/{request['id']}/decision", json={"kind": "approve"})
        assert late.status_code in (409, 410)
