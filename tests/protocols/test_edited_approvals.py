"""An edited approval runs the edit, on every interface (issue 22 ¶1).

The edit is compared with the call about to run as the tool validated both: an approved `30`
for a `float` parameter is the `30.0` the call runs with, defaults the person left out are
filled in on both sides. A call that really no longer matches what was approved is refused,
and the run says so plainly: `failed`, a non-zero exit code, an error in the transcript.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sayso import Approve, Sayso, load_config
from sayso.cli import app as cli

from ..conftest import InProcess
from . import transfer_tools
from .a2a_helpers import hitl, send, task_of, user_message
from .conftest import protocol_app
from .test_ag_ui import finished, interrupt_of, post, resume, run_input, user

SAYSO_KEY = "https://sayso.dev/extensions/requests/v1"

SCRIPT = """
name: bank
rules:
  - user: '^pay bob$'
    call: transfer
    args: {to: bob, amount: 30, account: main}
  - tool: transfer
    result: '(?s)(?P<r>.*)'
    reply: "Done: {r}"
fallback: "I only know: pay bob."
"""

CONFIG = """
store: sqlite:///sayso.db
models:
  m: {scripted: script.yaml}
agents:
  files:
    model: m
    tools: [tests.protocols.transfer_tools:transfer]
    interrupt:
      tools: [{name: transfer, subject: "tests.protocols.transfer_tools:account_owner"}]
