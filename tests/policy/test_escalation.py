"""Escalation on a clock (issue 25, point 3): steps fire once each, in order, durably; `on_timeout` decides.

The runtime's clock is the test's (`now`), so no test sleeps: time moves when a test says so.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sayso import Approve, ConfigError, Reject, RequestExpired, Sayso

from ..conftest import approvals
from .conftest import WriteConfig
from .tools import REFUNDS

T0 = 1_900_000_000.0

STEPS: dict[str, Any] = {
    "name": "refund",
    "rule": "refunds-large",
    "when": "args.amount > 100",
    "reason": "amount {args.amount} > 100",
    "approvers": ["finance"],
    "escalate": [
        {"after": "15m", "remind": True},
        {"after": "1h", "notify": ["webhook:cfo", "webhook:finance"], "add_approvers": ["cfo"]},
    ],
    "on_timeout": {"after": "4h", "action": "reject", "reason": "nobody approved within 4 hours"},
}


HOOKS = [{"name": n, "url": f"http://127.0.0.1:9/{n}", "secret": "s3cret"} for n in ("team", "cfo", "finance")]
"""Named webhooks for the steps' `notify` targets (never reached: the tests read the outbox)."""


def config(write_config: WriteConfig, rules: list[Any]) -> Path:
    return write_config(rules, webhooks=HOOKS)


def at(now: list[float]) -> dict[str, Any]:
    return {"clock": lambda: now[0]}


async def escalations(app: Sayso) -> list[dict[str, Any]]:
    return [dict(r.body) for r in await app.audit_log() if r.body["event"] == "escalated"]


async def test_steps_fire_in_order_each_once_with_audit_and_outbox(write_config: WriteConfig) -> None:
    now = [T0]
    async with Sayso.from_yaml(config(write_config, [STEPS]), **at(now)) as app:
        paused = await app.run("refund o-1 250")
        [request] = approvals(paused.requests)
        assert [s.after_seconds for s in request.escalation] == [900, 3600]
        now[0] = T0 + 899
        await app.expire()
        assert await escalations(app) == []
        now[0] = T0 + 900
        await app.expire()
        await app.expire()  # the same step again: nothing
        first = await escalations(app)
        assert [(e["step"], e["remind"], e["reason"]) for e in first] == [
            (0, True, "no decision after 15m: remind the approvers")
        ]
        now[0] = T0 + 3600
        await app.expire()
        steps = await escalations(app)
        notices = await app.claim_escalations("channels")
    assert [e["step"] for e in steps] == [0, 1]
    assert steps[1]["notify"] == ["webhook:cfo", "webhook:finance"]
    assert steps[1]["add_approvers"] == ["cfo"]
    assert (steps[1]["rule"], steps[1]["request_id"]) == ("refunds-large", request.request_id)
    assert [(n.step, n.escalation.notify, n.request.request_id) for n in notices] == [
        (0, (), request.request_id),
        (1, ("webhook:cfo", "webhook:finance"), request.request_id),
    ]
    assert notices[1].reason == "no decision after 1h: notify webhook:cfo, webhook:finance; add approvers cfo"


async def test_a_step_due_while_no_process_ran_fires_when_one_starts(write_config: WriteConfig) -> None:
    now = [T0]
    path = config(write_config, [STEPS])
    async with Sayso.from_yaml(path, **at(now)) as app:
        await app.run("refund o-1 250")
    now[0] = T0 + 2 * 3600  # both steps came due while nothing ran
    async with Sayso.from_yaml(path, **at(now)) as later:
        await later.expire()
        assert [e["step"] for e in await escalations(later)] == [0, 1]


async def test_two_runtimes_sweeping_at_once_fire_each_step_once(write_config: WriteConfig) -> None:
    now = [T0]
    path = config(write_config, [STEPS])
    async with Sayso.from_yaml(path, **at(now)) as one, Sayso.from_yaml(path, **at(now)) as two:
        await one.run("refund o-1 250")
        now[0] = T0 + 3600
        await asyncio.gather(one.expire(), two.expire(), one.expire(), two.expire())
        assert sorted(e["step"] for e in await escalations(one)) == [0, 1]
        notices = await two.claim_escalations("channels")
    assert sorted(n.step for n in notices) == [0, 1]


async def test_a_decision_stops_the_clock(write_config: WriteConfig) -> None:
    now = [T0]
    async with Sayso.from_yaml(config(write_config, [STEPS]), **at(now)) as app:
        paused = await app.run("refund o-1 250")

        await app.decide(approvals(paused.requests)[0].request_id, Approve())
        now[0] = T0 + 5 * 3600
        await app.expire()
        assert await escalations(app) == []
    assert REFUNDS == [{"order": "o-1", "amount": 250}]


@pytest.mark.parametrize(
    ("action", "reason", "read", "refunded"),
    [
        ("reject", "nobody approved within 4 hours", "Declined: nobody approved within 4 hours", []),
        ("approve", None, "refunded 250.0 on o-1", [{"order": "o-1", "amount": 250}]),
        ("expire", "ask again tomorrow", "ask again tomorrow", []),
    ],
)
async def test_on_timeout_decides_and_the_model_reads_the_reason(
    write_config: WriteConfig, action: str, reason: str | None, read: str, refunded: list[dict[str, Any]]
) -> None:
    now = [T0]
    rule = {**STEPS, "escalate": [], "on_timeout": {"after": "4h", "action": action, "reason": reason}}
    async with Sayso.from_yaml(config(write_config, [rule]), **at(now)) as app:
        paused = await app.run("refund o-1 250")
        [request] = approvals(paused.requests)
        assert request.expires_at == T0 + 4 * 3600
        now[0] = T0 + 4 * 3600 + 1
        [closed] = await app.expire()
        state = await app.request(request.request_id)
    assert closed.status == "completed"
    assert closed.output is not None and read in closed.output
    assert state.decision is not None and state.decision.by == "expiry"
    assert REFUNDS == refunded


