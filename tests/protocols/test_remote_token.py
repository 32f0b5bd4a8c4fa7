"""A remote delegate whose server signs callers in: the parent sends the token its `token_env` holds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from sayso import Approve, Config, ConfigError, InputRequest, InvalidDecision, Provide, Sayso
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


COUNTING = """
from sayso.workflows import RequestInput


def ask():
    schema = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}
    got = yield RequestInput("How many sheep?", payload={"field": "north"}, response_schema=schema)
    return "counted " + ",".join(str(i) for i in range(got["count"]))
"""


async def test_a_remote_workflows_input_is_asked_with_its_schema_and_a_wrong_answer_stays_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A remote sayso workflow asks for input: the calling sayso's request is that input, with its message, payload
    and JSON Schema, so a wrong answer is refused here naming the field (the same request still open) rather than
    taken, refused by the remote agent and asked again under a new id; the right one goes down and the run ends."""
    monkeypatch.delenv("SAYSO_STORE", raising=False)
    (tmp_path / "counting.py").write_text(COUNTING)
    child_config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'child.db'}",
            "agents": {"idle": {"model": "test"}},
            "workflows": {"count": {"nodes": {"ask": "counting:ask"}, "edges": [["START", "ask"]]}},
            "base_dir": str(tmp_path),
        }
    )
    server = LiveServer.in_thread(protocol_app(Sayso(child_config)), port=free_port())
    try:
        parent = {
            "store": f"sqlite:///{tmp_path / 'parent.db'}",
            "agents": {"coordinator": {"model": "c", "delegates": [{"a2a": f"{server.base_url}/a2a/count"}]}},
        }
        model = tool_model(verbs(count=("count", "task")), read="count said: {result}")
        async with Sayso(Config.model_validate(parent), models={"c": model}) as sayso:
            paused = await sayso.run("count sheep", agent="coordinator")
            [asked] = paused.requests
            assert isinstance(asked, InputRequest), asked
            assert (asked.message, asked.payload) == ("How many sheep?", {"field": "north"})
            assert asked.response_schema["properties"] == {"count": {"type": "integer"}}
            with pytest.raises(InvalidDecision, match="count"):
                await sayso.decide(asked.request_id, Provide(value={"count": "abc"}))
            assert [r.request_id for r in (await sayso.result(paused.run_id)).requests] == [asked.request_id]
            done = await sayso.decide(asked.request_id, Provide(value={"count": 3}))
    finally:
        server.stop()
    assert done.run.status == "completed" and done.run.output is not None
    assert done.run.output.startswith("count said: counted 0,1,2")
