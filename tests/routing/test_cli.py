"""Routing on the command line: `sayso inbox --principal` lists what that person may decide, with the vote's
progress; `sayso decide` says where the vote stands, and refuses the run's starter with exit code 4."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sayso import Config
from sayso.cli import app

from .conftest import REFUNDS

runner = CliRunner()


def sayso(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, [*args], catch_exceptions=False)
    return result.exit_code, result.output


def test_the_inbox_and_decide_show_the_vote(refunds: Config) -> None:
    config = str(REFUNDS)
    code, out = sayso("run", config, "refund 250 to acme", "--principal", "alice", "--json")
    request_id = json.loads(out)["requests"][0]["id"]
    assert code == 0
    assert "no open requests" in sayso("inbox", config, "--principal", "alice")[1]
    code, listed = sayso("inbox", config, "--principal", "bob")
    assert code == 0 and "decided by: finance (bob, carol)" in listed
    assert "approvals: 0 of 2, waiting for finance" in listed and "not by alice, who started the run" in listed
    code, refused = sayso("decide", config, request_id, "approve", "--principal", "alice")
    assert code == 4 and "may not decide its own calls" in refused
    code, voted = sayso("decide", config, request_id, "approve", "--principal", "bob")
    assert code == 0 and "approvals: 1 of 2, waiting for finance" in voted
    code, done = sayso("decide", config, request_id, "approve", "--principal", "carol")
    assert code == 0 and "Refunded 250 to acme." in done
