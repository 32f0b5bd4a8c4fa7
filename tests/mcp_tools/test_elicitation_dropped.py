"""A form whose call the MCP server dropped (docs/guides/mcp.md#when-a-server-asks-the-person): the server stops
while its pushed form waits for the person, so no answer could reach it any more.

The runtime notices the call ended, closes the form as cancelled, and carries the run on (the model reads that
the call did not complete); an answer that comes later is refused rather than recorded and thrown away.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

from sayso import Accept, CallEnded, Cancel, ElicitationRequest, RunResult, Sayso

from .conftest import ELICIT_SERVER, MakeMcpApp, running_elicit_server
from .test_elicitation import PARTY, model

HOST = {"host": {"mcp": [{"server": "booking", "tools": ["book_table"]}]}}


async def closed_and_carried_on(app: Sayso, paused: RunResult, stop: object) -> RunResult:
    """Stop the server while the form waits; the form closes as cancelled and the run carries on."""
    [form] = paused.requests
    assert isinstance(form, ElicitationRequest) and form.needs_holder
    assert callable(stop)
    stop()
    with anyio.fail_after(30):
        while (await app.request(form.request_id)).decision is None:
            await anyio.sleep(0.1)
    closed = await app.request(form.request_id)
    assert closed.decision is not None
    assert (closed.decision.decision, closed.decision.by) == (Cancel(), "system")
    assert (await app.inbox()).requests == []
    with anyio.fail_after(30):
        while (ended := await app.result(paused.run_id)).status in ("paused", "running"):
            await anyio.sleep(0.1)
    with pytest.raises(CallEnded, match="the call that asked this has ended"):
        await app.decide(form.request_id, Accept(content=PARTY))
    return ended


async def test_a_form_whose_stdio_server_died_closes_as_cancelled_and_the_model_reads_the_call_failed(
    make_mcp_app: MakeMcpApp, tmp_path: Path
) -> None:
    pidfile = tmp_path / "server.pid"
    server = {"command": sys.executable, "args": [str(ELICIT_SERVER), "stdio", str(pidfile)], "session": "legacy"}
    app = make_mcp_app({"booking": server}, HOST, model=model())
    async with app:
        paused = await app.run("book fri")
        pid = int(pidfile.read_text())
        ended = await closed_and_carried_on(app, paused, lambda: os.kill(pid, signal.SIGKILL))
    assert ended.status == "completed"
    assert ended.output is not None
    assert ended.output.startswith("Cancelled: the MCP server ended the call that asked the person this")
    assert "did not complete" in ended.output


async def test_a_form_whose_http_server_stopped_closes_as_cancelled(make_mcp_app: MakeMcpApp) -> None:
    """Over HTTP the same holds; the run then ends as its server is still down (it cannot list its tools)."""
    with running_elicit_server() as (server, process):
        app = make_mcp_app({"booking": {"url": server.mcp_url, "session": "legacy"}}, HOST, model=model())

        def stop() -> None:
            process.kill()
            process.wait(timeout=10)

        async with app:
            paused = await app.run("book fri")
            ended = await closed_and_carried_on(app, paused, stop)
    assert ended.status == "failed"
    assert ended.error is not None and "connect" in ended.error


async def test_a_late_answer_to_a_form_its_server_gave_up_on_says_the_agent_went_on_without_it(
    make_mcp_app: MakeMcpApp,
) -> None:
    """The server stopped waiting and answered the call itself: the model read that answer, not a failure, and the
    refusal of a late answer says what happened without claiming the agent was told the call did not complete."""
    server = {
        "command": sys.executable,
        "args": [str(Path(__file__).parent / "impatient_server.py")],
        "session": "legacy",
    }
    app = make_mcp_app({"booking": server}, HOST, model=model())
    async with app:
        paused = await app.run("book fri")
        [form] = paused.requests
        with anyio.fail_after(30):
            while (ended := await app.result(paused.run_id)).status in ("paused", "running"):
                await anyio.sleep(0.1)
        with pytest.raises(CallEnded) as refused:
            await app.decide(form.request_id, Accept(content={"value": "Ada"}))
    assert ended.status == "completed" and ended.output is not None
    assert "the server gave up waiting: nothing booked" in ended.output
    said = str(refused.value)
    assert "so no answer can reach it" in said and "the agent went on without this answer" in said
    assert "did not complete" not in said
