"""Remote delegates (docs/guides/a2a.md#remote-agents-as-delegates): a sayso agent delegates to another sayso over A2A,
and the child's pauses cascade up."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest

from sayso import Approve, Request, RunConflict, RunResult, Sayso

from ..conftest import LiveServer, free_port
from .conftest import EXAMPLE

PARENT_CONFIG = """
store: sqlite:///parent.db
models:
  c: {{scripted: coordinator.yaml}}
agents:
  coordinator:
    model: c
    delegates:
      - {{a2a: "{url}", name: files, description: Manages the files of a sandbox}}
"""

COORDINATOR = """
rules:
  - {user: '^tidy (?P<what>.+)$', call: files, args: {task: "{what}"}}
  - {tool: files, reply: "files said: {result}"}
"""


@dataclass
class Served:
    """A `sayso serve` process on a fixed port of 127.0.0.1, which a test may restart."""

    config: Path
    port: int
    env: dict[str, str]
    server: LiveServer | None = None
    process: subprocess.Popen[str] | None = None
    args: tuple[str, ...] = ()
    """More arguments for `sayso serve` (`--recover-every 1`)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Served:
        self.server, self.process = LiveServer.process([str(self.config), *self.args], env=self.env, port=self.port)
        return self

    def kill(self) -> None:
        """`kill -9`: the process stops wherever it is, nothing of it closes cleanly."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self.server = self.process = None

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(f"{self.url}{path}", json=body, timeout=120)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[Served, Served, Path]]:
    """A parent sayso whose coordinator delegates to the file manager served by a child sayso, over A2A."""
    sandbox = tmp_path / "child-sandbox"
    base = {k: v for k, v in os.environ.items() if k != "SAYSO_STORE"}
    child = Served(
        EXAMPLE,
        free_port(),
        {**base, "SAYSO_STORE": f"sqlite:///{tmp_path / 'child.db'}", "SAYSO_SANDBOX": str(sandbox)},
    )
    parent_dir = tmp_path / "parent"
    parent_dir.mkdir()
    (parent_dir / "sayso.yaml").write_text(PARENT_CONFIG.format(url=f"{child.url}/a2a/files"))
    (parent_dir / "coordinator.yaml").write_text(COORDINATOR)
    parent = Served(parent_dir / "sayso.yaml", free_port(), base)
    child.start()
    parent.start()
    try:
        yield parent, child, sandbox
    finally:
        parent.stop()
        child.stop()


def test_a_remote_childs_approval_cascades_up_and_the_decision_goes_down(servers: tuple[Served, Served, Path]) -> None:
    """A remote child's approval shows in the parent's pause; deciding it there runs the call in the child."""
    parent, child, sandbox = servers
    run = parent.post("/v1/runs", {"message": "tidy delete notes", "agent": "coordinator"})
    assert run["status"] == "paused"
    [request] = run["requests"]
    assert (request["kind"], request["tool_name"], request["agent_path"]) == (
        "approval",
        "delete_file",
        "coordinator/files",
    )
    assert request["args"] == {"name": "notes.txt"}
    # kagent's HITL carries no edited arguments: the call says so, and no interface offers an edit of it.
    assert request["editable"] is False
    assert request["run_id"] != run["run_id"]
    assert (sandbox / "notes.txt").exists()
    child_inbox = httpx.get(f"{child.url}/v1/requests", timeout=30).json()["requests"]
    assert [r["tool_name"] for r in child_inbox] == ["delete_file"], "the child keeps its own pause"

    done = parent.post(f"/v1/requests/{request['id']}/decision", {"kind": "approve"})
    assert done["run"]["status"] == "completed"
    assert done["run"]["output"] == "files said: Deleted notes.txt."
    assert not (sandbox / "notes.txt").exists()


def test_a_question_and_a_rejection_cross_and_the_parent_survives_a_restart(
    servers: tuple[Served, Served, Path],
) -> None:
    """A remote question and rejection cross both ways, across a restart of the parent, and the note says so."""
    parent, _child, sandbox = servers
    run = parent.post("/v1/runs", {"message": "tidy delete report", "agent": "coordinator"})
    [question] = run["requests"]
    assert (question["kind"], question["agent_path"]) == ("question", "coordinator/files")
    assert question["questions"][0]["choices"] == ["report-2025.txt", "report-2026.txt"]

    parent.stop()
    parent.start()

    asked = parent.post(f"/v1/requests/{question['id']}/decision", {"kind": "answer", "answers": [["report-2026.txt"]]})
    assert asked["run"]["status"] == "paused"
    [approval] = asked["run"]["requests"]
    assert (approval["tool_name"], approval["args"]) == ("delete_file", {"name": "report-2026.txt"})
    refused = httpx.post(
        f"{parent.url}/v1/requests/{approval['id']}/decision",
        json={"kind": "approve", "edited_args": {"name": "todo.md"}},
        timeout=30,
    )
    assert refused.status_code == 422 and "cannot be edited" in refused.text
    done = parent.post(f"/v1/requests/{approval['id']}/decision", {"kind": "reject", "reason": "keep the 2026 one"})
    assert done["run"]["output"] == (
        "files said: Declined: keep the 2026 one\n\n"
        "(Note: files asked the person 'Several files match. Which one should I delete?' → report-2026.txt.)"
    )
    assert (sandbox / "report-2026.txt").exists()


async def test_a_decision_for_a_remote_child_that_went_away_is_kept_and_sent_when_it_is_back(tmp_path: Path) -> None:
    """Approving a remote child's call while its server is down is refused with a clear error, the approval is kept,
    and resuming once the child is back sends it down: the call runs and the parent completes."""
    sandbox = tmp_path / "child-sandbox"
    base = {k: v for k, v in os.environ.items() if k != "SAYSO_STORE"}
    child_env = {**base, "SAYSO_STORE": f"sqlite:///{tmp_path / 'child.db'}", "SAYSO_SANDBOX": str(sandbox)}
    child = Served(EXAMPLE, free_port(), child_env).start()
    (tmp_path / "sayso.yaml").write_text(PARENT_CONFIG.format(url=f"{child.url}/a2a/files"))
    (tmp_path / "coordinator.yaml").write_text(COORDINATOR)
    try:
        async with Sayso.from_yaml(tmp_path / "sayso.yaml") as app:
            paused = await app.run("tidy delete notes", agent="coordinator")
            [request] = paused.requests
            child.stop()
            with pytest.raises(RunConflict, match="could not be reached.*decisions are kept") as refused:
                await app.decide(request.request_id, Approve())
            assert refused.value.run_id == paused.run_id
            assert (await app.result(paused.run_id)).status == "paused"
            assert (sandbox / "notes.txt").exists()
            child.start()
            done = await app.resume(paused.run_id)
    finally:
        child.stop()
    assert (done.status, done.output) == ("completed", "files said: Deleted notes.txt.")
    assert not (sandbox / "notes.txt").exists()


@pytest.mark.parametrize(
    ("at_child", "at_parent", "output", "kept"),
    [
        ({"kind": "approve"}, {"kind": "reject", "reason": "no way"}, "files said: Deleted notes.txt.", False),
        (
            {"kind": "reject", "reason": "answered at the child"},
            {"kind": "approve"},
            "files said: Declined: answered at the child",
            True,
        ),
    ],
    ids=["approved-there-rejected-here", "rejected-there-approved-here"],
)
def test_a_decision_for_a_remote_pause_answered_at_the_child_is_refused_and_the_parent_goes_on_as_the_child_did(
    servers: tuple[Served, Served, Path],
    at_child: dict[str, Any],
    at_parent: dict[str, Any],
    output: str,
    kept: bool,
) -> None:
    """A remote child's pause answered on the child's own inbox meanwhile: the parent's later decision is refused as
    answered elsewhere (it did not take effect, so neither the request nor the audit log says it was taken), the
    parent's request is closed unanswered, and the parent completes with how the child's task really ended."""
    parent, child, sandbox = servers
    run = parent.post("/v1/runs", {"message": "tidy delete notes", "agent": "coordinator"})
    [request] = run["requests"]
    [mirrored] = httpx.get(f"{child.url}/v1/requests", timeout=30).json()["requests"]
    child.post(f"/v1/requests/{mirrored['id']}/decision", at_child)

    refused = httpx.post(f"{parent.url}/v1/requests/{request['id']}/decision", json=at_parent, timeout=60)
    assert refused.status_code == 409, refused.text
    assert "answered at the remote agent" in refused.json()["detail"]
    state = httpx.get(f"{parent.url}/v1/requests/{request['id']}", timeout=30).json()
    assert (state["status"], state["decision"]["kind"]) == ("closed", "skip")
    done = httpx.get(f"{parent.url}/v1/runs/{run['run_id']}", timeout=30).json()
    assert (done["status"], done["output"]) == ("completed", output)
    audit = httpx.get(f"{parent.url}/v1/audit", params={"limit": 500}, timeout=30).json()["records"]
    decided = [r["body"]["decision"] for r in audit if r["body"].get("request_id") == request["id"]]
    assert decided == ["skip"], "the parent's audit log never says the refused decision was taken"
    assert (sandbox / "notes.txt").exists() is kept


ARCHIVIST_CONFIG = """
models:
  s: {scripted: archivist.yaml}
