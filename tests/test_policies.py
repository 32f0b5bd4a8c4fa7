"""Policies (docs/concepts/decisions.md, docs/guides/operations.md#the-audit-log): subjects, remembered approvals,
principals, redaction, expiry and the audit chain."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Tool
from pydantic_ai.messages import ModelRequest, ToolReturnPart

from sayso import (
    Approve,
    InvalidDecision,
    NotFound,
    PrincipalConfig,
    RequestExpired,
    RequestNotFound,
    Sayso,
    request_json,
)
from sayso import tool as sayso_tool
from sayso._core.grants import Grant

from .conftest import MakeApp, approvals
from .models import commands, tool_model
from .tools import delete_file_with_password, deleted

AGENT = "files"

DELETE_FILE = Tool(delete_file_with_password, name="delete_file")
"""`delete_file` with a `password` argument, which the config redacts."""


def folder(tool_name: str, tool_input: dict[str, Any]) -> dict[str, str] | None:
    """Deletes in `tmp/` need no approval; otherwise a decision covers the file's folder."""
    name = str(tool_input["name"])
    parent = name.rsplit("/", 1)[0] if "/" in name else "."
    if parent == "tmp":
        return None
    return {"key": f"folder:{parent}", "label": f"folder {parent}/"}


def route(said: str) -> tuple[str, dict[str, Any]]:
    return "delete_file", {"name": said.removeprefix("delete "), "password": "hunter2"}


@pytest.fixture
def now() -> list[float]:
    """The test's clock: the current time unless a test moves it."""
    return [time.time()]


@pytest.fixture
def app(make_app: MakeApp, tmp_path: Path, now: list[float]) -> Sayso:
    (tmp_path / "subjects_for_tests.py").write_text("from tests.test_policies import folder\n")
    agent = {
        "model": "m",
        "tools": [DELETE_FILE],
        "redact": ["password"],
        "interrupt": {
            "tools": [{"name": "delete_file", "remember": "always", "subject": "subjects_for_tests:folder"}],
            "ttl_seconds": 60,
        },
    }
    runtime = make_app(
        {AGENT: agent, "other": dict(agent)},
        model=tool_model(route),
        clock=lambda: now[0],
    )
    runtime.config.principals = [
        PrincipalConfig(name="alice"),
        PrincipalConfig(name="reviewer", approver_for=["files"]),
        PrincipalConfig(name="mallory"),
    ]
    return runtime


async def test_subject_narrows_the_request_and_none_needs_no_approval(app: Sayso) -> None:
    """A subject hook labels what a request covers, and a call for which it returns None runs without approval."""
    async with app:
        free = await app.run("delete tmp/scratch.txt", principal="alice")
        paused = await app.run("delete reports/q1.txt", principal="alice")
    assert free.status == "completed" and deleted() == ["tmp/scratch.txt"]
    [request] = approvals(paused.requests)
    assert request.subject is not None and request.subject.label == "folder reports/"
    assert request.scopes == ("once", "thread", "always")


async def test_thread_grant_covers_the_same_subject_on_the_same_thread_only(app: Sayso) -> None:
    """A thread-scoped approval lets later calls on that subject and thread run unasked, recorded as by permission,
    but no other subject or thread."""
    async with app:
        first = await app.run("delete reports/q1.txt", principal="alice")
        await app.decide(first.requests[0].request_id, Approve(scope="thread"), principal="alice")
        same = await app.run("delete reports/q2.txt", thread_id=first.thread_id, principal="alice")
        other_folder = await app.run("delete photos/a.jpg", thread_id=same.thread_id, principal="alice")
        other_thread = await app.run("delete reports/q3.txt", principal="alice")
        history = await app.store.load_messages(first.thread_id)
    assert same.status == "completed"
    assert other_folder.status == "paused"
    assert other_thread.status == "paused"
    assert deleted() == ["reports/q1.txt", "reports/q2.txt"]
    records = [
        p.metadata["approval"]
        for m in history
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.metadata
    ]
    assert [(r["by"], r.get("scope")) for r in records] == [("person", "thread"), ("permission", "thread")]


