"""Numbers people ask for (issue 25, point 7): time to decide and the rates per tool, rule and approver.

Over Python, REST (`GET /v1/stats`) and the CLI (`sayso stats`); the web page is in tests/server/test_web_ui.py.
The runtime's clock is the test's, so the times to decide are exact.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from sayso import Approve, NotAllowed, Reject, Sayso
from sayso.cli import app as cli
from sayso.server import create_app

from ..conftest import InProcess, approvals
from .conftest import RULES, WriteConfig

T0 = 1_900_000_000.0

TIMEOUT = {
    "name": "refund",
    "rule": "refunds-huge",
    "when": "args.amount > 1000",
    "escalate": [{"after": "10m", "remind": True}],
    "on_timeout": {"after": "1h", "action": "reject", "reason": "too slow"},
}

PRINCIPALS = [
    {"name": "alice", "token": "a", "approver_for": ["shop"]},
    {"name": "bob", "token": "b", "approver_for": ["shop"]},
    {"name": "eve", "token": "e"},
]


async def _history(path: Path, now: list[float], t0: float = T0) -> None:
    """Four large refunds: alice approves one after 60 s and one after 300 s, bob rejects one after 120 s, and
    one huge refund escalates and times out."""
    async with Sayso.from_yaml(path, clock=lambda: now[0]) as app:
        asked = []
        for order, amount in (("o-1", 250), ("o-2", 300), ("o-3", 400), ("o-4", 5000)):
            now[0] = t0
            asked.append(approvals((await app.run(f"refund {order} {amount}", principal="eve")).requests)[0])
        now[0] = t0 + 60
        await app.decide(asked[0].request_id, Approve(), principal="alice")
        now[0] = t0 + 120
        await app.decide(asked[1].request_id, Reject(reason="no"), principal="bob")
        now[0] = t0 + 300
        await app.decide(asked[2].request_id, Approve(), principal="alice")
        now[0] = t0 + 700
        await app.expire()
        now[0] = t0 + 3700
        await app.expire()
        now[0] = t0 + 4000


def _config(write_config: WriteConfig) -> Path:
    return write_config([TIMEOUT, *RULES], principals=PRINCIPALS)


async def test_python_counts_rates_and_times_per_tool_rule_and_approver(write_config: WriteConfig) -> None:
    now = [T0]
    path = _config(write_config)
    await _history(path, now)
    async with Sayso.from_yaml(path, clock=lambda: now[0]) as app:
        found = await app.stats(window_seconds=86_400)
        none_yet = await app.stats(window_seconds=60)
        try:
            await app.stats(principal="eve")
        except NotAllowed as exc:
            refused = str(exc)
    overall = found.overall
    assert (overall.requests, overall.approved, overall.rejected, overall.expired, overall.escalated) == (4, 2, 2, 1, 1)
    assert (overall.approval_rate, overall.rejection_rate, overall.expiry_rate) == (0.5, 0.5, 0.25)
    assert (overall.decide_p50_seconds, overall.decide_p90_seconds) == (120, 300)
    assert set(found.by_tool) == {"refund"}
    assert found.by_rule["refunds-large"].requests == 3 and found.by_rule["refunds-huge"].escalation_rate == 1.0
    alice, bob = found.by_approver["alice"], found.by_approver["bob"]
    assert (alice.requests, alice.approved, alice.decide_p50_seconds, alice.decide_p90_seconds) == (2, 2, 60, 300)
    assert (bob.requests, bob.rejected, bob.rejection_rate) == (1, 1, 1.0)
    assert none_yet.overall.requests == 0 and none_yet.overall.approval_rate is None
    assert "not an approver" in refused


async def test_rest_serves_the_same_numbers_to_approvers_only(write_config: WriteConfig) -> None:
    now = [T0]
    path = _config(write_config)
    await _history(path, now)
    runtime = Sayso.from_yaml(path, clock=lambda: now[0])
    served = await InProcess(app=create_app(runtime), sayso=runtime).start()
    try:
        async with served.client("a") as alice, served.client("e") as eve:
            week = await alice.get("/v1/stats", params={"window": "7d"})
            bad = await alice.get("/v1/stats", params={"window": "soon"})
            refused = await eve.get("/v1/stats")
    finally:
        await served.stop()
    assert week.status_code == 200, week.text
    body: dict[str, Any] = week.json()
    assert body["window_seconds"] == 7 * 86_400
    assert body["overall"]["requests"] == 4 and body["overall"]["decide_p90_seconds"] == 300
    assert body["by_approver"]["bob"]["rejected"] == 1
    assert bad.status_code == 422 and "not a duration" in bad.text
    assert refused.status_code == 403


def test_the_cli_prints_the_tables_and_json(write_config: WriteConfig) -> None:
    t0 = time.time() - 86_400  # `sayso stats` reads the real clock: the history happened yesterday
    path = _config(write_config)
    asyncio.run(_history(path, [t0], t0))
    runner = CliRunner(env={"COLUMNS": "200"})
    shown = runner.invoke(cli, ["stats", str(path), "--window", "1000d"])
    assert shown.exit_code == 0, shown.output
    assert "per approver" in shown.output and "alice" in shown.output and "refunds-huge" in shown.output
    as_json = runner.invoke(cli, ["stats", str(path), "--window", "1000d", "--json"])
    assert json.loads(as_json.output)["overall"]["approved"] == 2
    bad = runner.invoke(cli, ["stats", str(path), "--window", "later"])
    assert bad.exit_code == 2


async def test_requests_closed_unanswered_are_not_anyones_decisions(write_config: WriteConfig) -> None:
    """A request skipped because its run went on without it (alice forces the resume, the owner sends a new
    message, the owner cancels) counts as closed: not decided, not in the time to decide, not per approver."""
    now = [T0]
    path = _config(write_config)
    async with Sayso.from_yaml(path, clock=lambda: now[0]) as app:
        paused = [await app.run(f"refund o-{n} 250", principal="eve") for n in range(4)]
        now[0] = T0 + 30
        await app.decide(approvals(paused[0].requests)[0].request_id, Approve(), principal="alice")
        now[0] = T0 + 500
        await app.resume(paused[1].run_id, force=True, principal="alice")
        await app.cancel(paused[2].run_id, principal="eve")
        await app.run("refund o-9 20", principal="eve", thread_id=paused[3].thread_id)
        found = await app.stats(window_seconds=86_400)
    overall, alice = found.overall, found.by_approver["alice"]
    assert (overall.requests, overall.decided, overall.closed, overall.open, overall.approved) == (4, 1, 3, 0, 1)
    assert (overall.decide_p50_seconds, overall.decide_p90_seconds) == (30, 30)
    assert (alice.requests, alice.decided, alice.closed, alice.decide_p90_seconds) == (1, 1, 0, 30)
    assert set(found.by_approver) == {"alice"}
