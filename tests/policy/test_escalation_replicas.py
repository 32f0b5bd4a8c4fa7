"""Escalation across two `sayso serve` replicas on one PostgreSQL, one of them killed (SIGKILL) midway.

Both replicas sweep every 0.2 s while the first step comes due: it fires once. The first replica is then
killed; the survivor fires the second step and the timeout, whose reason the model reads. Real time moves
here (the servers' own clocks), so the steps are seconds apart; the test waits for what must happen.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..conftest import LiveServer
from ..store.conftest import DSN
from ..test_replicas import store_url as store_url
from .conftest import SCRIPT

pytestmark = pytest.mark.skipif(DSN is None, reason="TEST_POSTGRES_DSN is not set (scripts/test sets it)")

RULE = {
    "name": "refund",
    "rule": "refunds-large",
    "when": "args.amount > 100",
    "approvers": ["finance"],
    "escalate": [{"after": 1, "remind": True}, {"after": 3, "notify": ["webhook:finance"], "add_approvers": ["cfo"]}],
    "on_timeout": {"after": 5, "action": "reject", "reason": "nobody approved in time"},
}


def _audit(server: LiveServer) -> list[dict[str, Any]]:
    with server.client() as client:
        return [r["body"] for r in client.get("/v1/audit", params={"limit": 500}).json()["records"]]


def _until(what: Callable[[], bool], problem: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, problem
        time.sleep(0.1)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
    config = {
        "models": {"m": {"scripted": "script.yaml"}},
        "agents": {"shop": {"model": "m", "tools": ["tests.policy.tools:refund"], "interrupt": {"tools": [RULE]}}},
        "webhooks": [{"name": "finance", "url": "http://127.0.0.1:9/finance", "secret": "s3cret"}],
    }
    (tmp_path / "sayso.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    yield tmp_path


def test_each_step_fires_once_across_replicas_and_the_survivor_finishes(project: Path, store_url: str) -> None:
    env = {**os.environ, "SAYSO_STORE": store_url, "PYTHONPATH": str(Path(__file__).parents[2])}
    args = [str(project / "sayso.yaml"), "--expire-every", "0.2", "--recover-every", "0.5"]
    with ThreadPoolExecutor(2) as starting:
        futures = [starting.submit(LiveServer.process, args, env=env) for _ in range(2)]
    (a, a_process), (b, _) = (f.result() for f in futures)
    try:
        with a.client() as client:
            run = client.post("/v1/runs", json={"message": "refund o-1 250"}).json()
        assert run["status"] == "paused", run
        assert run["requests"][0]["why"] == "asked because args.amount > 100 (rule refunds-large)"

        def fired() -> list[int]:
            return [e["step"] for e in _audit(b) if e["event"] == "escalated"]

        _until(lambda: fired() == [0], "the first step never fired")
        a_process.send_signal(signal.SIGKILL)
        a_process.wait(10)
        _until(lambda: fired() == [0, 1], "the second step never fired on the survivor")

        def finished() -> dict[str, Any]:
            with b.client() as client:
                found: dict[str, Any] = client.get(f"/v1/runs/{run['run_id']}").json()
                return found

        _until(lambda: finished()["status"] == "completed", "the timeout never closed the run")
        assert finished()["output"] == "model read: Declined: nobody approved in time"
        steps = [e for e in _audit(b) if e["event"] == "escalated"]
        assert [(e["step"], e["remind"], e["notify"]) for e in steps] == [
            (0, True, []),
            (1, False, ["webhook:finance"]),
        ]
        decisions = [e for e in _audit(b) if e["event"] == "decision"]
        assert [(d["decision"], d["by"]) for d in decisions] == [("reject", "expiry")]
    finally:
        for process in (a_process,):
            if process.poll() is None:
                process.kill()
        b.stop()