agents:
  archivist:
    model: s
    tools: [archive_tools:archive]
"""

ARCHIVIST = """
rules:
  - {user: '^archive (?P<m>\\S+)$', call: archive, args: {month: "{m}"}}
  - {tool: archive, reply: "{result}"}
"""

ARCHIVE_TOOLS = '''
import os, time


def archive(month: str) -> str:
    """Archive a month's logs (a few seconds)."""
    with open(os.environ["ARCHIVED"], "a") as archived:
        archived.write(month + "\\n")
    time.sleep(3)
    return f"archived {month}"
'''

LEAD_CONFIG = """
store: sqlite:///lead.db
models:
  c: {{scripted: lead.yaml}}
agents:
  lead:
    model: c
    delegates:
      - {{a2a: "{url}", name: archivist, description: Archives logs}}
"""

LEAD = """
rules:
  - {user: '^archive (?P<m>\\S+)$', call: archivist, args: {task: "archive {m}"}}
  - {tool: archivist, reply: "lead read: {result}"}
"""


async def test_a_remote_delegate_cut_off_by_kill_9_while_its_task_ran_is_not_sent_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sayso run` killed while the remote agent works on the task it was handed: the recovered parent meets its
    delegate call again and does not hand the task over a second time (the remote may or may not have done it); its
    model reads that the outcome is unknown, and the remote agent's tool ran once."""
    archived = tmp_path / "archived"
    monkeypatch.delenv("SAYSO_STORE", raising=False)  # the recovery below reads the killed run's store
    base = {k: v for k, v in os.environ.items() if k != "SAYSO_STORE"}
    remote_dir, lead_dir = tmp_path / "remote", tmp_path / "lead"
    remote_dir.mkdir()
    lead_dir.mkdir()
    (remote_dir / "sayso.yaml").write_text(ARCHIVIST_CONFIG)
    (remote_dir / "archivist.yaml").write_text(ARCHIVIST)
    (remote_dir / "archive_tools.py").write_text(ARCHIVE_TOOLS)
    remote = Served(remote_dir / "sayso.yaml", free_port(), {**base, "ARCHIVED": str(archived)}).start()
    try:
        config = lead_dir / "sayso.yaml"
        config.write_text(LEAD_CONFIG.format(url=f"{remote.url}/a2a/archivist"))
        (lead_dir / "lead.yaml").write_text(LEAD)
        command = [sys.executable, "-m", "sayso", "run", str(config), "archive 2026-12", "--agent", "lead"]
        process = subprocess.Popen(command, env=base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not archived.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert archived.exists(), "the remote agent never got the task"
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(10)
        async with Sayso.from_yaml(config) as app:
            [run] = await app.recover()
    finally:
        remote.stop()
    assert run.status == "completed" and run.output is not None
    assert run.output.startswith("lead read: Error: the delegate archivist failed: outcome unknown")
    assert archived.read_text().split() == ["2026-12"]
    with sqlite3.connect(lead_dir / "lead.db") as db:  # what an operator's query of the store shows
        proxies = db.execute("SELECT status FROM runs WHERE agent = 'archivist'").fetchall()
    assert proxies == [("failed",)]


PURGER_CONFIG = """
models:
  s: {scripted: purger.yaml}
agents:
  purger:
    model: s
    tools: [purge_tools:purge]
    interrupt: {tools: [purge]}
"""

PURGER = """
rules:
  - {user: '^purge (?P<g>\\S+)$', call: purge, args: {group: "{g}"}}
  - {tool: purge, reply: "{result}"}
"""

PURGE_TOOLS = '''
import os, time