async def test_always_grant_never_covers_another_principal_and_revoking_asks_again(app: Sayso) -> None:
    """An always grant covers its principal's later calls on that subject, not anyone else's; revoked, it asks again."""
    async with app:
        first = await app.run("delete reports/q1.txt", principal="alice")
        await app.decide(first.requests[0].request_id, Approve(scope="always"), principal="alice")
        [grant] = await app.grants()
        assert (grant.tool, grant.subject_key, grant.scope, grant.principal) == (
            "delete_file",
            "folder:reports",
            "always",
            "alice",
        )
        covered = await app.run("delete reports/q2.txt", principal="alice")
        someone_else = await app.run("delete reports/q3.txt", principal="mallory")
        await app.revoke_grant(grant.grant_id)
        after_revoke = await app.run("delete reports/q4.txt", principal="alice")
        with pytest.raises(NotFound):
            await app.revoke_grant(grant.grant_id)
    assert covered.status == "completed"
    assert someone_else.status == "paused"
    assert after_revoke.status == "paused"
    assert deleted() == ["reports/q1.txt", "reports/q2.txt"]


async def test_a_grant_applies_only_to_the_agent_it_was_given_for(app: Sayso) -> None:
    """An approver for `files` who always-allows alice's call lets her later `files` calls through, never `other`'s."""
    async with app:
        first = await app.run("delete reports/q1.txt", principal="alice")
        await app.decide(first.requests[0].request_id, Approve(scope="always"), principal="reviewer")
        [grant] = await app.grants()
        through_files = await app.run("delete reports/q2.txt", principal="alice")
        through_other = await app.run("delete reports/q3.txt", agent="other", principal="alice")
    assert (grant.principal, grant.agent, grant.granted_by) == ("alice", AGENT, "reviewer")
    assert through_files.status == "completed"
    assert through_other.status == "paused"
    assert deleted() == ["reports/q1.txt", "reports/q2.txt"]


async def test_a_grant_reaches_no_further_than_its_giver_may_still_decide(app: Sayso) -> None:
    """A grant given by an approver stops covering calls once the giver is no longer an approver for that agent."""
    async with app:
        first = await app.run("delete reports/q1.txt", principal="alice")
        await app.decide(first.requests[0].request_id, Approve(scope="always"), principal="reviewer")
        covered = await app.run("delete reports/q2.txt", principal="alice")
        app.config.principals[1] = PrincipalConfig(name="reviewer", approver_for=["other"])
        asks_again = await app.run("delete reports/q3.txt", principal="alice")
    assert covered.status == "completed"
    assert asks_again.status == "paused"


async def test_external_host_grants_are_honoured_and_none_stored(app: Sayso) -> None:
    """Host-kept grants cover runs of their agent without being stored; other agents and runs given none ask."""
    external = Grant(
        grant_id="ext-1",
        tool="delete_file",
        subject_key="folder:reports",
        subject_label="folder reports/",
        scope="always",
        principal="alice",
        agent=AGENT,
        thread_id=None,
        created_at=0,
    )
    async with app:
        covered = await app.run("delete reports/q1.txt", principal="alice", grants=[external])
        paused = await app.run("delete reports/q2.txt", principal="alice", grants=[])
        elsewhere = await app.run("delete reports/q3.txt", agent="other", principal="alice", grants=[external])
        assert await app.grants() == []
    assert covered.status == "completed"
    assert paused.status == "paused"
    assert elsewhere.status == "paused"


async def test_only_the_owner_or_an_approver_decides(app: Sayso) -> None:
    """Only the principal who started the run or an approver for the agent decides; to anyone else it is not there."""
    async with app:
        paused = await app.run("delete reports/q1.txt", principal="alice")
        request_id = paused.requests[0].request_id
        with pytest.raises(RequestNotFound):
            await app.decide(request_id, Approve(), principal="mallory")
        assert deleted() == []
        done = await app.decide(request_id, Approve(), principal="reviewer")
    assert done.run.status == "completed"


async def test_an_edit_must_keep_the_subject(app: Sayso) -> None:
    """An edit that moves the call to another subject is refused, while one within the same subject runs."""
    async with app:
        paused = await app.run("delete reports/q1.txt", principal="alice")
        request_id = paused.requests[0].request_id
        with pytest.raises(InvalidDecision, match="the edit changes what the approval covers"):
            await app.decide(request_id, Approve(edited_args={"name": "photos/a.jpg"}), principal="alice")
        done = await app.decide(request_id, Approve(edited_args={"name": "reports/q0.txt"}), principal="alice")
    assert done.run.output == "model read: deleted reports/q0.txt"