entry: files
"""

RAN_WITH = {
    "to": "bob",
    "amount": 30.0,
    "account": "main",
    "count": 1,
    "urgent": False,
    "memo": "rent",
    "tags": None,
    "address": None,
}
"""What the proposed call runs with, as the tool validated it."""

EDITS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # id: (the edit as the person sends it, what the tool must run with)
    "whole-float-only-account-changed": (
        {"to": "bob", "amount": 30, "account": "savings"},
        {**RAN_WITH, "account": "savings"},
    ),
    "fractional-float": ({"to": "bob", "amount": 30.5, "account": "main"}, {**RAN_WITH, "amount": 30.5}),
    "whole-float-written-as-float": ({"to": "bob", "amount": 45.0}, {**RAN_WITH, "amount": 45.0}),
    "int": ({"to": "bob", "amount": 30, "count": 3}, {**RAN_WITH, "count": 3}),
    "bool": ({"to": "bob", "amount": 30, "urgent": True}, {**RAN_WITH, "urgent": True}),
    "none": ({"to": "bob", "amount": 30, "memo": None}, {**RAN_WITH, "memo": None}),
    "defaults-filled-in": ({"to": "bob", "amount": 12}, {**RAN_WITH, "amount": 12.0}),
    "nested-object": (
        {"to": "bob", "amount": 30, "address": {"city": "Zürich"}},
        {**RAN_WITH, "address": {"city": "Zürich", "zip": None}},
    ),
    "list": ({"to": "bob", "amount": 30, "tags": ["rent", "märz"]}, {**RAN_WITH, "tags": ["rent", "märz"]}),
    "unicode": ({"to": "Zoë 🚀 李", "amount": 30}, {**RAN_WITH, "to": "Zoë 🚀 李"}),
}
CASES = [pytest.param(edit, ran, id=name) for name, (edit, ran) in EDITS.items()]


@pytest.fixture
def bank(tmp_path: Path) -> Iterator[Path]:
    """A config whose agent `files` pays through `transfer`, gated; the transfers that ran are cleared after."""
    (tmp_path / "script.yaml").write_text(SCRIPT)
    config = tmp_path / "sayso.yaml"
    config.write_text(CONFIG)
    transfer_tools.RAN.clear()
    transfer_tools.OWNERS.clear()
    yield config
    transfer_tools.RAN.clear()
    transfer_tools.OWNERS.clear()


def ran_as_validated(expected: dict[str, Any]) -> None:
    """Exactly one transfer ran, with these arguments, and the amount as the float the tool declares."""
    assert transfer_tools.RAN == [expected]
    assert type(transfer_tools.RAN[0]["amount"]) is float


async def served(config: Path) -> InProcess:
    sayso = Sayso(load_config(config))
    return await InProcess(app=protocol_app(sayso), sayso=sayso).start()


@pytest.mark.parametrize(("edit", "ran"), CASES)
async def test_python_an_edited_approval_runs_the_edit(bank: Path, edit: dict[str, Any], ran: dict[str, Any]) -> None:
    async with Sayso(load_config(bank)) as app:
        paused = await app.run("pay bob")
        done = await app.decide(paused.requests[0].request_id, Approve(edited_args=edit))
    assert done.run.status == "completed", done.run.error
    assert done.run.output == f"Done: sent {ran['amount']!r} to {ran['to']} from {ran['account']}"
    ran_as_validated(ran)


@pytest.mark.parametrize(("edit", "ran"), CASES)
async def test_rest_an_edited_approval_runs_the_edit(bank: Path, edit: dict[str, Any], ran: dict[str, Any]) -> None:
    server = await served(bank)
    try:
        async with server.client() as client:
            run = (await client.post("/v1/runs", json={"message": "pay bob"})).json()
            decision = {"kind": "approve", "edited_args": edit}
            done = await client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json=decision)
            thread = (await client.get(f"/v1/threads/{run['thread_id']}")).json()
    finally:
        await server.stop()
    assert done.status_code == 200, done.text
    assert done.json()["run"]["status"] == "completed"
    ran_as_validated(ran)
    [line] = [e for e in thread["transcript"] if e["role"] == "decision"]
    assert line["decision"]["decision"] == "approve"


@pytest.mark.parametrize(("edit", "ran"), CASES)
async def test_a2a_an_edited_approval_runs_the_edit(bank: Path, edit: dict[str, Any], ran: dict[str, Any]) -> None:
    server = await served(bank)
    try:
        async with server.client() as client:
            task = task_of(await send(client, user_message("pay bob")))
            tool_id = hitl(task["status"]["message"])["tools"][0]["id"]
            payload = {"type": "tool_approval_response", "approvals": [{"id": tool_id, "approved": True}]}
            message = user_message(task_id=task["id"], context_id=task["contextId"], payload=payload)
            message["metadata"][SAYSO_KEY] = {"approvals": {tool_id: {"edited_args": edit}}}
            done = task_of(await send(client, message))
    finally:
        await server.stop()
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    ran_as_validated(ran)


@pytest.mark.parametrize(("edit", "ran"), CASES)
async def test_ag_ui_an_edited_approval_runs_the_edit(bank: Path, edit: dict[str, Any], ran: dict[str, Any]) -> None:
    server = await served(bank)
    try:
        pending = interrupt_of(await post(server, run_input("thr-edit", [user("pay bob")])))
        payload = {"status": "approved", "scope": "once", "tool_input": edit}
        events = await post(
            server, resume("thr-edit", [{"interruptId": pending.id, "status": "resolved", "payload": payload}])
        )
    finally:
        await server.stop()
    outcome = finished(events).outcome
    assert outcome is not None and outcome.type == "success"
    ran_as_validated(ran)


runner = CliRunner()


def sayso(*args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(cli, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize(("edit", "ran"), CASES)
def test_cli_an_edited_approval_runs_the_edit(bank: Path, edit: dict[str, Any], ran: dict[str, Any]) -> None:
    code, paused = sayso("run", str(bank), "pay bob")
    assert code == 0 and paused["status"] == "paused"
    code, done = sayso("decide", str(bank), paused["requests"][0]["id"], "approve", "--args", json.dumps(edit))
    assert (code, done["status"]) == (0, "completed"), done
    ran_as_validated(ran)


# --- a call that really no longer matches what was approved


def test_cli_a_refused_approved_call_fails_the_run_and_exits_non_zero(bank: Path) -> None:
    """The account changed hands between the approval and the run: nothing runs, and the run says so plainly."""
    code, paused = sayso("run", str(bank), "pay bob")
    # The owner look-ups after asking: when checking the edit, then at the moment of running.
    transfer_tools.OWNERS.extend(["ada", "bob"])
    edit = json.dumps({"to": "bob", "amount": 30, "account": "savings"})
    code, done = sayso("decide", str(bank), paused["requests"][0]["id"], "approve", "--args", edit)
    assert transfer_tools.RAN == []
    assert code == 1
    assert done["status"] == "failed"
    assert "no longer matches what was approved" in done["error"] and "bob's accounts" in done["error"]


async def test_a_refused_approved_call_is_plain_in_the_result_and_the_transcript(bank: Path) -> None:
    server = await served(bank)
    try:
        async with server.client() as client:
            run = (await client.post("/v1/runs", json={"message": "pay bob"})).json()
            transfer_tools.OWNERS.extend(["ada", "bob"])
            decision = {"kind": "approve", "edited_args": {"to": "bob", "amount": 30, "account": "savings"}}
            done = (await client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json=decision)).json()
            thread = (await client.get(f"/v1/threads/{run['thread_id']}")).json()
            audit = (await client.get("/v1/audit")).json()
            # The thread is still usable: the next message is answered.
            after = (await client.post("/v1/runs", json={"message": "hello", "thread_id": run["thread_id"]})).json()
    finally:
        await server.stop()
    assert transfer_tools.RAN == []
    assert done["run"]["status"] == "failed"
    assert "transfer: the call no longer matches what was approved" in done["run"]["error"]
    [error] = [e for e in thread["transcript"] if e["role"] == "error"]
    assert "no longer matches what was approved" in error["text"]
    events = [r["body"]["event"] for r in audit["records"]]
    assert "refused" in events and "executed" not in events and "outcome_unknown" not in events
    assert after["status"] == "completed" and after["output"] == "[script] I only know: pay bob."
