"""kaboo's client, unmodified (seed 001): the real `@ag-ui/client` HttpAgent, run by node, drives the seed's flows
against sayso with `ag_ui.kaboo_compat` on: kaboo's reasons, questions as kaboo's `ask_user` browser tool,
remembered approvals kept by the host (`forwardedProps.kaboo_grants`), and `system_prompt` in agent config."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sayso import Config, Sayso, load_config

from ..conftest import LiveServer
from .conftest import EXAMPLE, protocol_app
from .test_ag_ui_node import NODE_DIR, needs_node

STEPS = NODE_DIR / "ag_ui_steps.mjs"
TEAM = Path(__file__).parents[2] / "examples" / "team" / "sayso.yaml"

Serve = Callable[[Config], LiveServer]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Serve a config on a real port of 127.0.0.1 (node cannot reach an in-process app)."""
    started: list[tuple[LiveServer, Sayso]] = []

    def start(config: Config) -> LiveServer:
        sayso = Sayso(config)
        server = LiveServer.in_thread(protocol_app(sayso))
        started.append((server, sayso))
        return server

    yield start
    for server, _ in started:
        server.stop()


def kaboo_files() -> Config:
    """The file manager as a kaboo config: the switch on, and kaboo's `system_prompt` for the instructions."""
    example = load_config(EXAMPLE)
    raw = {**example.model_dump(), "base_dir": example.base_dir}
    files = {**raw["agents"]["files"], "instructions": "", "system_prompt": "You manage the files of a sandbox."}
    return Config.model_validate({**raw, "agents": {"files": files}, "ag_ui": {"kaboo_compat": True}})


def drive(url: str, thread_id: str, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run the steps with the HttpAgent; what it saw in each run."""
    done = subprocess.run(
        ["node", str(STEPS), url, thread_id, json.dumps(steps)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=NODE_DIR,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@needs_node
def test_a_host_that_keeps_grants_is_offered_wider_scopes_and_sayso_stores_none(serve: Serve, sandbox: Path) -> None:
    """approval-plain / approval-grant: `kaboo:approval` with wider scopes for a host that sends `kaboo_grants`;
    approving for the chat stores nothing in sayso, and the host's grant then runs the next call without asking."""
    config = kaboo_files()
    assert config.agents["files"].instructions == "You manage the files of a sandbox."
    server = serve(config)
    url = f"{server.base_url}/ag-ui/files"
    grant = {
        "tool": "delete_file",
        "subject": {"key": "folder:.", "label": "the sandbox's top folder"},
        "scope": "thread",
    }
    asked, approved, granted = drive(
        url,
        "thr-kaboo-1",
        [
            {"say": "delete notes", "forwardedProps": {"kaboo_grants": []}},
            {
                "resume": {"status": "resolved", "payload": {"status": "approved", "scope": "thread"}},
                "forwardedProps": {"kaboo_grants": []},
            },
            {"say": "delete todo", "forwardedProps": {"kaboo_grants": [grant]}},
        ],
    )
    (interrupt,) = asked["outcome"]["interrupts"]
    assert interrupt["reason"] == "kaboo:approval"
    assert interrupt["metadata"]["scopes"] == ["once", "thread", "always"]
    assert interrupt["metadata"]["subject"] == {"key": "folder:.", "label": "the sandbox's top folder"}
    assert approved["outcome"] == {"type": "success"}
    [record] = [r["metadata"]["approval"] for r in approved["results"] if r["metadata"]]
    assert (record["decision"], record["by"], record["scope"]) == ("approve", "person", "thread")
    assert granted["outcome"] == {"type": "success"}, "the host's grant covers the second call"
    [record] = [r["metadata"]["approval"] for r in granted["results"] if r["metadata"]]
    assert record["by"] == "permission"
    assert not (sandbox / "notes.txt").exists() and not (sandbox / "todo.md").exists()
    with server.client() as client:
        assert client.get("/v1/grants").json()["grants"] == [], "the host keeps grants; sayso stores none"


@needs_node
def test_a_host_that_sends_no_grants_is_offered_once_only(serve: Serve, sandbox: Path) -> None:
    """Without `kaboo_grants` the host remembers nothing: only `once` is offered, and a wider answer is refused."""
    server = serve(kaboo_files())
    asked, refused, approved = drive(
        f"{server.base_url}/ag-ui/files",
        "thr-kaboo-2",
        [
            {"say": "delete notes"},
            {"resume": {"status": "resolved", "payload": {"status": "approved", "scope": "thread"}}},
            {"resume": {"status": "resolved", "payload": {"status": "approved"}}},
        ],
    )
    (interrupt,) = asked["outcome"]["interrupts"]
    assert interrupt["metadata"]["scopes"] == ["once"]
    assert refused["error"] is not None and "not offered" in refused["error"]["message"]
    assert approved["outcome"] == {"type": "success"}
    assert not (sandbox / "notes.txt").exists()


@needs_node
def test_a_question_is_kaboos_ask_user_browser_tool(serve: Serve, sandbox: Path) -> None:
    """question-orchestrator: the question is an `ask_user` call the browser answers with a tool message."""
    server = serve(kaboo_files())
    asked, then = drive(
        f"{server.base_url}/ag-ui/files",
        "thr-kaboo-3",
        [{"say": "delete report"}, {"answerCalls": {"ask_user": [{"answer": ["report-2025.txt"]}]}}],
    )
    assert asked["outcome"]["type"] == "success"
    [call] = [c for c in asked["calls"] if c["name"] == "ask_user"]
    assert asked["outcome"]["pendingToolCallIds"] == [call["id"]]
    assert json.loads(call["args"])["questions"][0]["choices"] == ["report-2025.txt", "report-2026.txt"]
    (interrupt,) = then["outcome"]["interrupts"]
    assert interrupt["reason"] == "kaboo:approval" and interrupt["metadata"]["tool_input"] == {
        "name": "report-2025.txt"
    }


@needs_node
def test_a_delegates_question_and_approval_surface_together_tagged_with_their_runs(serve: Serve) -> None:
    """question-subagent + approval-subagent: the analyst's `ask_user` call is streamed tagged with its run and
    pending beside ops' `kaboo:approval` interrupt; one resume with both answers finishes the report."""
    team = load_config(TEAM)
    raw = {**team.model_dump(), "base_dir": team.base_dir, "ag_ui": {"kaboo_compat": True}}
    server = serve(Config.model_validate(raw))
    paused, done = drive(
        f"{server.base_url}/ag-ui/team",
        "thr-kaboo-4",
        [
            {"say": "report"},
            {
                "resume": {"status": "resolved", "payload": {"status": "approved"}},
                "answerCalls": {"ask_user": [{"answer": ["Q4"]}]},
            },
        ],
    )
    (interrupt,) = paused["outcome"]["interrupts"]
    assert interrupt["reason"] == "kaboo:approval" and interrupt["subagentRunId"]
    assert interrupt["metadata"]["subagentRunId"] == interrupt["subagentRunId"]
    [ask] = [c for c in paused["calls"] if c["name"] == "ask_user"]
    assert paused["metadata"]["pendingToolCallIds"] == [ask["id"]]
    assert ask["subagentRunId"] and ask["subagentRunId"] != interrupt["subagentRunId"]
    assert ask["metadata"]["agent_path"] == "coordinator/analyst"
    assert done["outcome"] == {"type": "success"}
    assert "Revenue in Q4 grew 5%." in done["result"] and "Archived the logs of 2026-10." in done["result"]
