"""A workflow's input that expired, answered late over AG-UI: the refusal says the interrupt expired.

The expiry sweep closes the input and the workflow goes on without it (here it fails, as a node that does not
catch `InputSkipped` does), so nothing waits on the thread when the late resume comes. The clock is the test's.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from sayso import Config, Sayso
from sayso.protocols.ag_ui import ag_ui_router
from sayso.server import create_app

from ..conftest import InProcess

T0 = 1_900_000_000.0

NODES = """\
from sayso.workflows import RequestInput


def ask():
    answer = yield RequestInput("How many?", response_schema=int)
    return f"{answer} it is"
"""


async def ag_ui(server: InProcess, body: dict[str, Any]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async with server.client() as client, client.stream("POST", "/ag-ui/count", json=body) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    return events


def run_input(**extra: Any) -> dict[str, Any]:
    message = {"id": "m1", "role": "user", "content": "go"}
    base: dict[str, Any] = {"threadId": "thr-late", "runId": uuid.uuid4().hex, "state": None, "tools": []}
    return {**base, "context": [], "messages": [message], "forwardedProps": None, **extra}


async def test_a_late_answer_to_an_expired_input_is_told_it_expired(tmp_path: Path) -> None:
    (tmp_path / "late_nodes.py").write_text(NODES)
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "base_dir": tmp_path,
            "agents": {"helper": {"model": "test"}},
            "workflows": {
                "count": {"nodes": {"ask": "late_nodes:ask"}, "edges": [["START", "ask"]], "ttl_seconds": 60}
            },
        }
    )
    now = [T0]
    sayso = Sayso(config, clock=lambda: now[0])
    app = create_app(sayso, routers=[ag_ui_router(sayso)], expire_every_seconds=None)
    server = await InProcess(app=app, sayso=sayso).start()
    try:
        [form] = (await ag_ui(server, run_input()))[-1]["outcome"]["interrupts"]
        now[0] = T0 + 61
        await sayso.expire()
        late = {"interruptId": form["id"], "status": "resolved", "payload": 3}
        refused = (await ag_ui(server, run_input(resume=[late])))[-1]
    finally:
        await server.stop()
    assert refused["type"] == "RUN_ERROR"
    assert refused["message"] == (
        f"interrupt {form['id']!r} expired before it was answered; nothing waits on thread 'thr-late'"
    )
