"""MCP on Temporal, both ways: sayso's `/mcp` interface on a front, and an agent that binds an MCP server.

An agent with MCP bindings runs its loop in the run's workflow like any agent: its model requests and
its MCP calls are activities, each worker with MCP sessions of its own. A form a server pushes
mid-call is held by the worker whose call activity asked it; an answer given on any front reaches
that call there (docs/guides/temporal.md#what-runs-where).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client as TemporalClient

from sayso import (
    Accept,
    ApprovalRequest,
    Approve,
    CallEnded,
    ElicitationRequest,
    InvalidDecision,
    NotAllowed,
    RunResult,
    Sayso,
)
from sayso._engine.mcp.toolset import CALL_ENDED
from sayso.protocols import protocol_apps, protocol_routers
from sayso.server import create_app

from ..conftest import LiveServer, approvals
from ..mcp_tools.conftest import ElicitServer
from .conftest import Project, Workers, workflows_on


@pytest.fixture
def front(file_manager: Path, temporal: Project) -> Iterator[LiveServer]:
    """`sayso serve`'s app (REST, A2A, AG-UI and `/mcp`) as a Temporal front on a real port, with one worker."""
    temporal.workers(file_manager).start()
    sayso = Sayso.from_yaml(file_manager)
    served = LiveServer.in_thread(
        create_app(sayso, routers=protocol_routers(sayso), apps=protocol_apps(sayso), expire_every_seconds=None)
    )
    try:
        yield served
    finally:
        served.stop()


