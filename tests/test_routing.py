"""Routing (docs/guides/routing.md): approvers and groups, separation of duties, quorum votes, edits, the inbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Tool

from sayso import (
    Approve,
    Config,
    ConfigError,
    InvalidDecision,
    NotAllowed,
    Provide,
    Reject,
    RequestNotFound,
    Sayso,
    request_json,
)
from sayso._config.file import load_config

from .conftest import approvals
from .models import tool_model
from .tools import ran, refund


def route(said: str) -> tuple[str, dict[str, Any]]:
    _, amount, _, to = said.split(" ")  # "refund 250 to acme"
    return "refund", {"amount": int(amount), "to": to}


PRINCIPALS = [{"name": n} for n in ("alice", "bob", "carol", "dave")]


def config(tmp_path: Path, *, rule: dict[str, Any] | None = None, before: tuple[dict[str, Any], ...] = ()) -> Config:
    """`before`: rules tried ahead of the routed one."""
    return Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "base_dir": tmp_path,
            "principals": PRINCIPALS,
            "groups": {"finance": ["alice", "bob", "carol"]},
            "agents": {
                "payments": {
                    "model": "m",
                    "tools": [Tool(refund)],
                    "interrupt": {
                        "tools": [
                            *before,
                            rule or {"name": "refund", "approvers": ["finance"], "approvals_required": 2},
                        ]
                    },
                }
            },
        }
    )


@pytest.fixture
def app(tmp_path: Path) -> Sayso:
    return Sayso(config(tmp_path), models={"m": tool_model(route)})


async def test_two_of_finance_approve_and_the_call_runs_once(app: Sayso) -> None:
    """The first approval records a vote and leaves the pause open; a repeat counts nothing; the second runs it."""
    async with app:
        paused = await app.run("refund 250 to acme", principal="alice")
        [request] = approvals(paused.requests)
        assert request.routing is not None and request.routing.deciders("alice") == ("bob", "carol")
        assert request.scopes == ("once",)
        first = await app.decide(request.request_id, Approve(), principal="bob", via="cli")
        assert first.recorded and first.run.status == "paused" and ran("refund") == []
        assert first.quorum is not None and first.quorum.text == "1 of 2, waiting for finance"
        again = await app.decide(request.request_id, Approve(), principal="bob")
        assert not again.recorded and again.quorum is not None and again.quorum.approved_by == ("bob",)
        done = await app.decide(request.request_id, Approve(), principal="carol", via="rest")
        log = [r.body for r in await app.audit_log()]
    assert done.run.status == "completed" and done.run.output == "model read: refunded 250 to acme"
    assert ran("refund") == [{"amount": 250, "to": "acme"}]
    votes = [(b["principal"], b["decision"], b.get("via"), b["progress"]) for b in log if b["event"] == "vote"]
    assert votes == [("bob", "approve", "cli", "1 of 2, waiting for finance"), ("carol", "approve", "rest", "2 of 2")]
    [decision] = [b for b in log if b["event"] == "decision"]
    assert decision["principal"] == "carol" and decision["decision"] == "approve"


async def test_the_starter_and_outsiders_are_refused_with_the_rule(app: Sayso) -> None:
    """Separation of duties: alice is in finance but started the run; to dave, no approver at all, it is not there."""
    async with app:
        paused = await app.run("refund 250 to acme", principal="alice")
        [request] = approvals(paused.requests)
        with pytest.raises(NotAllowed, match="'alice' started this run and may not decide its own calls"):
            await app.decide(request.request_id, Approve(), principal="alice")
        with pytest.raises(RequestNotFound):
            await app.decide(request.request_id, Approve(), principal="dave")
        state = await app.request(request.request_id)
    assert state.votes == () and state.decision is None and ran("refund") == []


async def test_self_approval_lets_the_starter_vote(tmp_path: Path) -> None:
    rule = {"name": "refund", "approvers": ["finance"], "self_approval": True}
    async with Sayso(config(tmp_path, rule=rule), models={"m": tool_model(route)}) as app:
        paused = await app.run("refund 5 to acme", principal="alice")
        done = await app.decide(paused.requests[0].request_id, Approve(), principal="alice")
    assert done.run.status == "completed" and ran("refund") == [{"amount": 5, "to": "acme"}]


async def test_an_edit_restarts_the_count_and_the_call_runs_with_it(app: Sayso) -> None:
    """bob approved 250; carol edits to 200 (her vote counts for it); bob must approve the edit for it to run."""
    async with app:
        paused = await app.run("refund 250 to acme", principal="alice")
        [request] = approvals(paused.requests)
        await app.decide(request.request_id, Approve(), principal="bob")
        edited = await app.decide(
            request.request_id, Approve(edited_args={"amount": 200, "to": "acme"}), principal="carol"
        )
        assert edited.run.status == "paused" and edited.quorum is not None
        assert edited.quorum.text == "1 of 2 (edited arguments), waiting for finance"
        assert edited.quorum.args == {"amount": 200, "to": "acme"} and edited.quorum.approved_by == ("carol",)
        page = await app.inbox(principal="bob")
        shown = request_json(page.requests[0], votes=page.votes.get(request.request_id, ()))
        assert shown["quorum"]["args"] == {"amount": 200, "to": "acme"}
        done = await app.decide(request.request_id, Approve(), principal="bob")
    assert done.run.status == "completed" and ran("refund") == [{"amount": 200, "to": "acme"}]


async def test_an_edit_back_to_the_proposed_arguments_is_no_edited_approval(app: Sayso) -> None:
    """carol edits 250 to 200; bob approves the proposed 250 as he saw them (a new round on them); carol approves:
    250 runs, as proposed, and no interface says the arguments were edited."""
    async with app:
        paused = await app.run("refund 250 to acme", principal="alice")
        [request] = approvals(paused.requests)
        await app.decide(request.request_id, Approve(edited_args={"amount": 200, "to": "acme"}), principal="carol")
        back = await app.decide(request.request_id, Approve(edited_args={"amount": 250, "to": "acme"}), principal="bob")
        assert back.quorum is not None and back.quorum.text == "1 of 2, waiting for finance"
        done = await app.decide(request.request_id, Approve(), principal="carol")
        state = await app.request(request.request_id)
    assert done.quorum is not None and done.quorum.text == "2 of 2"
    assert state.decision is not None and state.decision.decision == Approve()
    assert ran("refund") == [{"amount": 250, "to": "acme"}]


@pytest.mark.parametrize("edit", [True, False])
async def test_a_timeout_that_approves_approves_the_arguments_as_they_stand(tmp_path: Path, edit: bool) -> None:
    """carol's vote edited 250 to 200 and nobody else voted: `on_timeout: approve` runs the 200 the approvers were
    shown, never the 250 her edit replaced; with no edit it runs what was proposed."""
    now = [1_900_000_000.0]
    rule = {"name": "refund", "approvers": ["finance"], "approvals_required": 2}
    rule["on_timeout"] = {"after": "1h", "action": "approve"}
    async with Sayso(config(tmp_path, rule=rule), models={"m": tool_model(route)}, clock=lambda: now[0]) as app:
        paused = await app.run("refund 250 to acme", principal="alice")
        [request] = approvals(paused.requests)
        vote = Approve(edited_args={"amount": 200, "to": "acme"}) if edit else Approve()
        await app.decide(request.request_id, vote, principal="carol")
        now[0] += 3601
        [closed] = await app.expire()
        state = await app.request(request.request_id)
    assert closed.status == "completed" and state.decision is not None and state.decision.by == "expiry"
    assert ran("refund") == [{"amount": 200 if edit else 250, "to": "acme"}]


async def test_one_rejection_rejects_with_its_reason(app: Sayso) -> None:
    async with app:
        paused = await app.run("refund 250 to acme", principal="alice")
        [request] = approvals(paused.requests)
        await app.decide(request.request_id, Approve(), principal="bob")
        done = await app.decide(request.request_id, Reject(reason="duplicate refund"), principal="carol")
    assert done.run.status == "completed" and ran("refund") == []
    assert done.run.output == "model read: Declined: duplicate refund"


async def test_each_inbox_lists_what_its_reader_may_decide(app: Sayso) -> None:
    async with app:
        paused = await app.run("refund 250 to acme", principal="alice")
        request_id = paused.requests[0].request_id
        listed = {who: [r.request_id for r in (await app.inbox(principal=who)).requests] for who in PRINCIPALS_NAMES}
        await app.decide(request_id, Approve(), principal="bob")
        page = await app.inbox(principal="carol")
    assert listed == {"alice": [], "bob": [request_id], "carol": [request_id], "dave": []}
    shown = request_json(page.requests[0], votes=page.votes[request_id])
    assert shown["approvers"] == {
        "named": ["finance"],
        "principals": [{"name": "bob", "groups": ["finance"]}, {"name": "carol", "groups": ["finance"]}],
        "approvals_required": 2,
        "self_approval": False,
    }
    assert shown["quorum"]["text"] == "1 of 2, waiting for finance"
    assert shown["quorum"]["approved_by"] == ["bob"] and shown["quorum"]["votes"][0]["principal"] == "bob"


PRINCIPALS_NAMES = [p["name"] for p in PRINCIPALS]


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"approvers": ["finanse"]}, "approver 'finanse' is neither a principal nor a group"),
        ({"approvers": ["bob"], "approvals_required": 2}, "approvals_required is 2 but only 1 approver"),
        ({"approvals_required": 2}, "approvals_required needs approvers"),
    ],
)
def test_routing_mistakes_are_config_errors_with_their_line(
    tmp_path: Path, extra: dict[str, Any], problem: str
) -> None:
    rule = "{" + ", ".join(f"{k}: {v}".replace("'", "") for k, v in {"name": "refund", **extra}.items()) + "}"
    (tmp_path / "sayso.yaml").write_text(
        "principals: [{name: alice}, {name: bob}]\n"
        "groups: {finance: [alice, bob]}\n"
        "agents:\n  payments:\n    model: test\n    interrupt:\n      tools:\n"
        f"        - {rule}\n"
    )
    with pytest.raises(ConfigError, match=problem):
        load_config(tmp_path / "sayso.yaml")


def test_group_members_must_be_principals(tmp_path: Path) -> None:
    (tmp_path / "sayso.yaml").write_text(
        "principals: [{name: alice}]\ngroups: {finance: [alice, zed]}\nagents: {payments: {model: test}}\n"
    )
    with pytest.raises(ConfigError, match="group 'finance': member 'zed' is not a principal"):
        load_config(tmp_path / "sayso.yaml")


WORKFLOW_NODES = """\
from sayso.workflows import RequestInput


