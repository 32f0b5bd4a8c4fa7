"""`sayso serve` checks each agent's MCP bindings against its servers at start (docs/guides/mcp.md).

A binding naming a tool its server does not offer stops it with the error that names the tool and what
the server offers; a server it cannot reach yet is warned about, and serving goes on.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from ..conftest import LiveServer, free_port
from .conftest import ElicitServer
from .test_elicitation_cli import write_config


def bind(config: Path, tools: list[str], url: str | None = None) -> Path:
    """The test config with its agent binding `tools` (on the server at `url`, if given)."""
    spec = yaml.safe_load(config.read_text())
    spec["agents"]["host"]["mcp"][0]["tools"] = tools
    if url is not None:
        spec["mcp_servers"]["booking"]["url"] = url
    config.write_text(yaml.safe_dump(spec))
    return config


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SAYSO_")}


def test_a_binding_naming_a_tool_the_server_lacks_stops_serve_at_start(
    tmp_path: Path, elicit_server: ElicitServer
) -> None:
    config = bind(write_config(tmp_path, elicit_server, replay=False), ["book_table", "nope_tool"])
    done = subprocess.run(
        [sys.executable, "-m", "sayso", "serve", str(config), "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
        env=env(),
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "binds 'nope_tool' on MCP server 'booking', which does not offer it" in done.stderr
    assert "book_table" in done.stderr  # what it does offer


def test_a_server_not_reachable_at_start_is_warned_about_and_serve_goes_on(
    tmp_path: Path, elicit_server: ElicitServer
) -> None:
    down = f"http://127.0.0.1:{free_port()}/mcp"
    config = bind(write_config(tmp_path, elicit_server, replay=False), ["book_table"], url=down)
    server, process = LiveServer.process([str(config)], env=env(), stderr=subprocess.PIPE)
    with server.client() as client:
        assert client.get("/healthz").status_code == 200
    server.stop()
    assert process.stderr is not None
    with process.stderr:
        said = process.stderr.read()
    assert "could not check the MCP tools of agent 'host'" in said
    assert "Traceback" not in said