def purge(group: str) -> str:
    """Purge a group's files (takes a while)."""
    with open(os.environ["PURGED"], "a") as purged:
        purged.write(group + "\\n")
    time.sleep(float(os.environ["PURGE_SECONDS"]))
    return f"purged {group}"
'''

OWNER_CONFIG = """
store: sqlite:///owner.db
models:
  c: {{scripted: owner.yaml}}
agents:
  owner:
    model: c
    delegates:
      - {{a2a: "{url}", name: purger, description: Purges groups}}
"""

OWNER = """
rules:
  - {user: '^purge (?P<g>\\S+)$', call: purger, args: {task: "purge {g}"}}
  - {tool: purger, reply: "owner read: {result}"}
"""


def purging(tmp_path: Path, seconds: float) -> tuple[Served, Path, Path]:
    """A remote `purger` agent whose approved `purge` takes `seconds` (not started), its config's folder for the
    agent that delegates to it, and the file each purge writes its group to before it works."""
    purged = tmp_path / "purged"
    base = {k: v for k, v in os.environ.items() if k != "SAYSO_STORE"}
    remote_dir, owner_dir = tmp_path / "remote", tmp_path / "owner"
    remote_dir.mkdir()
    owner_dir.mkdir()
    (remote_dir / "sayso.yaml").write_text(PURGER_CONFIG)
    (remote_dir / "purger.yaml").write_text(PURGER)
    (remote_dir / "purge_tools.py").write_text(PURGE_TOOLS)
    env = {**base, "PURGED": str(purged), "PURGE_SECONDS": str(seconds), "SAYSO_STORE": f"sqlite:///{remote_dir}/r.db"}
    remote = Served(remote_dir / "sayso.yaml", free_port(), env)
    (owner_dir / "sayso.yaml").write_text(OWNER_CONFIG.format(url=f"{remote.url}/a2a/purger"))
    (owner_dir / "owner.yaml").write_text(OWNER)
    return remote, owner_dir, purged


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), f"{path.name} never appeared"


async def approved_then_killed(app: Sayso, request_id: str, remote: Served, purged: Path) -> list[Exception]:
    """Approve `request_id`, and kill the remote agent once its call runs (`purged` written): what the decider hears."""
    refusals: list[Exception] = []

    async def decide() -> None:
        try:
            await app.decide(request_id, Approve())
        except Exception as exc:  # what the decider is told
            refusals.append(exc)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(decide)
        await anyio.to_thread.run_sync(wait_for, purged)
        remote.kill()
    return refusals


@dataclass
class CutOff:
    """A parent run whose remote delegate was killed while it ran the call approved from the parent."""

    app: Sayso
    paused: RunResult
    request: Request
    remote: Served
    purged: Path
    refused: Exception
    """What the decider was told."""


@contextlib.asynccontextmanager
async def cut_off_mid_call(tmp_path: Path) -> AsyncIterator[CutOff]:
    """The owner asks to purge g1; the purge is approved and the remote agent killed while it runs it (for 30 s)."""
    remote, owner_dir, purged = purging(tmp_path, seconds=30)
    remote.start()
    try:
        async with Sayso.from_yaml(owner_dir / "sayso.yaml", lease_seconds=2) as app:
            paused = await app.run("purge g1", agent="owner")
            [request] = paused.requests
            [refused] = await approved_then_killed(app, request.request_id, remote, purged)
            assert isinstance(refused, RunConflict), refused  # the remote stopped answering: carried on later
            yield CutOff(app=app, paused=paused, request=request, remote=remote, purged=purged, refused=refused)
    finally:
        remote.stop()


async def test_a_remote_killed_while_it_ran_an_approved_call_is_asked_where_its_task_stands_once_it_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote agent is killed while it runs the call approved from the parent: the decision is recorded and the
    decider told the run carries on later (no server error); once the remote is back, recovery asks it where its
    task stands and the parent finishes with the remote's own word for it (outcome unknown). The call ran once."""
    monkeypatch.delenv("SAYSO_STORE", raising=False)
    async with cut_off_mid_call(tmp_path) as cut:
        assert "the decisions are recorded" in str(cut.refused)
        assert (await cut.app.result(cut.paused.run_id)).status == "paused"
        cut.remote.start()  # its own recovery ends its task: the call's outcome is unknown
        deadline = time.monotonic() + 60
        while (done := await cut.app.result(cut.paused.run_id)).status == "paused" and time.monotonic() < deadline:
            await cut.app.recover()
            await anyio.sleep(0.2)
    assert done.status == "completed" and done.output is not None
    assert done.output.startswith("owner read: Outcome unknown"), done.output
    assert cut.purged.read_text().split() == ["g1"]


def test_a_parent_killed_while_its_remote_ran_an_approved_call_reads_the_remote_outcome_when_it_is_back(
    tmp_path: Path,
) -> None:
    """`sayso serve` killed while the remote agent runs the call approved through it: restarted, its recovery asks
    the remote task where it stands (still working, then done) and the run completes with the remote's answer;
    the call ran once."""
    remote, owner_dir, purged = purging(tmp_path, seconds=3)
    base = {k: v for k, v in os.environ.items() if k != "SAYSO_STORE"}
    owner = Served(owner_dir / "sayso.yaml", free_port(), base, args=("--recover-every", "1"))
    remote.start()
    owner.start()
    try:
        run = owner.post("/v1/runs", {"message": "purge g2", "agent": "owner"})
        [request] = run["requests"]

        def approve() -> None:
            with contextlib.suppress(httpx.TransportError):  # its server is killed while it answers
                httpx.post(f"{owner.url}/v1/requests/{request['id']}/decision", json={"kind": "approve"}, timeout=60)

        deciding = threading.Thread(target=approve, daemon=True)
        deciding.start()
        wait_for(purged)
        owner.kill()
        deciding.join(30)
        owner.start()
        deadline = time.monotonic() + 60
        while (done := httpx.get(f"{owner.url}/v1/runs/{run['run_id']}", timeout=30).json())[
            "status"
        ] != "completed" and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        owner.stop()
        remote.stop()
    assert (done["status"], done.get("output")) == ("completed", "owner read: purged g2")
    assert purged.read_text().split() == ["g2"]


async def test_a_forced_resume_past_a_remote_cut_off_while_it_ran_an_approved_call_says_its_outcome_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote agent is killed while it runs the call approved from the parent, and the parent is resumed with
    `force`: its model read "Skipped: the run was resumed before this request was answered", though the call had
    been approved and had run. It now reads that the delegate had not answered and what it did is unknown, naming
    the remote task to check; the call ran once."""
    monkeypatch.delenv("SAYSO_STORE", raising=False)
    async with cut_off_mid_call(tmp_path) as cut:
        forced = await cut.app.resume(cut.paused.run_id, force=True)
        there = await cut.app.remote_task(cut.request.run_id)  # the proxy's: the task the remote agent ran the call in
    remote, purged = cut.remote, cut.purged
    assert forced.status == "completed" and forced.output is not None
    assert "before this request was answered" not in forced.output
    assert forced.output.startswith("owner read: Skipped: the run was resumed while the delegate purger (remote task")
    assert there is not None and f"remote task {there.task_id!r} at {remote.url}/a2a/purger" in forced.output
    assert forced.output.endswith(
        "had not answered yet: what it did is unknown, so check its effect before trying again"
    )
    assert purged.read_text().split() == ["g1"]


async def test_a_remote_killed_while_it_takes_a_task_leaves_its_delegate_failed_as_outcome_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote agent is killed while it works on the task it was just handed (an ungated purge): the parent's
    model reads that the outcome is unknown and that the task was not sent again (not a raw client error), and the
    delegate's run is failed so at once, never left running for a sweep to abandon. The purge ran once."""
    monkeypatch.delenv("SAYSO_STORE", raising=False)
    remote, owner_dir, purged = purging(tmp_path, seconds=30)
    remote.config.write_text(PURGER_CONFIG.replace("    interrupt: {tools: [purge]}\n", ""))
    remote.start()
    try:
        async with Sayso.from_yaml(owner_dir / "sayso.yaml") as app:
            done: list[RunResult] = []

            async def run() -> None:
                done.append(await app.run("purge g1", agent="owner"))

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(run)
                await anyio.to_thread.run_sync(wait_for, purged)
                remote.kill()
            [result] = done
    finally:
        remote.stop()
    with sqlite3.connect(owner_dir / "owner.db") as db:  # what an operator's query of the store shows
        [delegate] = db.execute("SELECT agent, status FROM runs WHERE parent_run_id IS NOT NULL").fetchall()
    assert result.status == "completed" and result.output is not None
    assert result.output.startswith("owner read: Error: the delegate purger failed: outcome unknown: the task went out")
    assert "it was not sent again: check with the remote agent before asking again" in result.output
    assert "A2AClientError" not in result.output
    assert delegate == ("purger", "failed")
    assert purged.read_text().split() == ["g1"]


async def test_a_remote_that_cannot_be_reached_fails_its_delegate_saying_nothing_was_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delegate whose agent is not listening: the parent's model reads that it could not be reached and that
    nothing was sent, as the delegate's failure (no tool traceback)."""
    monkeypatch.delenv("SAYSO_STORE", raising=False)
    (tmp_path / "owner.yaml").write_text(OWNER)
    (tmp_path / "sayso.yaml").write_text(OWNER_CONFIG.format(url=f"http://127.0.0.1:{free_port()}/a2a/purger"))
    async with Sayso.from_yaml(tmp_path / "sayso.yaml") as app:
        result = await app.run("purge g1", agent="owner")
    assert result.status == "completed" and result.output is not None
    assert result.output.startswith("owner read: Error: the delegate purger failed: the remote agent at http://")
    assert result.output.endswith("; nothing was sent")
