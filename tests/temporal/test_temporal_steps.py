"""The step journal on Temporal: a step before an in-body approval runs once, whichever worker runs the body again.

A worker is sayso's own runtime, so `sayso.step` records in sayso's store exactly as in one process:
the body that runs again after the approval (here on another worker, the first killed with -9)
gets the recorded result back. A step is not an activity of its own: it runs inside the tool call's
activity (docs/guides/temporal.md#what-runs-where).
"""

from __future__ import annotations

from pathlib import Path

from sayso import Approve, Sayso

from .conftest import Project

TOOLS = '''
import os
import sayso
from pydantic_ai import RunContext
from sayso import RunDeps, require_approval


def charge_card(order: str) -> str:
    with open(os.environ["MARKER"], "a") as marker:
        marker.write(order + "\\n")
    return f"receipt-{order}"


async def refund(ctx: RunContext[RunDeps], order: str) -> str:
    """Charge, then ask before telling the customer."""
    receipt = await sayso.step(ctx, "charge", charge_card, order)
    require_approval(ctx, hint=f"Email the customer about {receipt}?")
    return f"emailed about {receipt}"
'''

SCRIPT = """
name: refunds
rules:
  - {user: '^refund (?P<o>\\S+)$', call: refund, args: {order: "{o}"}}
  - {tool: refund, reply: "model read: {result}"}
"""

BODY = """
models:
  demo: {scripted: script.yaml}
agents:
  refunds:
    model: demo
    tools: [refund_tools:refund]
"""


async def test_a_step_before_an_in_body_approval_runs_once_across_workers(tmp_path: Path, temporal: Project) -> None:
    """Charge, pause for approval, kill -9 the worker, approve: another worker finishes; the card was charged once."""
    config = temporal.config(tmp_path, BODY, {"refund_tools.py": TOOLS, "script.yaml": SCRIPT})
    pool = temporal.workers(config)
    first = pool.start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("refund o1")
        assert paused.status == "paused", paused
        pool.kill(first)
        pool.start()
        done = (await front.decide(paused.requests[0].request_id, Approve())).run
    assert (done.status, done.output) == ("completed", "model read: emailed about receipt-o1")
    assert temporal.marker.read_text().split() == ["o1"]
