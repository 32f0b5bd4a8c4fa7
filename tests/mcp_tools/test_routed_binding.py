"""A routed MCP binding (docs/guides/routing.md#routed-mcp-bindings): `mcp-server-git`'s commit needs two of `ops`."""

from __future__ import annotations

from pathlib import Path

import pytest

from sayso import Approve, Config, NotAllowed, Sayso

from ..models import tool_model
from .conftest import git_server
from .test_git import commits


async def test_a_bindings_approvers_decide_its_gated_calls(repo: Path, tmp_path: Path) -> None:
    model = tool_model(
        lambda said: ("git_commit", {"repo_path": str(repo), "message": said.removeprefix("commit ")}),
        read="commit: {result}",
    )
    binding = {"server": "git", "tools": ["git_commit"], "require_approval": True}
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "principals": [{"name": n} for n in ("alice", "bob", "carol")],
            "groups": {"ops": ["bob", "carol"]},
            "agents": {"dev": {"model": "m", "mcp": [{**binding, "approvers": ["ops"], "approvals_required": 2}]}},
            "mcp_servers": {"git": git_server(repo)},
            "base_dir": tmp_path,
        }
    )
    async with Sayso(config, models={"m": model}) as app:
        paused = await app.run("commit Add the readme", principal="alice")
        [request] = paused.requests
        assert request.routing is not None and request.routing.rule == "mcp:git"
        with pytest.raises(NotAllowed, match="'alice' is not an approver of this request"):
            await app.decide(request.request_id, Approve(), principal="alice")
        first = await app.decide(request.request_id, Approve(), principal="bob")
        assert first.quorum is not None and first.quorum.text == "1 of 2, waiting for ops" and commits(repo) == []
        done = await app.decide(request.request_id, Approve(), principal="carol")
    assert done.run.status == "completed" and commits(repo) == ["Add the readme"]
