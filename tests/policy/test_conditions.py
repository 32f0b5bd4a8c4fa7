"""Conditions as policy (issue 25, point 4): CEL `when:` rules ask, allow or deny, each saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

from sayso import ConfigError, Sayso, request_json

from ..conftest import approvals
from .conftest import RULES, WriteConfig
from .tools import REFUNDS


async def test_a_large_refund_asks_saying_why_with_the_rule_name(write_config: WriteConfig) -> None:
    async with Sayso.from_yaml(write_config()) as app:
        paused = await app.run("refund o-1 250")
    assert paused.status == "paused" and REFUNDS == []
    [request] = approvals(paused.requests)
    assert request.asked_because == "amount 250 > 100"
    assert request.rule == "refunds-large"
    shown = request_json(request)
    assert shown["why"] == "asked because amount 250 > 100 (rule refunds-large)"
    assert (shown["asked_because"], shown["rule"]) == ("amount 250 > 100", "refunds-large")


async def test_a_small_refund_runs_without_asking(write_config: WriteConfig) -> None:
    async with Sayso.from_yaml(write_config()) as app:
        done = await app.run("refund o-2 40")
    assert done.status == "completed" and not done.requests
    assert REFUNDS == [{"order": "o-2", "amount": 40}]


async def test_a_denied_call_does_not_run_and_the_model_reads_the_reason(write_config: WriteConfig) -> None:
    async with Sayso.from_yaml(write_config()) as app:
        done = await app.run("refund o-3 -5")
        audit = [r.body for r in await app.audit_log()]
    assert done.status == "completed" and REFUNDS == []
    assert done.output == ("model read: Denied by policy (rule refunds-negative): a refund must be positive, not -5")
    [denied] = [b for b in audit if b["event"] == "policy_denied"]
    assert (denied["rule"], denied["tool_name"], denied["proposed_args"]) == (
        "refunds-negative",
        "refund",
        {"order": "o-3", "amount": -5, "note": None},
    )
    assert denied["reason"] == "a refund must be positive, not -5"


async def test_a_condition_that_cannot_be_evaluated_asks_and_says_why(write_config: WriteConfig) -> None:
    """Fail closed: `args.note` is absent from the call, so the rule neither allows nor denies: a person decides."""
    rules = [{"name": "refund", "rule": "noted", "when": "args.note.size() > 3", "action": "allow"}]
    async with Sayso.from_yaml(write_config(rules)) as app:
        paused = await app.run("refund o-4 10")
    assert paused.status == "paused" and REFUNDS == []
    [request] = approvals(paused.requests)
    assert request.rule == "noted"
    assert request.asked_because is not None
    assert request.asked_because.startswith("the condition of rule noted could not be evaluated")
    assert "note" in request.asked_because


async def test_a_deny_rule_that_cannot_be_evaluated_still_denies_what_a_later_rule_denies(
    write_config: WriteConfig,
) -> None:
    """Whether `noted` held or not, a refund of -5 is denied by the rule after it: so it is, with that rule's
    reason (it asked a person, who could approve a refund every rule denies)."""
    noted = {"name": "refund", "rule": "noted", "when": "args.note.size() > 3", "action": "deny"}
    async with Sayso.from_yaml(write_config([noted, *RULES])) as app:
        done = await app.run("refund o-9 -5")
    assert done.status == "completed" and not done.requests and REFUNDS == []
    assert done.output == "model read: Denied by policy (rule refunds-negative): a refund must be positive, not -5"


async def test_the_principal_and_thread_are_variables(write_config: WriteConfig) -> None:
    rules = [
        {
            "name": "refund",
            "rule": "alice-trusted",
            "when": "principal.name == 'alice' && thread.agent == 'shop'",
            "action": "allow",
        },
        {"name": "refund", "rule": "others", "reason": "{principal.name} is not alice"},
    ]
    path = write_config(rules, principals=[{"name": "alice", "token": "a"}, {"name": "bob", "token": "b"}])
    async with Sayso.from_yaml(path) as app:
        alice = await app.run("refund o-5 500", principal="alice")
        bob = await app.run("refund o-6 500", principal="bob")
    assert alice.status == "completed" and bob.status == "paused"
    assert approvals(bob.requests)[0].asked_because == "bob is not alice"
    assert [r["order"] for r in REFUNDS] == ["o-5"]


def test_an_unknown_argument_is_a_config_error_naming_file_and_line(write_config: WriteConfig) -> None:
    rules = [{"name": "refund", "rule": "typo", "when": "args.amout > 100"}]
    path = write_config(rules)
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "args.amout" in text)
    with pytest.raises(ConfigError) as raised:
        Sayso.from_yaml(path)
    assert f"{path}:{line}:" in str(raised.value)
    assert "args.amout is not an argument of the tool" in str(raised.value)
    assert "amount" in str(raised.value)


def test_an_unknown_variable_and_a_bad_reason_placeholder_are_config_errors(write_config: WriteConfig) -> None:
    rules = [{"name": "refund", "when": "user.name == 'x'", "reason": "by {principal.team}"}]
    with pytest.raises(ConfigError) as raised:
        Sayso.from_yaml(write_config(rules))
    assert "'user' is not a variable" in str(raised.value)
    assert "principal.team is not a field of principal" in str(raised.value)


def test_a_condition_that_is_not_cel_is_refused_at_load_naming_the_line(write_config: WriteConfig) -> None:
    path = write_config([{"name": "refund", "when": "args.amount >"}])
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "when:" in text)
    with pytest.raises(ConfigError) as raised:
        Sayso.from_yaml(path)
    assert f"{path}:{line}:" in str(raised.value) and "not valid CEL" in str(raised.value)


def test_an_action_other_than_ask_allow_deny_is_refused(write_config: WriteConfig, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="action"):
        Sayso.from_yaml(write_config([{"name": "refund", "action": "maybe"}]))