def ask():
    answer = yield RequestInput("How much may we refund?", response_schema=int)
    return f"refund up to {answer}"
"""


async def test_a_workflows_approvers_answer_its_inputs(tmp_path: Path) -> None:
    """`approvers` on a workflow route its inputs: finance answers, not the principal who started it."""
    (tmp_path / "wf_routing_nodes.py").write_text(WORKFLOW_NODES)
    routed = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "base_dir": tmp_path,
            "principals": PRINCIPALS,
            "groups": {"finance": ["alice", "bob"]},
            "agents": {"helper": {"model": "test"}},
            "workflows": {
                "limits": {
                    "nodes": {"ask": "wf_routing_nodes:ask"},
                    "edges": [["START", "ask", "END"]],
                    "approvers": ["finance"],
                }
            },
        }
    )
    async with Sayso(routed) as app:
        paused = await app.run("start", agent="limits", principal="alice")
        [request] = paused.requests
        assert request.routing is not None and request.routing.deciders("alice") == ("bob",)
        with pytest.raises(NotAllowed, match="'alice' started this run"):
            await app.decide(request.request_id, Provide(value=500), principal="alice")
        assert [r.request_id for r in (await app.inbox(principal="bob")).requests] == [request.request_id]
        done = await app.decide(request.request_id, Provide(value=500), principal="bob")
    assert done.run.status == "completed" and done.run.output == "refund up to 500"


def test_a_workflows_input_takes_one_answer() -> None:
    with pytest.raises(ValueError, match="a workflow's input takes one answer"):
        Config.model_validate(
            {
                "agents": {"a": {"model": "test"}},
                "workflows": {
                    "w": {
                        "nodes": {"n": "m:f"},
                        "edges": [["START", "n", "END"]],
                        "approvers": ["x"],
                        "approvals_required": 2,
                    }
                },
            }
        )


@pytest.mark.parametrize("routed", [True, False], ids=["quorum", "owner"])
async def test_arguments_sent_back_as_shown_keep_their_redacted_fields(tmp_path: Path, routed: bool) -> None:
    """`to` is redacted: every interface shows it as the placeholder, and an approval naming the arguments it saw
    (as the web UI's votes do) or an edit of the amount sends the placeholder back. The call runs with the real
    value, never the placeholder, and an unchanged field is no edit that restarts a quorum."""
    cfg = config(tmp_path, rule=None if routed else {"name": "refund"})
    cfg.agents["payments"].redact = ["to"]
    async with Sayso(cfg, models={"m": tool_model(route)}) as app:
        paused = await app.run("refund 250 to acme", principal="alice")
        [request] = approvals(paused.requests)
        shown = request_json(request)["args"]
        assert shown == {"amount": 250, "to": "«redacted»"}
        if routed:
            first = await app.decide(request.request_id, Approve(edited_args=shown), principal="bob", via="web")
            assert first.quorum is not None and first.quorum.text == "1 of 2, waiting for finance"
            done = await app.decide(request.request_id, Approve(edited_args=shown), principal="carol", via="web")
        else:
            edited = Approve(edited_args={**shown, "amount": 200})
            done = await app.decide(request.request_id, edited, principal="alice", via="web")
    assert done.run.status == "completed"
    assert ran("refund") == [{"amount": 250 if routed else 200, "to": "acme"}]


def amount_band(tool_name: str, tool_input: dict[str, Any]) -> dict[str, str]:
    """A refund's subject: its band of 100 (an approval of 250 covers 200 to 299)."""
    band = int(tool_input["amount"]) // 100
    return {"key": f"band:{band}", "label": f"refunds of {band * 100} to {band * 100 + 99}"}


async def test_answers_with_one_refused_edit_record_no_vote(tmp_path: Path) -> None:
    """Bob answers two refunds that need votes at once; his edit of the second leaves what the approval covers, so it
    is refused, and his vote on the first is not recorded either: one refused answer records none."""
    rule = {"name": "refund", "approvers": ["finance"], "approvals_required": 2, "subject": f"{__name__}:amount_band"}

    def both(said: str) -> list[tuple[str, dict[str, Any]]]:
        return [("refund", {"amount": 250, "to": "acme"}), ("refund", {"amount": 260, "to": "initech"})]

    async with Sayso(config(tmp_path, rule=rule), models={"m": tool_model(both)}) as app:
        paused = await app.run("refund both", principal="alice")
        first, second = approvals(paused.requests)
        answers = {
            first.request_id: Approve(),
            second.request_id: Approve(edited_args={"amount": 900, "to": "initech"}),
        }
        with pytest.raises(InvalidDecision, match="the edit changes what the approval covers"):
            await app.answer_pause(paused.run_id, answers, principal="bob")
        states = [await app.request(r.request_id) for r in (first, second)]
    assert [s.votes for s in states] == [(), ()] and ran("refund") == []


async def test_a_decided_quorum_waits_for_nobody(app: Sayso) -> None:
    """dave's refunds can be approved by any two of alice, bob and carol: once two approve, or one rejects, the
    progress every interface shows (the answer, the request, the audit's vote) no longer says it waits for finance."""
    async with app:
        approved = approvals((await app.run("refund 250 to acme", principal="dave")).requests)[0].request_id
        await app.decide(approved, Approve(), principal="bob")
        done = await app.decide(approved, Approve(), principal="carol")
        rejected = approvals((await app.run("refund 900 to acme", principal="dave")).requests)[0].request_id
        refused = await app.decide(rejected, Reject(reason="too much"), principal="alice")
        shown = [
            request_json((await app.request(r)).request, votes=(await app.request(r)).votes)
            for r in (approved, rejected)
        ]
        log = [r.body for r in await app.audit_log()]
    assert done.quorum is not None and (done.quorum.text, done.quorum.waiting_for) == ("2 of 2", ())
    assert refused.quorum is not None and (refused.quorum.text, refused.quorum.waiting_for) == ("0 of 2", ())
    assert [s["quorum"]["text"] for s in shown] == ["2 of 2", "0 of 2"]
    progress = [b["progress"] for b in log if b["event"] == "vote"]
    assert progress == ["1 of 2, waiting for finance", "2 of 2", "0 of 2"]


@pytest.mark.parametrize("action", ["deny", "allow"])
async def test_a_condition_that_cannot_be_evaluated_still_asks_the_approvers_after_it(
    tmp_path: Path, action: str
) -> None:
    """Fail closed: a deny (or allow) rule whose condition errors on this call (`int('acme')`) comes before the rule
    that routes refunds to two of finance. Whether it held or not, alice could never approve her own refund alone;
    the call asks finance's quorum, saying why (it was asked unrouted, and alice approved and ran it)."""
    weird = {"name": "refund", "rule": "numeric-payee", "when": "int(args.to) > 5", "action": action}
    async with Sayso(config(tmp_path, before=(weird,)), models={"m": tool_model(route)}) as app:
        paused = await app.run("refund 250 to acme", principal="alice")
        [request] = approvals(paused.requests)
        with pytest.raises(NotAllowed, match="'alice' started this run and may not decide its own calls"):
            await app.decide(request.request_id, Approve(), principal="alice")
        assert ran("refund") == []
        first = await app.decide(request.request_id, Approve(), principal="bob")
        assert first.run.status == "paused" and ran("refund") == []
        done = await app.decide(request.request_id, Approve(), principal="carol")
    assert request.routing is not None and request.routing.deciders("alice") == ("bob", "carol")
    assert request.asked_because is not None
    assert request.asked_because.startswith("the condition of rule numeric-payee could not be evaluated")
    assert done.run.status == "completed" and ran("refund") == [{"amount": 250, "to": "acme"}]
