"""Escalation steps as the run's workflow timers (issue 26, point 1; the steps are issue 25's).

No front sweeps here (a `Sayso` front runs no expiry sweep): every step and the timeout fire from the
run's workflow on a worker, through sayso's own escalate and expire verbs, so they are audited and
announced in the outbox exactly as in one process. The steps are seconds apart so the tests are quick.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import yaml
from temporalio.client import Client, WorkflowExecutionStatus

from sayso import Approve, Sayso

from .conftest import Project

TOOLS = '''
import os

def refund(order: str, amount: int) -> str:
    """Refund an order."""
    with open(os.environ["MARKER"], "a") as marker:
        marker.write(order + "\\n")
    return f"refunded {amount} on {order}"
'''

SCRIPT = {
    "name": "refunds",
    "rules": [
        {"user": r"^refund (?P<o>\S+) (?P<a>\d+)$", "call": "refund", "args": {"order": "{o}", "amount": "{a}"}},
        {"tool": "refund", "reply": "model read: {result}"},
    ],
}


def escalating(temporal: Project, folder: Path, rule: dict[str, Any], **extra: Any) -> Path:
    """A Temporal-backed refund agent whose `refund` rule escalates as `rule` says (`extra`: more config)."""
    body = {
        "models": {"m": {"scripted": "script.yaml"}},
        "agents": {
            "shop": {
                "model": "m",
                "tools": ["refund_tools:refund"],
                "interrupt": {"tools": [{"name": "refund", **rule}]},
            }
        },
        **extra,
    }
    # The tools' module has a name of its own: the front imports it.
    files = {"refund_tools.py": TOOLS, "script.yaml": yaml.safe_dump(SCRIPT)}
    return temporal.config(folder, yaml.safe_dump(body), files)


async def escalated(app: Sayso) -> list[dict[str, Any]]:
    return [dict(r.body) for r in await app.audit_log() if r.body["event"] == "escalated"]


async def activities_run(address: str, workflow_id: str, name: str) -> int:
    """How many activities named `name` the workflow's history scheduled (as the Temporal UI shows it)."""
    history = await (await Client.connect(address)).get_workflow_handle(workflow_id).fetch_history()
    return sum(
        1
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
        and event.activity_task_scheduled_event_attributes.activity_type.name == name
    )


async def test_steps_fire_in_order_as_workflow_timers_then_on_timeout_rejects(
    tmp_path: Path, temporal: Project
) -> None:
    """Two steps fire, each once and in order (audit and outbox), then `on_timeout` rejects: the model reads it."""
    rule = {
        "rule": "refunds-slow",
        "approvers": ["bob"],  # a routed rule: the second step widens it
        "escalate": [{"after": "1s", "remind": True}, {"after": "2s", "add_approvers": ["cfo"]}],
        "on_timeout": {"after": "3s", "action": "reject", "reason": "nobody approved in time"},
    }
    principals = [{"name": n, "token": f"{n}-token"} for n in ("bob", "cfo")]
    config = escalating(temporal, tmp_path, rule, principals=principals)
    temporal.workers(config).start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("refund o-1 250")
        assert paused.status == "paused"
        with anyio.fail_after(30):
            while (now := await front.result(paused.run_id)).status in ("paused", "running"):
                await anyio.sleep(0.1)
        assert (now.status, now.output) == ("completed", "model read: Declined: nobody approved in time")
        steps = await escalated(front)
        notices = await front.claim_escalations("test")
        state = await front.request(paused.requests[0].request_id)
        fired = await activities_run(temporal.address, f"sayso-shop-{paused.run_id}", "sayso.escalate")
    assert [(e["step"], e["remind"], e["add_approvers"]) for e in steps] == [(0, True, []), (1, False, ["cfo"])]
    assert [n.step for n in notices] == [0, 1]
    assert state is not None and state.decision is not None and state.decision.by == "expiry"
    assert fired == 2  # one timer per step, each fired once
    assert not temporal.marker.exists()


async def test_a_step_due_while_no_worker_ran_fires_on_the_next_and_a_decision_cancels_the_rest(
    tmp_path: Path, temporal: Project
) -> None:
    """kill -9 the only worker, let the first step come due, start another: it fires; the approval ends the run
    and its workflow, so the second step (due much later) never fires."""
    rule = {"rule": "refunds-slow", "escalate": [{"after": "1s", "remind": True}, {"after": "10m", "remind": True}]}
    config = escalating(temporal, tmp_path, rule)
    workers = temporal.workers(config)
    first = workers.start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("refund o-2 300")
        [request] = paused.requests
        workers.kill(first)
        with anyio.fail_after(10):
            while time.time() < request.created_at + 1.5:
                await anyio.sleep(0.1)  # the first step comes due while no worker runs
        assert await escalated(front) == []
        workers.start()
        with anyio.fail_after(30):
            while not await escalated(front):
                await anyio.sleep(0.1)
        done = await front.decide(request.request_id, Approve())
        assert (done.run.status, done.run.output) == ("completed", "model read: refunded 300 on o-2")
        workflow_id = f"sayso-shop-{paused.run_id}"
        handle = (await Client.connect(temporal.address)).get_workflow_handle(workflow_id)
        with anyio.fail_after(30):
            assert await handle.result() == "completed"
        assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
        steps = await escalated(front)
        fired = await activities_run(temporal.address, workflow_id, "sayso.escalate")
    assert [e["step"] for e in steps] == [0]
    assert fired == 1
    assert temporal.marker.read_text().split() == ["o-2"]