@pytest.mark.parametrize(
    ("on_timeout", "said"),
    [
        (
            {"after": "4h", "action": "approve"},
            "expired before a decision arrived; the rule approves it on timeout (after 4h), so the call will run",
        ),
        (
            {"after": "4h", "action": "reject"},
            "expired before a decision arrived; the rule rejects it on timeout (after 4h), so the call will not run",
        ),
        ({"after": "4h"}, "expired before a decision arrived; the call will not run"),
    ],
)
async def test_a_decision_after_the_timeout_is_told_what_the_timeout_does(
    write_config: WriteConfig, on_timeout: dict[str, Any], said: str
) -> None:
    """The refusal of a late decision says whether the call will run: `on_timeout: approve` runs it at the sweep."""
    now = [T0]
    rule = {**STEPS, "escalate": [], "approvers": [], "on_timeout": on_timeout}
    async with Sayso.from_yaml(config(write_config, [rule]), **at(now)) as app:
        paused = await app.run("refund o-1 250")
        [request] = approvals(paused.requests)
        now[0] = T0 + 4 * 3600 + 1
        with pytest.raises(RequestExpired) as refused:
            await app.decide(request.request_id, Reject(reason="too late"))
        assert refused.value.problem == said
        await app.expire()
    assert REFUNDS == ([{"order": "o-1", "amount": 250}] if "will run" in said else [])


async def test_ttl_seconds_is_the_timeout_when_on_timeout_names_no_after(write_config: WriteConfig) -> None:
    now = [T0]
    rule = {"name": "refund", "ttl_seconds": 60, "on_timeout": {"action": "reject", "reason": "too slow"}}
    async with Sayso.from_yaml(config(write_config, [rule]), **at(now)) as app:
        paused = await app.run("refund o-1 250")
        assert approvals(paused.requests)[0].expires_at == T0 + 60
        now[0] = T0 + 61
        [closed] = await app.expire()
    assert closed.output == "model read: Declined: too slow"


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ({"escalate": [{"after": "soon"}]}, "is not a duration"),
        ({"ttl_seconds": 60, "on_timeout": {"after": "1h"}}, "set the timeout once"),
        ({"on_timeout": {"action": "reject"}}, "'on_timeout' needs a timeout"),
        ({"on_timeout": {"after": "1h", "action": "maybe"}}, "action"),
        (
            # Listed after a step due past the 4h timeout, the 15m reminder would never fire.
            {"escalate": [{"after": "5h", "remind": True}, {"after": "15m", "remind": True}], "ttl_seconds": 14400},
            r"list the steps in the order they come due: step 2 \(after 15m\) comes due before step 1 \(after 5h\)",
        ),
    ],
)
def test_escalation_config_errors(write_config: WriteConfig, rule: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        Sayso.from_yaml(write_config([{"name": "refund", **rule}]))


def test_durations_read_as_people_write_them(tmp_path: Path) -> None:
    from sayso._core.escalation import parse_duration

    assert [parse_duration(v) for v in (90, "90s", "15m", "1h", "1.5h", "2d")] == [90, 90, 900, 3600, 5400, 172800]


async def test_each_step_is_a_notice_to_its_targets_and_a_reminder_to_the_rules(write_config: WriteConfig) -> None:
    """The channels deliver `request.escalated`: a step's `notify` targets get it, and a reminder goes to the
    rule's own targets; a target the step does not name gets nothing."""
    from sayso._core.channels import outbox_key

    now = [T0]
    rule = {
        **STEPS,
        "notify": ["webhook:team"],
        "escalate": [{"after": "15m", "remind": True}, {"after": "1h", "notify": ["webhook:cfo"]}],
    }
    team, cfo = outbox_key("webhook:team"), outbox_key("webhook:cfo")
    async with Sayso.from_yaml(config(write_config, [rule]), **at(now)) as app:
        await app.run("refund o-1 250")
        opened = await app.claim_events([team, cfo])
        for event in opened:
            await app.settle_event(event.delivery_id, status="delivered")
        now[0] = T0 + 3600
        await app.expire()
        escalated = await app.claim_events([team, cfo])
    assert [(e.event, e.target) for e in opened] == [("request.opened", "webhook:team")]
    assert sorted((str(e.target), str(e.reason)) for e in escalated) == [
        ("webhook:cfo", "no decision after 1h: notify webhook:cfo"),
        ("webhook:team", "no decision after 15m: remind the approvers"),
    ]
    assert {e.event for e in escalated} == {"request.escalated"}


def test_add_approvers_needs_a_routed_rule_and_known_names(write_config: WriteConfig) -> None:
    """Unrouted, the thread's owner and the agent's approvers decide: a step could only narrow that, so it is
    a config error with the file and line; a name that is neither a principal nor a group is one too."""
    unrouted = {**STEPS, "approvers": []}
    with pytest.raises(ConfigError, match=r"sayso\.yaml:\d+.*'add_approvers' widens the rule's approvers"):
        Sayso.from_yaml(config(write_config, [unrouted]))
    principals = [{"name": n, "token": f"{n}-token"} for n in ("alice", "bob")]
    unknown = {**STEPS, "approvers": ["bob"], "escalate": [{"after": "1h", "add_approvers": ["cfo"]}]}
    with pytest.raises(ConfigError, match=r"escalate\[0\]\.add_approvers: 'cfo' is neither a principal nor a group"):
        Sayso.from_yaml(write_config([unknown], webhooks=HOOKS, principals=principals))
