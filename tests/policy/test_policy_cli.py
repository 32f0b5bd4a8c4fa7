"""`sayso policy test CONFIG --tool T --args JSON [--as P]`: what the rules would do with a call, and why."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from sayso.cli import app

from .conftest import WriteConfig

runner = CliRunner(env={"COLUMNS": "300"})


def test_it_says_ask_allow_or_deny_and_why(write_config: WriteConfig) -> None:
    path = str(write_config())
    asked = runner.invoke(app, ["policy", "test", path, "--tool", "refund", "--args", '{"order": "o", "amount": 250}'])
    assert asked.exit_code == 0, asked.output
    assert "refund asks a person: amount 250 > 100 (rule refunds-large)" in asked.output
    allowed = runner.invoke(
        app, ["policy", "test", path, "--tool", "refund", "--args", '{"order": "o", "amount": 5}', "--json"]
    )
    assert json.loads(allowed.output) == {
        "action": "allow",
        "rule": "refunds-small",
        "reason": "small refunds need nobody",
        "error": None,
    }
    denied = runner.invoke(
        app, ["policy", "test", path, "--tool", "refund", "--args", '{"order": "o", "amount": 0}', "--json"]
    )
    assert json.loads(denied.output)["action"] == "deny"
    assert json.loads(denied.output)["reason"] == "a refund must be positive, not 0"


def test_as_names_the_principal_and_a_failing_condition_asks(write_config: WriteConfig) -> None:
    rules = [
        {"name": "refund", "rule": "alice", "when": "principal.name == 'alice'", "action": "allow"},
        {"name": "refund", "rule": "noted", "when": "args.note.size() > 3", "reason": "a long note"},
    ]
    path = str(write_config(rules))
    call = ["policy", "test", path, "--tool", "refund", "--args", '{"order": "o", "amount": 5}']
    alice = runner.invoke(app, [*call, "--as", "alice", "--json"])
    assert json.loads(alice.output)["action"] == "allow"
    bob = runner.invoke(app, [*call, "--as", "bob"])
    assert bob.exit_code == 0, bob.output
    assert "refund asks a person: the condition of rule noted could not be evaluated" in bob.output
    assert "a person decides instead" in bob.output


def test_bad_arguments_and_an_unknown_agent_exit_2(write_config: WriteConfig) -> None:
    path = str(write_config())
    bad = runner.invoke(app, ["policy", "test", path, "--tool", "refund", "--args", "[1]"])
    assert bad.exit_code == 2 and "--args must be a JSON object" in bad.output
    unknown = runner.invoke(app, ["policy", "test", path, "--tool", "refund", "--agent", "nope"])
    assert unknown.exit_code == 2 and "no agent 'nope'" in unknown.output


def test_arguments_the_tool_would_reject_exit_2_naming_each(write_config: WriteConfig) -> None:
    """A call the tool could not take is not judged: the rule would never see it, and the verdict would mislead."""
    path = str(write_config())
    wrong = runner.invoke(
        app, ["policy", "test", path, "--tool", "refund", "--args", '{"amount": "lots", "to": "acme"}', "--json"]
    )
    assert wrong.exit_code == 2, wrong.output
    said = json.loads(wrong.output)["error"]["message"]
    assert "refund would refuse these arguments" in said
    assert "unknown argument 'to'" in said and "missing argument 'order'" in said
    assert "'amount': Input should be a valid number" in said
    assert "its parameters: order (string), amount (number), note" in said
    assert "action" not in wrong.output
    fits = runner.invoke(app, ["policy", "test", path, "--tool", "refund", "--args", '{"order": "o", "amount": "250"}'])
    assert fits.exit_code == 0, fits.output
    assert "refund asks a person: amount 250" in fits.output


def test_a_tool_the_agent_does_not_have_exits_2_and_names_its_tools(write_config: WriteConfig) -> None:
    """A typo is not judged on the rules alone: that would say the call "runs without asking"."""
    typo = runner.invoke(app, ["policy", "test", str(write_config()), "--tool", "refnud", "--args", "{}"])
    assert typo.exit_code == 2, typo.output
    assert "has no tool 'refnud'" in typo.output and "refund" in typo.output
    assert "without asking" not in typo.output


def test_an_mcp_bindings_rule_is_tried_after_the_agents_own(tmp_path: Path) -> None:
    """The server is not started: its tool's rules are the binding's, judged on the arguments given."""
    binding = {
        "server": "git",
        "tools": ["git_commit"],
        "rule": "release-commits",
        "when": "args.message.startsWith('Release')",
        "reason": "{args.message} is a release",
    }
    config = {
        "models": {"m": "test"},
        "agents": {"dev": {"model": "m", "mcp": [binding]}},
        "mcp_servers": {"git": {"command": "true"}},
    }
    path = tmp_path / "sayso.yaml"
    path.write_text(yaml.safe_dump(config))
    asked = runner.invoke(
        app, ["policy", "test", str(path), "--tool", "git_commit", "--args", '{"message": "Release 1"}']
    )
    assert asked.exit_code == 0, asked.output
    assert "git_commit asks a person: Release 1 is a release (rule release-commits)" in asked.output
    plain = runner.invoke(
        app, ["policy", "test", str(path), "--tool", "git_commit", "--args", '{"message": "Fix"}', "--json"]
    )
    assert json.loads(plain.output)["action"] == "allow"
