"""Real MCP servers for the tests: the official filesystem server (npm, pinned) and the git server (PyPI)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic_ai.models import Model

from sayso import Config, Sayso

from ..conftest import free_port

NODE_DIR = Path(__file__).parent / "node"
FILESYSTEM_SERVER = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"

needs_filesystem_server = pytest.mark.skipif(
    shutil.which("node") is None or not FILESYSTEM_SERVER.is_file(),
    reason="the filesystem MCP server is installed by scripts/test (npm ci --prefix tests/mcp_tools/node)",
)


def filesystem_server(folder: Path) -> dict[str, Any]:
    """The `mcp_servers` entry of the official filesystem server, allowed to touch `folder` only."""
    return {"command": "node", "args": [str(FILESYSTEM_SERVER), str(folder)]}


def git_server(repo: Path) -> dict[str, Any]:
    """The `mcp_servers` entry of `mcp-server-git` (PyPI) on `repo`."""
    return {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)]}


MakeMcpApp = Callable[..., Sayso]


@pytest.fixture
def make_mcp_app(tmp_path: Path) -> MakeMcpApp:
    """A runtime over one SQLite file whose agents bind the MCP servers given, all driven by `model`."""

    def make(servers: dict[str, Any], agents: dict[str, Any], *, model: Model, **kwargs: Any) -> Sayso:
        config = Config.model_validate(
            {
                "store": f"sqlite:///{tmp_path / 'sayso.db'}",
                "models": {"m": "test"},
                "agents": {name: {"model": "m", **spec} for name, spec in agents.items()},
                "mcp_servers": servers,
                "base_dir": tmp_path,
            }
        )
        return Sayso(config, models={"m": model}, **kwargs)

    return make


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """A folder the filesystem server may read and write, with one file in it."""
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "notes.txt").write_text("remember the milk\n")
    return folder.resolve()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one staged file, ready to commit."""
    path = tmp_path / "repo"
    path.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "test@example.invalid")
    git("config", "user.name", "Test")
    (path / "README.md").write_text("hello\n")
    git("add", "README.md")
    return path.resolve()


ELICIT_SERVER = Path(__file__).parent / "elicit_server.py"


@dataclass(frozen=True)
class ElicitServer:
    """The fastmcp test server that asks the person things (`elicit_server.py`), and what it heard."""

    base_url: str

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def bookings(self) -> list[str]:
        """The tables booked so far."""
        return list(httpx.get(f"{self.base_url}/bookings").json())

    def answers(self) -> list[str]:
        """What each pushed form got back: accept, decline, cancel, or error."""
        return list(httpx.get(f"{self.base_url}/answers").json())


@contextmanager
def running_elicit_server() -> Iterator[tuple[ElicitServer, subprocess.Popen[bytes]]]:
    """The elicitation test server over streamable HTTP in a process of its own, stopped on exit."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(ELICIT_SERVER), str(port)], stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/bookings", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, "the elicitation test server exited"
            assert time.monotonic() < deadline, "the elicitation test server did not start"
            time.sleep(0.2)
        yield ElicitServer(base), process
    finally:
        process.terminate()
        process.wait(timeout=10)
        assert process.stderr is not None
        process.stderr.close()


@pytest.fixture(scope="session")
def elicit_server_process() -> Iterator[ElicitServer]:
    """The elicitation test server over streamable HTTP, started once for the session."""
    with running_elicit_server() as (server, _):
        yield server


@pytest.fixture
def elicit_server(elicit_server_process: ElicitServer) -> ElicitServer:
    """The elicitation test server with no bookings, answers or sign-ins yet."""
    httpx.post(f"{elicit_server_process.base_url}/reset")
    return elicit_server_process