async def test_secret_fields_are_redacted_wherever_shown(app: Sayso) -> None:
    """Fields listed under `redact` are masked in a request as shown, so the secret value never appears in it."""
    async with app:
        paused = await app.run("delete reports/q1.txt", principal="alice")
    shown = request_json(paused.requests[0])
    assert shown["args"] == {"name": "reports/q1.txt", "password": "«redacted»"}
    assert "hunter2" not in str(shown)


async def test_a_late_decision_is_refused_and_the_sweep_closes_the_run(
    make_app: MakeApp, app: Sayso, now: list[float]
) -> None:
    """A decision after the request's time-to-live is refused, and the expiry sweep closes the run once, telling the
    model when it expired."""
    now[0] = 1000.0
    async with app:
        paused = await app.run("delete reports/q1.txt", principal="alice")
        assert paused.requests[0].expires_at == 1060.0
        now[0] = 1061.0
        with pytest.raises(RequestExpired):
            await app.decide(paused.requests[0].request_id, Approve(), principal="alice")
        [closed] = await app.expire()
        assert await app.expire() == []
    assert closed.run_id == paused.run_id
    assert closed.output == "model read: Expired: no decision before 1970-01-01 00:17:40 UTC"
    assert deleted() == []


async def test_every_decision_is_audited_and_tampering_is_detected(app: Sayso, tmp_path: Path) -> None:
    """Each decision and execution is appended to the audit chain with full arguments, and verification names an
    altered, reordered or missing record."""
    async with app:
        for n in range(3):
            paused = await app.run(f"delete reports/q{n}.txt", principal="alice")
            await app.decide(paused.requests[0].request_id, Approve(), principal="alice")
        records = await app.audit_log()
        assert [r.body["event"] for r in records] == ["decision", "executed"] * 3
        assert records[0].body["proposed_args"] == {"name": "reports/q0.txt", "password": "hunter2"}
        assert records[0].body["principal"] == "alice"
        assert records[1].body["executed_args"] == {"name": "reports/q0.txt", "password": "hunter2"}
        assert await app.verify_audit() is None

        db = tmp_path / "sayso.db"

        def tamper(*statements: str) -> None:
            with sqlite3.connect(db) as conn:
                for statement in statements:
                    conn.execute(statement)

        # The whole path, not 'q1' alone: a random id in the body may hold 'q1' or 'qX' too, and undoing would not undo.
        tamper("UPDATE audit SET body = replace(body, 'reports/q1.txt', 'reports/qX.txt') WHERE seq = 3")
        problem = await app.verify_audit()
        assert problem is not None and problem.seq == 3 and "altered" in problem.problem
        tamper("UPDATE audit SET body = replace(body, 'reports/qX.txt', 'reports/q1.txt') WHERE seq = 3")
        assert await app.verify_audit() is None
        tamper(
            "UPDATE audit SET seq = -1 WHERE seq = 4",
            "UPDATE audit SET seq = 4 WHERE seq = 5",
            "UPDATE audit SET seq = 5 WHERE seq = -1",
        )
        problem = await app.verify_audit()
        assert problem is not None and problem.seq == 4 and "does not follow" in problem.problem
        tamper(
            "UPDATE audit SET seq = -1 WHERE seq = 4",
            "UPDATE audit SET seq = 4 WHERE seq = 5",
            "UPDATE audit SET seq = 5 WHERE seq = -1",
        )
        tamper("DELETE FROM audit WHERE seq = 2")
        problem = await app.verify_audit()
        assert problem is not None and problem.seq == 2 and "missing" in problem.problem


@sayso_tool(read_only=True)
def peek(name: str) -> str:
    """Look at a file."""
    return f"peeked {name}"


async def test_read_only_tools_run_freely_when_the_policy_says_so(make_app: MakeApp) -> None:
    """With `skip_read_only` read-only tools run unasked while others still pause; without it they ask too."""
    model = commands(peek="peek", delete="delete_file")
    agents = {
        "files": {"model": "m", "tools": [peek, DELETE_FILE], "interrupt": {"tools": ["*"], "skip_read_only": True}}
    }
    strict = {"files": {"model": "m", "tools": [peek, DELETE_FILE], "interrupt": {"tools": ["*"]}}}
    async with make_app(agents, model=model) as app:
        assert (await app.run("peek a")).output == "peeked a"
        assert (await app.run("delete a")).status == "paused"
    async with make_app(strict, model=model) as app:
        assert (await app.run("peek a")).status == "paused", "without skip_read_only a read-only tool still asks"
