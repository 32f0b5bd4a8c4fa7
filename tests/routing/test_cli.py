"""Routing on the command line: `sayso inbox --principal` lists what that person may decide, with the vote's
progress; `sayso decide` says where the vote stands, and refuses the run's starter with exit code 4."""

from __future__ import annotations

import json
import shlex

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


def printed(output: str, action: str) -> list[str]:
    """The printed `sayso decide` command with `action` (and `--args` for an edit), as its arguments."""
    for line in output.splitlines():
        if " decide " in line and line.startswith("  ") and f" {action}" in line:
            return ["decide", *shlex.split(line.split(" decide ", 1)[1])]
    raise AssertionError(f"no {action!r} command printed in\n{output}")


def test_the_printed_commands_decide_as_an_approver_yet_to_vote(refunds: Config) -> None:
    """With principals, a printed command without `--principal` acted as `local` and was refused (exit 4). Each
    now names an approver who has not voted; the suggested edit carries the amount as the number the call holds,
    so pasting it after bob's vote is carol's second approval (it was a new round, bob's vote discarded)."""
    config = str(REFUNDS)
    code, out = sayso("run", config, "refund 250 to acme", "--principal", "alice")
    assert code == 0 and "--principal bob" in out and "carol may too: change --principal" in out
    code, voted = sayso(*printed(out, "approve"))
    assert code == 0 and "approvals: 1 of 2, waiting for finance" in voted
    code, listed = sayso("inbox", config, "--principal", "carol")
    edit = printed(listed, "approve --args")
    assert edit[-2:] == ["--principal", "carol"] and '{"amount": 250, "to": "acme"}' in edit
    code, done = sayso(*edit)
    assert code == 0 and "Refunded 250 to acme." in done and "edited" not in done


def test_every_command_acting_as_someone_reads_sayso_principal(refunds: Config) -> None:
    """`SAYSO_PRINCIPAL` is `--principal` for `inbox` and `resume` too: an unknown name is refused (exit 2), a known
    one lists what that person may decide (dana: nothing), as `--principal dana` does."""
    config = str(REFUNDS)
    code, out = sayso("run", config, "refund 250 to acme", "--principal", "alice", "--json")
    assert code == 0
    for command in (["inbox", config], ["resume", config, json.loads(out)["run_id"]]):
        mallory = runner.invoke(app, command, env={"SAYSO_PRINCIPAL": "mallory"})
        assert mallory.exit_code == 2 and "'mallory' is not a principal" in mallory.output
    dana = runner.invoke(app, ["inbox", config], env={"SAYSO_PRINCIPAL": "dana"})
    assert (dana.exit_code, dana.output.strip()) == (0, "no open requests")
    bob = runner.invoke(app, ["inbox", config], env={"SAYSO_PRINCIPAL": "bob"})
    assert "decided by: finance (bob, carol)" in bob.output


def test_an_outsider_deciding_is_told_what_a_made_up_id_is(refunds: Config) -> None:
    """`sayso decide --principal dana` on finance's request says what it says of an id that does not exist (exit 3);
    alice, who sees her own run's request but may not approve it, is refused with the reason (exit 4)."""
    config = str(REFUNDS)
    code, out = sayso("run", config, "refund 250 to acme", "--principal", "alice", "--json")
    request_id = json.loads(out)["requests"][0]["id"]
    made_up = sayso("decide", config, "req_made_up", "reject", "--principal", "dana")
    for action in ("approve", "reject"):
        code, refused = sayso("decide", config, request_id, action, "--principal", "dana")
        assert (code, refused) == (made_up[0], made_up[1].replace("req_made_up", request_id)) and code == 3
    code, own = sayso("decide", config, request_id, "reject", "--principal", "alice")
    assert code == 4 and "may not decide its own calls" in own


def test_after_an_edit_the_next_approver_is_shown_the_arguments_their_approval_runs(refunds: Config) -> None:
    """bob approved with the amount edited to 200: carol's inbox showed the proposed 250 in the panel and in the
    suggested `--args` edit, while a plain approve ran the call with 200 she was never shown (and pasting the edit
    started a round on 250, throwing bob's vote away). Now the panel shows what the vote is about, as the web UI
    does, and the suggested edit carries it."""
    config = str(REFUNDS)
    code, out = sayso("run", config, "refund 250 to acme", "--principal", "alice", "--json")
    request_id = json.loads(out)["requests"][0]["id"]
    edited = '{"amount": 200, "to": "acme"}'
    code, voted = sayso("decide", config, request_id, "approve", "--args", edited, "--principal", "bob")
    assert code == 0 and "approvals: 1 of 2 (edited arguments), waiting for finance" in voted
    code, listed = sayso("inbox", config, "--principal", "carol")
    assert code == 0 and '"amount": 200' in listed and '"amount": 250' not in listed, listed
    edit = printed(listed, "approve --args")
    assert edit[-2:] == ["--principal", "carol"] and edited in edit
    code, done = sayso(*edit)
    assert code == 0 and "Refunded 200 to acme." in done
