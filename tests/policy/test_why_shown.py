"""Why a request asked (`asked because amount 250 > 100 (rule refunds-large)`) shows on every interface."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from sayso import Sayso
from sayso.cli import app as cli
from sayso.protocols.a2a import pause_view
from sayso.protocols.a2a._mapping import request_payload, sayso_payload
from sayso.protocols.ag_ui._mapping import interrupt
from sayso.protocols.mcp import elicitation_for
from sayso.server import create_app

from ..conftest import InProcess, approvals
from .conftest import WriteConfig

WHY = "asked because amount 250 > 100 (rule refunds-large)"


async def _paused(path: Path) -> str:
    async with Sayso.from_yaml(path) as app:
        paused = await app.run("refund o-1 250")
    [request] = approvals(paused.requests)
    return request.request_id


async def test_rest_says_why(write_config: WriteConfig) -> None:
    path = write_config()
    request_id = await _paused(path)
    served = await InProcess(app=create_app(Sayso.from_yaml(path)), sayso=Sayso.from_yaml(path)).start()
    try:
        async with served.client() as client:
            one = (await client.get(f"/v1/requests/{request_id}")).json()["request"]
            inbox = (await client.get("/v1/requests")).json()
    finally:
        await served.stop()
    assert (one["why"], one["rule"], one["asked_because"]) == (WHY, "refunds-large", "amount 250 > 100")
    assert [r["why"] for r in inbox["requests"]] == [WHY]


def test_the_cli_inbox_says_why(write_config: WriteConfig) -> None:
    path = write_config()
    asyncio.run(_paused(path))
    shown = CliRunner().invoke(cli, ["inbox", str(path)], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    assert WHY in shown.output
    listed = CliRunner().invoke(cli, ["inbox", str(path), "--json"])
    assert json.loads(listed.output)["requests"][0]["why"] == WHY


async def test_a2a_ag_ui_and_mcp_payloads_say_why(write_config: WriteConfig) -> None:
    async with Sayso.from_yaml(write_config()) as app:
        paused = await app.run("refund o-1 250")
    [request] = approvals(paused.requests)
    view = pause_view(paused.run_id, [request])
    assert view is not None
    [entry] = sayso_payload(view)["requests"]
    assert (entry.get("why"), entry.get("rule")) == (WHY, "refunds-large")
    assert request_payload(view)["type"] == "tool_approval_request"
    shown = interrupt(request)
    assert shown.metadata is not None and shown.metadata["why"] == WHY
    assert "Asked because amount 250 > 100 (rule refunds-large)." in elicitation_for(request).message
