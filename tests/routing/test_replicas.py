"""Quorum across two `sayso serve` replicas on one PostgreSQL, one of them killed (SIGKILL) between the votes.

A vote taken by the replica that dies is in the store: the other replica counts it (a repeat of it
changes nothing), the second approval resolves the request there, and the refund runs once.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from ..conftest import LiveServer
from ..test_replicas import pytestmark, store_url  # noqa: F401  (PostgreSQL only; the database fixture)

TOOLS = '''
import os

def refund(amount: int, to: str) -> str:
    """Pay `amount` back to `to`."""
    with open(os.environ["MARKER"], "a") as marker:
        marker.write(f"{amount} {to}\\n")
    return f"Refunded {amount} to {to}."
'''

CONFIG = """
models:
  demo: {scripted: script.yaml}
principals:
  - {name: alice, token: alice-token}
  - {name: bob, token: bob-token}
  - {name: carol, token: carol-token}
  - {name: auditor, token: auditor-token, approver_for: [payments]}
groups:
  finance: [alice, bob, carol]
agents:
  payments:
    model: demo
    tools: [replica_refunds:refund]
    interrupt:
      tools: [{name: refund, approvers: [finance], approvals_required: 2}]
"""

SCRIPT = """
name: refunds
rules:
  - {user: '^refund (?P<a>\\d+) to (?P<t>\\S+)$', call: refund, args: {amount: "{a}", to: "{t}"}}
  - {tool: refund, reply: "{result}"}
"""


def _post(server: LiveServer, token: str, path: str, body: dict[str, Any]) -> Any:
    with server.client(token) as client:
        response = client.post(path, json=body)
        assert response.status_code == 200, response.text
        return response.json()


def test_a_vote_survives_its_replica_and_the_quorum_completes_on_the_other(tmp_path: Path, store_url: str) -> None:  # noqa: F811
    (tmp_path / "replica_refunds.py").write_text(TOOLS)
    (tmp_path / "script.yaml").write_text(SCRIPT)
    (tmp_path / "sayso.yaml").write_text(CONFIG)
    marker = tmp_path / "marker"
    env = {**os.environ, "SAYSO_STORE": store_url, "MARKER": str(marker)}
    args = [str(tmp_path / "sayso.yaml"), "--recover-every", "0.5"]
    a, a_process = LiveServer.process(args, env=env)  # the first migrates the new database; then the second
    b, b_process = LiveServer.process(args, env=env)
    try:
        run = _post(a, "alice-token", "/v1/runs", {"message": "refund 250 to acme"})
        url = f"/v1/requests/{run['requests'][0]['id']}/decision"
        first = _post(b, "bob-token", url, {"kind": "approve"})
        assert first["recorded"] is True and first["quorum"]["text"] == "1 of 2, waiting for finance"
        b_process.send_signal(signal.SIGKILL)
        b_process.wait(30)
        again = _post(a, "bob-token", url, {"kind": "approve"})
        assert again["recorded"] is False and again["quorum"]["approved_by"] == ["bob"]
        done = _post(a, "carol-token", url, {"kind": "approve"})
        assert (done["run"]["status"], done["run"]["output"]) == ("completed", "Refunded 250 to acme.")
        with a.client("auditor-token") as client:
            audit = client.get("/v1/audit", params={"limit": 50}).json()
    finally:
        a.stop()
        b.stop()
    assert marker.read_text() == "250 acme\n"  # once, on the replica that counted the second approval
    votes = [r["body"] for r in audit["records"] if r["body"]["event"] == "vote"]
    assert [(v["principal"], v["progress"]) for v in votes] == [
        ("bob", "1 of 2, waiting for finance"),
        ("carol", "2 of 2"),
    ]
