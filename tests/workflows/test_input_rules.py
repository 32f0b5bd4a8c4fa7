"""A workflow's inputs under its rule (docs/guides/routing.md#routed-workflow-inputs): routed, picked by `when:`,
escalated on the clock and timed out, as a tool rule's approvals are. The clock is the test's: no sleeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sayso import Config, InputRequest, Provide, RequestNotFound, Sayso, request_json
from sayso.protocols.a2a import pause_view
from sayso.protocols.a2a._mapping import sayso_payload
from sayso.protocols.ag_ui._mapping import interrupt
from sayso.protocols.mcp import elicitation_for

T0 = 1_900_000_000.0
WHY = "asked because a limit for 250 (rule large-limits)"

NODES = """\
from sayso.workflows import RequestInput


def ask(node_input: str) -> object:
    answer = yield RequestInput("How much may we refund?", payload={"amount": int(node_input)}, response_schema=int)
    return f"refund up to {answer}"
"""

LARGE = {
    "rule": "large-limits",
    "when": "args.payload.amount > 100",
    "reason": "a limit for {args.payload.amount}",
    "approvers": ["finance"],
    "escalate": [{"after": "1h", "add_approvers": ["cfo"], "notify": ["webhook:cfo"]}],
    "on_timeout": {"after": "4h", "reason": "finance did not set a limit in time"},
}


def app_at(tmp_path: Path, now: list[float], rule: dict[str, Any]) -> Sayso:
    (tmp_path / "wf_rule_nodes.py").write_text(NODES)
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "base_dir": tmp_path,
            "principals": [{"name": n} for n in ("alice", "bob", "dana")],
            "groups": {"finance": ["bob"], "cfo": ["dana"]},
            "agents": {"helper": {"model": "test"}},
            "webhooks": [{"name": "cfo", "url": "http://127.0.0.1:9/cfo", "secret": "s3cret"}],
            "workflows": {
                "limits": {"nodes": {"ask": "wf_rule_nodes:ask"}, "edges": [["START", "ask", "END"]], **rule}
            },
        }
    )
    return Sayso(config, clock=lambda: now[0])


async def test_an_input_the_rule_picks_is_routed_escalated_and_answered_by_the_added_approver(
    tmp_path: Path,
) -> None:
    now = [T0]
    async with app_at(tmp_path, now, LARGE) as app:
        paused = await app.run("250", agent="limits", principal="alice")
        [request] = paused.requests
        assert request_json(request)["why"] == WHY
        with pytest.raises(RequestNotFound):  # not dana's to see before the escalation
            await app.decide(request.request_id, Provide(value=300), principal="dana")
        now[0] = T0 + 3600
        await app.expire()
        fired = [r.body for r in await app.audit_log() if r.body["event"] == "escalated"]
        assert [(e["step"], e["rule"], e["notify"]) for e in fired] == [(0, "large-limits", ["webhook:cfo"])]
        [widened] = (await app.inbox(principal="dana")).requests
        assert widened.request_id == request.request_id
        done = await app.decide(request.request_id, Provide(value=300), principal="dana")
    assert done.run.status == "completed" and done.run.output == "refund up to 300"


async def test_an_input_the_rule_does_not_pick_waits_for_the_runs_owner_unrouted(tmp_path: Path) -> None:
    async with app_at(tmp_path, [T0], LARGE) as app:
        paused = await app.run("50", agent="limits", principal="alice")
        [request] = paused.requests
        assert isinstance(request, InputRequest) and request.escalation == ()
        assert request.routing is None and request_json(request)["why"] is None
        done = await app.decide(request.request_id, Provide(value=50), principal="alice")
    assert done.run.output == "refund up to 50"


async def test_the_rules_timeout_expires_the_input_with_its_reason(tmp_path: Path) -> None:
    now = [T0]
    async with app_at(tmp_path, now, LARGE) as app:
        paused = await app.run("250", agent="limits", principal="alice")
        [request] = paused.requests
        assert request.expires_at == T0 + 4 * 3600
        now[0] = T0 + 4 * 3600
        await app.expire()
        state = await app.request(request.request_id)
    assert state.decision is not None and state.decision.by == "expiry"
    assert getattr(state.decision.decision, "reason", None) == "finance did not set a limit in time"


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        ({"action": "deny"}, "a workflow's input waits for its answer"),
        ({"ttl_seconds": 60, "on_timeout": {"action": "reject"}}, "an input has nothing to reject"),
        ({"notify": ["slack:#finance"]}, "a workflow's input is answered"),
        ({"when": "args.amount > 1"}, "args.amount is not an argument"),
    ],
)
def test_what_an_input_cannot_take_is_a_config_error(tmp_path: Path, rule: dict[str, Any], error: str) -> None:
    with pytest.raises(Exception, match=error):
        app_at(tmp_path, [T0], rule)


async def test_every_interface_says_why_the_input_asked(tmp_path: Path) -> None:
    async with app_at(tmp_path, [T0], LARGE) as app:
        paused = await app.run("250", agent="limits", principal="alice")
    [request] = paused.requests
    assert isinstance(request, InputRequest)
    view = pause_view(paused.run_id, [request])
    assert view is not None
    [entry] = sayso_payload(view)["requests"]
    assert (entry.get("why"), entry.get("rule")) == (WHY, "large-limits")
    shown = interrupt(request)
    assert shown.metadata is not None and shown.metadata["why"] == WHY
    assert "Asked because a limit for 250 (rule large-limits)." in elicitation_for(request).message
