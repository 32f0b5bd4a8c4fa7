"""`mcp-server-git` (PyPI) as a tool source over stdio: status runs freely, a commit waits for a person."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sayso import AgentConfig, ApprovalRequest, Approve, Config, McpStdioServer, Sayso, mcp_bindings

from ..conftest import script
from .conftest import git_server


def commits(repo: Path) -> list[str]:
    """The repository's commit subjects, newest first (none before the first commit)."""
    out = subprocess.run(["git", "log", "--format=%s"], cwd=repo, capture_output=True, text=True)
    return out.stdout.split("\n")[:-1] if out.returncode == 0 else []


async def test_git_status_runs_freely_and_a_commit_waits_for_approval(repo: Path, tmp_path: Path) -> None:
    """Bound through the Python API (filter + approval list), `git_status` answers at once and `git_commit` pauses."""
    rules = [
        {"user": "^status$", "call": "git_status", "args": {"repo_path": str(repo)}},
        {"user": r"^commit (?P<m>.+)$", "call": "git_commit", "args": {"repo_path": str(repo), "message": "{m}"}},
        {"tool": "git_status", "result": "(?s)(?P<r>.*)", "reply": "status: {r}"},
        {"tool": "git_commit", "reply": "commit: {result}"},
    ]
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
    async with Sayso(config, models={"m": script(*rules)}) as app:
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
