"""A remote delegate whose server signs callers in: the parent sends the token its `token_env` holds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from sayso import Approve, Config, ConfigError, Sayso
from sayso.cli import app as cli

from ..conftest import LiveServer, free_port
from ..models import tool_model, verbs
from .conftest import example_config, protocol_app, two_deletes


@pytest.fixture
def child(tmp_path: Path, sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The file manager on a sayso of its own that takes only the parent's token; its URL."""
    monkeypatch.delenv("SAYSO_STORE", raising=False)
    principals = [{"name": "parent", "token": "child-secret"}]
    config = example_config(store=f"sqlite:///{tmp_path / 'child.db'}", principals=principals)
    server = LiveServer.in_thread(protocol_app(Sayso(config, models={"demo": two_deletes()})), port=free_port())
    yield server.base_url
    server.stop()


def parent_config(tmp_path: Path, child: str) -> dict[str, object]:
    delegate = {"a2a": f"{child}/a2a/files", "name": "files", "token_env": "FILES_TOKEN"}
    return {
        "store": f"sqlite:///{tmp_path / 'parent.db'}",
        "agents": {"coordinator": {"model": "c", "delegates": [delegate]}},
        "base_dir": str(tmp_path),
    }


async def test_the_parent_signs_in_at_the_remote_agent_with_its_token_env(
    tmp_path: Path, child: str, sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child's pause reaches the parent and the parent's approval goes down, both as the child's `parent`."""
    monkeypatch.setenv("FILES_TOKEN", "child-secret")
    model = tool_model(verbs(tidy=("files", "task")), read="files said: {result}")
    async with Sayso(Config.model_validate(parent_config(tmp_path, child)), models={"c": model}) as sayso:
        paused = await sayso.run("tidy delete notes.txt", agent="coordinator")
        assert paused.status == "paused", paused
        [request] = paused.requests
        seen = httpx.get(f"{child}/v1/requests", headers={"Authorization": "Bearer child-secret"}, timeout=30).json()
        assert [r["tool_name"] for r in seen["requests"]] == ["delete_file"]  # the child's own, its caller `parent`
        done = await sayso.decide(request.request_id, Approve())
    assert done.run.status == "completed" and done.run.output == "files said: Done: Deleted notes.txt."
    assert not (sandbox / "notes.txt").exists()


def test_an_unset_token_env_is_refused_at_start_and_warned_of_by_check(
    tmp_path: Path, child: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FILES_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="FILES_TOKEN is not set"):
        Sayso(Config.model_validate(parent_config(tmp_path, child)), models={"c": tool_model(verbs())})
    path = tmp_path / "sayso.yaml"
    path.write_text(json.dumps(parent_config(tmp_path, child) | {"models": {"c": "test"}}))
    checked = CliRunner().invoke(cli, ["check", str(path)])
    assert "agents.coordinator.delegates[0].token_env" in checked.output
    assert "the environment variable FILES_TOKEN is not set" in checked.output


async def test_a_wrong_token_fails_the_delegate_as_refused_by_the_remote_agent(
    tmp_path: Path, child: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child turns a wrong token away: the parent's model reads that the remote agent refused the task (it
    started nothing there), not a raw client error nor "outcome unknown"."""
    monkeypatch.setenv("FILES_TOKEN", "not-the-secret")
    model = tool_model(verbs(tidy=("files", "task")), read="files said: {result}")
    async with Sayso(Config.model_validate(parent_config(tmp_path, child)), models={"c": model}) as sayso:
        done = await sayso.run("tidy delete notes.txt", agent="coordinator")
    assert done.status == "completed" and done.output is not None
    assert done.output.startswith(f"files said: Error: the delegate files failed: the remote agent at {child}/")
    assert done.output.endswith("/a2a/files refused the task: HTTP 401 Unauthorized")
    assert "A2AClientError" not in done.output
    seen = httpx.get(f"{child}/v1/requests", headers={"Authorization": "Bearer child-secret"}, timeout=30).json()
    assert seen["requests"] == []