async def test_the_mcp_interface_asks_the_approval_as_a_form_and_a_worker_runs_the_call(
    front: LiveServer, tmp_path: Path, temporal: Project
) -> None:
    """An MCP client calls the agent's tool: the pause is asked as a form, the approval runs the call on a worker."""
    asked: list[mcp_types.ElicitRequestParams] = []

    async def person(context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.append(params)
        return mcp_types.ElicitResult(action="accept", content={"decision": "approve"})

    async with httpx2.AsyncClient() as http:
        transport = streamable_http_client(f"{front.base_url}/mcp", http_client=http)
        async with Client(transport, elicitation_callback=person) as mcp:
            result = await mcp.call_tool("files", {"message": "delete notes"})
    assert not result.is_error, result
    [said] = [p.text for p in result.content if isinstance(p, mcp_types.TextContent)]
    assert said.startswith("Deleted notes.txt.\n\n(thread thr_"), said
    [form] = asked
    assert "files wants to run delete_file" in form.message
    assert not (tmp_path / "sandbox" / "notes.txt").exists()
    [(workflow, status)] = (await workflows_on(temporal.address, temporal.task_queue)).items()
    assert workflow.startswith("sayso-files-") and status == "COMPLETED"


SCRIPT = """
name: ops
rules:
  - {{user: '^status$', call: git_status, args: {{repo_path: "{repo}"}}}}
  - {{user: '^commit (?P<m>.+)$', call: git_commit, args: {{repo_path: "{repo}", message: "{{m}}"}}}}
  - {{tool: git_status, reply: "status: {{result}}"}}
  - {{tool: git_commit, reply: "commit: {{result}}"}}
"""

BODY = """
models:
  demo: {{scripted: script.yaml}}
mcp_servers:
  git: {{command: "{python}", args: [-m, mcp_server_git, --repository, "{repo}"]}}
agents:
  ops:
    model: demo
    mcp:
      - {{server: git, tools: [git_status]}}
      - {{server: git, tools: [git_commit], require_approval: true}}
"""


def commits(repo: Path) -> list[str]:
    out = subprocess.run(["git", "log", "--format=%s"], cwd=repo, capture_output=True, text=True)
    return out.stdout.split("\n")[:-1] if out.returncode == 0 else []


async def test_an_agent_binding_an_mcp_server_runs_its_loop_in_the_workflow_and_its_approval_outlives_a_worker(
    tmp_path: Path, temporal: Project
) -> None:
    """`mcp-server-git` bound over stdio: the commit waits for approval, outlives its worker (kill -9), and is made
    once by the next; the run's history has each model request and each MCP call (listing too) as an activity."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.com"], ["config", "user.name", "T"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "README.md").write_text("hello\n")
    subprocess.run(["git", "add", "README.md"], cwd=repo, check=True)
    body = BODY.format(python=sys.executable, repo=repo)
    config = temporal.config(tmp_path, body, {"script.yaml": SCRIPT.format(repo=repo)})
    pool = temporal.workers(config)
    first = pool.start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("commit Add the readme", agent="ops")
        [request] = paused.requests
        assert isinstance(request, ApprovalRequest) and request.tool_name == "git_commit"
        assert commits(repo) == []
        pool.kill(first)
        pool.start()
        done = (await front.decide(request.request_id, Approve())).run
    assert done.status == "completed" and done.output is not None, done
    assert done.output.startswith("commit: Changes committed successfully")
    assert commits(repo) == ["Add the readme"]
    client = await TemporalClient.connect(temporal.address)
    activities = [
        event.activity_task_scheduled_event_attributes.activity_type.name
        async for event in client.get_workflow_handle(f"sayso-ops-{done.run_id}").fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert "sayso.segment" in activities and "sayso.advance" in activities
    calls = "agent__ops__dynamic_toolset__sayso__call_tool"
    # A model request per segment (the call; then the reply), a listing before each; the commit asked for
    # approval in one call activity and ran in another, on the worker started after the kill.
    assert activities.count("agent__ops__model_request") == 2, activities
    assert activities.count(calls) == 2, activities
    assert "agent__ops__dynamic_toolset__sayso__get_tools" in activities


FORM_SCRIPT = """
name: host
rules:
  - {user: '^book (?P<d>.+)$', call: book_table, args: {day: "{d}"}}
  - {tool: book_table, reply: "{result}"}
"""

FORM_BODY = """
models:
  demo: {{scripted: script.yaml}}
mcp_servers:
  booking: {{url: "{url}", session: legacy}}
agents:
  host:
    model: demo
    mcp:
      - {{server: booking, tools: [book_table]}}
"""


async def test_a_form_a_server_asks_mid_call_on_a_worker_is_answered_from_a_front_on_that_live_call(
    tmp_path: Path, temporal: Project, elicit_server: ElicitServer
) -> None:
    """The server pushes a form while a worker's call activity serves `book_table`: the run pauses with it, held by
    that worker. A wrong answer from the front is refused with the form still open; the right one goes to the
    worker holding the call (its own task queue), whichever worker carries the run on, and is answered there once."""
    config = temporal.config(tmp_path, FORM_BODY.format(url=elicit_server.mcp_url), {"script.yaml": FORM_SCRIPT})
    pool = temporal.workers(config)
    pool.start()
    pool.start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("book fri", agent="host")
        assert paused.status == "paused", paused
        [request] = paused.requests
        assert isinstance(request, ElicitationRequest) and request.delivery == "live" and request.needs_holder
        assert request.holder is not None  # the worker whose call activity holds the call
        assert elicit_server.answers() == []  # the server still waits on its question
        with pytest.raises(InvalidDecision) as refused:
            await front.decide(request.request_id, Accept(content={"people": "many"}))
        assert refused.value.fields == {"people": "'many' is not of type 'integer'", "name": "is required"}
        still = await front.result(paused.run_id)
        assert still.status == "paused" and [r.request_id for r in still.requests] == [request.request_id]
        done = (await front.decide(request.request_id, Accept(content={"people": 2, "name": "Ada"}))).run
    assert done.status == "completed" and done.output == "Booked fri for 2 (Ada)", done
    # One question, answered once, on the one call: the table is booked once.
    assert elicit_server.answers() == ["accept"]
    assert elicit_server.bookings() == ["fri:2:Ada"]
    client = await TemporalClient.connect(temporal.address)
    queues = [
        event.activity_task_scheduled_event_attributes.task_queue.name
        async for event in client.get_workflow_handle(f"sayso-host-{done.run_id}").fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and event.activity_task_scheduled_event_attributes.activity_type.name.endswith("__call_tool")
    ]
    assert queues == [temporal.task_queue, f"{temporal.task_queue}@{request.holder}"], queues


@asynccontextmanager
async def form_held(
    tmp_path: Path, temporal: Project, elicit_server: ElicitServer, prompt: str
) -> AsyncIterator[tuple[Workers, subprocess.Popen[str], Sayso, RunResult, ElicitationRequest]]:
    """A run of `prompt` paused on the booking form its call asks mid-call, held by the one worker started: the pool,
    that worker, the front the run was started from, the paused run and its form."""
    config = temporal.config(tmp_path, FORM_BODY.format(url=elicit_server.mcp_url), {"script.yaml": FORM_SCRIPT})
    pool = temporal.workers(config)
    holder = pool.start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run(prompt, agent="host")
        [request] = paused.requests
        assert isinstance(request, ElicitationRequest) and f":{holder.pid}:" in (request.holder or "")
        yield pool, holder, front, paused, request


async def test_a_form_whose_holding_worker_was_killed_is_refused_and_the_call_is_not_made_again(
    tmp_path: Path, temporal: Project, elicit_server: ElicitServer
) -> None:
    """kill -9 the worker holding the live call: an answer from the front is refused (`CallEnded`), the form closes
    as cancelled, and the run carries on on another worker, the model told the call did not complete; nothing is
    booked, and the call is never issued again (a tool that may not run twice). The refusal is a normal answer: no
    worker logs a traceback for it."""
    async with form_held(tmp_path, temporal, elicit_server, "book sat") as (pool, first, front, paused, request):
        pool.start()
        pool.kill(first)
        with pytest.raises(CallEnded):
            await front.decide(request.request_id, Accept(content={"people": 2, "name": "Ada"}))
        done = await front.result(paused.run_id)
    assert done.status == "completed" and done.output == CALL_ENDED, done
    assert elicit_server.bookings() == []
    assert "accept" not in elicit_server.answers()
    handle = (await TemporalClient.connect(temporal.address)).get_workflow_handle(f"sayso-host-{done.run_id}")
    with anyio.fail_after(30):
        assert await handle.result() == "completed"  # its workflow read where the run stands, and ended too
    logged = "".join(log.read_text() for log in tmp_path.glob("worker-*.log"))
    assert "Traceback" not in logged and "Completing activity as failed" not in logged, logged


async def test_a_worker_stopped_with_ctrl_c_closes_the_form_it_holds_and_the_run_carries_on_elsewhere(
    tmp_path: Path, temporal: Project, elicit_server: ElicitServer
) -> None:
    """Ctrl-C the worker holding the live call: it closes the form as cancelled (the server hears cancel on its call)
    and asks the run's workflow to carry on, which another worker does; the model reads the call did not complete."""
    async with form_held(tmp_path, temporal, elicit_server, "book sun") as (pool, first, front, paused, request):
        pool.start()
        first.send_signal(signal.SIGINT)
        first.wait(60)
        handle = (await TemporalClient.connect(temporal.address)).get_workflow_handle(f"sayso-host-{paused.run_id}")
        with anyio.fail_after(60):
            assert await handle.result() == "completed"
        done = await front.result(paused.run_id)
    assert done.status == "completed" and done.output == CALL_ENDED and not done.requests, done
    assert elicit_server.answers() == ["cancel"]
    assert elicit_server.bookings() == []


RULED_SCRIPT = """
name: ops
rules:
  - {{user: '^commit (?P<m>.+)$', call: git_commit, args: {{repo_path: "{repo}", message: "{{m}}"}}}}
  - {{tool: git_commit, reply: "commit: {{result}}"}}
"""

RULED_BODY = """
models:
  demo: {{scripted: script.yaml}}
principals:
  - {{name: alice, token: alice-token}}
  - {{name: bob, token: bob-token}}
  - {{name: dana, token: dana-token}}
mcp_servers:
  git: {{command: "{python}", args: [-m, mcp_server_git, --repository, "{repo}"]}}
agents:
  ops:
    model: demo
    mcp:
      - server: git
        tools: [git_commit]
        rule: no-wip
        when: "args.message.contains('WIP')"
        action: deny
        reason: work in progress is not committed
      - server: git
        tools: [git_commit]
        rule: release-commits
        when: "args.message.startsWith('Release')"
        reason: "{{args.message}} is a release"
        approvers: [bob]
        escalate: [{{after: 1s, add_approvers: [dana]}}]
"""


def git_repo(repo: Path) -> Path:
    """A git repository with one file staged, for `mcp-server-git` to commit."""
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.com"], ["config", "user.name", "T"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "README.md").write_text("hello\n")
    subprocess.run(["git", "add", "README.md"], cwd=repo, check=True)
    return repo


async def test_an_mcp_bindings_rules_hold_on_temporal_as_in_one_process(tmp_path: Path, temporal: Project) -> None:
    """A binding's `when:`, its deny, its approvers (not the run's owner) and its escalation, all on a worker: a WIP
    commit is denied and never made; a commit no condition covers runs unasked; a release asks bob only, saying why,
    and after a second dana may decide too."""
    repo = git_repo(tmp_path / "repo")
    body = RULED_BODY.format(python=sys.executable, repo=repo)
    config = temporal.config(tmp_path, body, {"script.yaml": RULED_SCRIPT.format(repo=repo)})
    temporal.workers(config).start()
    async with Sayso.from_yaml(config) as front:
        with anyio.fail_after(60):  # a binding the worker cannot list leaves the run running: it must end
            denied = await front.run("commit WIP: half a feature", agent="ops", principal="alice")
        assert denied.status == "completed", denied
        assert denied.output == "commit: Denied by policy (rule no-wip): work in progress is not committed"
        assert commits(repo) == []
        plain = await front.run("commit Add the readme", agent="ops", principal="alice")
        assert plain.status == "completed" and commits(repo) == ["Add the readme"], plain
        (repo / "CHANGES.md").write_text("1.0\n")
        subprocess.run(["git", "add", "CHANGES.md"], cwd=repo, check=True)
        paused = await front.run("commit Release 1.0", agent="ops", principal="alice")
        [request] = paused.requests
        assert isinstance(request, ApprovalRequest), request
        assert request.why == "asked because Release 1.0 is a release (rule release-commits)"
        assert request.routing is not None and [a.name for a in request.routing.approvers] == ["bob"]
        with pytest.raises(NotAllowed, match="'alice' is not an approver"):
            await front.decide(request.request_id, Approve(), principal="alice")
        with anyio.fail_after(30):
            while not (widened := approvals((await front.inbox(principal="dana")).requests)):
                await anyio.sleep(0.1)
        fired = [r.body for r in await front.audit_log() if r.body["event"] == "escalated"]
        assert [(e["step"], e["rule"], e["add_approvers"]) for e in fired] == [(0, "release-commits", ["dana"])]
        assert [r.request_id for r in widened] == [request.request_id]
        assert commits(repo) == ["Add the readme"]
        done = (await front.decide(request.request_id, Approve(), principal="dana")).run
    assert done.status == "completed" and commits(repo) == ["Release 1.0", "Add the readme"], done


async def test_the_last_worker_stopped_while_it_holds_a_form_closes_it_and_the_run_carries_on_when_one_comes_back(
    tmp_path: Path, temporal: Project, elicit_server: ElicitServer
) -> None:
    """SIGTERM to the only worker, holding the live call: it exited 1 with a traceback
    (`WorkflowUpdateRPCTimeoutOrCancelledError`: nobody could take its "carry on" then). Now it closes the form
    (the server hears cancel), asks the run's workflow to carry on, says it stopped and exits 0; the next worker
    carries the run on, the model reading that the call did not complete."""
    async with form_held(tmp_path, temporal, elicit_server, "book mon") as (pool, only, front, paused, request):
        only.send_signal(signal.SIGTERM)
        only.wait(60)
        assert only.stdout is not None
        said = only.stdout.read()
        assert only.returncode == 0, said
        assert said.splitlines()[-1:] == ["sayso worker: stopped"]
        assert elicit_server.answers() == ["cancel"]
        pool.start()
        handle = (await TemporalClient.connect(temporal.address)).get_workflow_handle(f"sayso-host-{paused.run_id}")
        with anyio.fail_after(60):
            assert await handle.result() == "completed"
        done = await front.result(paused.run_id)
    assert done.status == "completed" and done.output == CALL_ENDED and not done.requests, done
    assert elicit_server.bookings() == []
