"""AG-UI with the real `@ag-ui/client` HttpAgent, run by node against a real server on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sayso import Sayso

from ..conftest import LiveServer
from .conftest import example_config, protocol_app

NODE_DIR = Path(__file__).parent / "node"
SCRIPT = NODE_DIR / "ag_ui_client.mjs"

needs_node = pytest.mark.skipif(
    shutil.which("node") is None or not (NODE_DIR / "node_modules" / "@ag-ui" / "client").is_dir(),
    reason="needs node and `npm ci --prefix tests/protocols/node` (@ag-ui/client)",
)


@pytest.fixture
def live_server(sandbox: Path) -> Iterator[LiveServer]:
    """The example with A2A and AG-UI on a real port: node cannot reach an in-process app."""
    server = LiveServer.in_thread(protocol_app(Sayso(example_config())))
    yield server
    server.stop()


@needs_node
def test_the_ag_ui_http_agent_pauses_on_an_interrupt_and_resumes_with_an_approval(
    live_server: LiveServer, sandbox: Path
) -> None:
    """The official HttpAgent sees the interrupt, resumes it with an approval, and the call runs."""
    server = live_server
    done = subprocess.run(
        ["node", str(SCRIPT), f"{server.base_url}/ag-ui/files", "thr-node"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=NODE_DIR,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert first["events"][0] == "RUN_STARTED" and first["events"][-1] == "RUN_FINISHED"
    (interrupt,) = first["outcome"]["interrupts"]
    assert interrupt["reason"] == "sayso:approval"
    assert interrupt["metadata"]["tool_input"] == {"name": "notes.txt"}
    assert "expiresAt" not in interrupt
    assert second["outcome"] == {"type": "success"}
    assert "TOOL_CALL_RESULT" in second["events"] and "TEXT_MESSAGE_CONTENT" in second["events"]
    assert not (sandbox / "notes.txt").exists()
