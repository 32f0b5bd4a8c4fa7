"""`mcp-server-git` (PyPI) as a tool source over stdio: status runs freely, a commit waits for a person."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from sayso import AgentConfig, ApprovalRequest, Approve, Config, McpStdioServer, Sayso, load_config, mcp_bindings
from sayso.cli import app

from ..models import tool_model
from .conftest import git_server


def commits(repo: Path) -> list[str]:
    """The repository's commit subjects, newest first (none before the first commit)."""
    out = subprocess.run(["git", "log", "--format=%s"], cwd=repo, capture_output=True, text=True)
    return out.stdout.split("\n")[:-1] if out.returncode == 0 else []


async def test_git_status_runs_freely_and_a_commit_waits_for_approval(repo: Path, tmp_path: Path) -> None:
    """Bound through the Python API (filter + approval list), `git_status` answers at once and `git_commit` pauses."""

    def route(said: str) -> tuple[str, dict[str, Any]]:
        if said == "status":
            return "git_status", {"repo_path": str(repo)}
        return "git_commit", {"repo_path": str(repo), "message": said.removeprefix("commit ")}

    model = tool_model(route, read=lambda tool, result: f"{tool.removeprefix('git_')}: {result}")

    config = Config(
        store=f"sqlite:///{tmp_path / 'sayso.db'}",
        agents={
            "ops": AgentConfig(
                model="m", mcp=mcp_bindings("git", tools=["git_status", "git_commit"], require_approval=["git_commit"])
            )
        },
        mcp_servers={"git": McpStdioServer.model_validate(git_server(repo))},
        base_dir=tmp_path,
    )
    async with Sayso(config, models={"m": model}) as app:
        status = await app.run("status")
        assert status.status == "completed"
        assert status.output is not None and "README.md" in status.output and "Changes to be committed" in status.output

        paused = await app.run("commit Add the readme")
        assert paused.status == "paused"
        assert commits(repo) == []
        [request] = paused.requests
        assert isinstance(request, ApprovalRequest)
        assert request.tool_name == "git_commit"
        assert request.tool_info is not None and request.tool_info.destructive is False

        done = await app.decide(request.request_id, Approve())
    assert done.run.status == "completed"
    assert done.run.output is not None and done.run.output.startswith("commit: Changes committed successfully")
    assert commits(repo) == ["Add the readme"]


async def test_an_empty_tool_list_binds_every_tool_and_check_says_so(repo: Path, tmp_path: Path) -> None:
    """kagent's `tools: []` with `require_approval` binds every tool the server offers, each gated; `check` notes it."""
    (tmp_path / "script.yaml").write_text(
        f"""
rules:
  - {{user: "^status$", call: git_status, args: {{repo_path: "{repo}"}}}}
  - {{user: "^log$", call: git_log, args: {{repo_path: "{repo}"}}}}
  - {{tool: git_status, reply: "status done"}}
  - {{tool: git_log, reply: "log done"}}
"""
    )
    server = git_server(repo)
    file = tmp_path / "sayso.yaml"
    file.write_text(
        f"""
store: "sqlite:///{tmp_path / "sayso.db"}"
models:
  m: {{scripted: script.yaml}}
agents:
  ops:
    model: m
    mcp:
      - {{server: git, tools: [], require_approval: true}}
mcp_servers:
  git: {{command: "{server["command"]}", args: {json.dumps(server["args"])}}}
"""
    )
    # `sayso check` runs its own event loop (as every command does): from this test's loop, on a thread of its own
    checked = await asyncio.to_thread(CliRunner().invoke, app, ["check", str(file), "--json"])
    assert checked.exit_code == 0, checked.output
    [note] = json.loads(checked.stdout)["problems"]
    assert note["severity"] == "note"
    assert note["where"] == "agents.ops.mcp[0]"
    assert "covers all tools MCP server 'git' offers, each call waiting for a person" in note["message"]

    async with Sayso(load_config(file)) as sayso:
        for text, tool in [("status", "git_status"), ("log", "git_log")]:
            paused = await sayso.run(text)
            assert paused.status == "paused"
            [request] = paused.requests
            assert isinstance(request, ApprovalRequest) and request.tool_name == tool
            done = await sayso.decide(request.request_id, Approve())
            assert done.run.output == f"{text} done"
