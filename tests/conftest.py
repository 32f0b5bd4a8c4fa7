"""Fixtures and helpers every test shares: a clean environment, an app built in the test, two ways to serve it.

Servers are reached in-process (`InProcess`: an ASGI transport, the app's lifespan run) unless a
test needs a real socket; `LiveServer` is the one place that starts a real one, in a thread
(uvicorn) or as a `sayso serve` process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pydantic_ai
import pydantic_ai.models
import pytest
import uvicorn
from fastapi import FastAPI
from pydantic_ai.messages import ModelMessage

from sayso import ApprovalRequest, Config, Grant, Request, Sayso
from sayso._store._messages import encode_messages

from .openapi_check import OpenApiCheck
from .tools import RAN

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "files" / "sayso.yaml"


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No credentials or proxies leak into tests; each test gets its own store and sandbox."""
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_PROXY", "_proxy")) or name.startswith("SAYSO_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SAYSO_STORE", f"sqlite:///{tmp_path / 'sayso.db'}")
    monkeypatch.setenv("SAYSO_SANDBOX", str(tmp_path / "sandbox"))
    RAN.clear()  # the shared tools' record of calls (tests/tools.py) starts empty for every test
    yield


@pytest.fixture(autouse=True)
def history_left_as_given(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail a test in which an agent run changed a message of the history it was given.

    sayso stores a run's new messages and never writes the older ones again, so a message pydantic-ai
    changed in place (its parts, its metadata) would read back as it was in any other process, and a
    resume there would not carry on where the run stopped. No flow of sayso's makes it do so; pydantic-ai has
    code that would (instructions restored into an earlier request, metadata updated on the last one),
    so every run of every test is checked, and an upgrade that starts to is caught here.
    """
    changed: list[str] = []
    run = pydantic_ai.Agent.run

    async def checked(self: pydantic_ai.Agent[Any, Any], *args: Any, **kwargs: Any) -> Any:
        history: list[ModelMessage] = kwargs.get("message_history") or []
        before = encode_messages(history)
        result = await run(self, *args, **kwargs)
        if (after := encode_messages(history)) != before:
            at = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), len(before))
            shown = slice(max(0, at - 80), at + 160)
            changed.append(f"agent {self.name!r}, from byte {at}: {before[shown]!r}\n  became {after[shown]!r}")
        return result

    monkeypatch.setattr(pydantic_ai.Agent, "run", checked)
    yield
    if changed:
        pytest.fail("an agent run changed the history it was given:\n" + "\n".join(changed))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def approvals(requests: Sequence[Request]) -> list[ApprovalRequest]:
    """`requests`, each checked to be an approval (so a test reads its hint, subject and scopes typed)."""
    checked = [r for r in requests if isinstance(r, ApprovalRequest)]
    assert len(checked) == len(requests), [r.kind for r in requests]
    return checked


def host_grant(tool: str, *, agent: str, thread_id: str, principal: str = "local") -> Grant:
    """A `thread` grant on the tool's own subject as a host keeps it (kaboo's `kaboo_grants`), for `run(grants=...)`."""
    return Grant(
        grant_id="host-1",
        tool=tool,
        subject_key=f"tool:{tool}",
        subject_label=tool,
        scope="thread",
        principal=principal,
        agent=agent,
        thread_id=thread_id,
        created_at=0.0,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


IN_PROCESS_URL = "http://127.0.0.1"
"""In-process clients name the loopback host: a local-mode server refuses any other `Host`."""


@dataclass
class InProcess:
    """An app served in-process: clients reach it through an ASGI transport, no socket involved.

    The app's lifespan (which opens the runtime's store) runs in a task of its own, so a fixture
    may start it and stop it from different tasks.
    """

    app: FastAPI
    sayso: Sayso
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None
    openapi: OpenApiCheck = field(init=False)

    def __post_init__(self) -> None:
        self.openapi = OpenApiCheck(self.app)

    async def start(self) -> InProcess:
        started = asyncio.Event()

        async def lifespan() -> None:
            async with self.app.router.lifespan_context(self.app):
                started.set()
                await self._stop.wait()

        self._task = asyncio.create_task(lifespan())
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait({self._task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if self._task.done():
            self._task.result()  # the lifespan failed to start: raise its error here
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._stop.set()
            task, self._task = self._task, None
            await task

    def client(self, token: str | None = None, *, headers: Mapping[str, str] | None = None) -> httpx.AsyncClient:
        """A client of the app, signed in with `token` when given."""
        sent = {**({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app),
            base_url=IN_PROCESS_URL,
            headers=sent,
            timeout=60,
            event_hooks={"response": [self.openapi]},  # every REST answer is checked against the OpenAPI document
        )


@dataclass
class LiveServer:
    """A server on a real port of 127.0.0.1: uvicorn in a thread, or a `sayso serve` process.

    Only what needs a real socket uses one: browsers, the Node AG-UI client, `sayso serve` itself,
    and remote delegates (two processes talking A2A).
    """

    base_url: str
    port: int
    _stop: Callable[[], None]

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30)

    def stop(self) -> None:
        self._stop()

    @classmethod
    def in_thread(cls, app: FastAPI, *, port: int | None = None) -> LiveServer:
        """Serve `app` with uvicorn in a background thread until `stop` (on `port`, or a free one)."""
        port = port or free_port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)

        def stop() -> None:
            server.should_exit = True
            thread.join(timeout=30)

        return cls(base_url=f"http://127.0.0.1:{port}", port=port, _stop=stop)

    @classmethod
    def process(
        cls,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        port: int | None = None,
        stderr: int | None = subprocess.DEVNULL,
    ) -> tuple[LiveServer, subprocess.Popen[str]]:
        """Run `python -m sayso serve ARGS --port PORT` and wait until it answers `/healthz`.

        Stopping sends SIGTERM and waits for a clean exit; the process is returned too, for
        tests that read its output or exit code. It runs this checkout's sayso (`src` first on its path), whichever
        checkout the environment installed.
        """
        port = port or free_port()
        command = [sys.executable, "-m", "sayso", "serve", *args, "--port", str(port)]
        env = {"PYTHONPATH": str(ROOT / "src"), **env}
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        base_url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError(f"sayso serve on port {port} did not start")
            time.sleep(0.1)

        def stop() -> None:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()

        return cls(base_url=base_url, port=port, _stop=stop), process


async def resume_at_once(apps: list[Sayso], run_id: str, *, on_refused: Callable[[], None] = lambda: None) -> list[Any]:
    """Resume one run from several runtimes at the same moment; each result or refusal, in finishing order.

    `on_refused` is called at each refusal, so a call can be held open until the other resume was turned away."""
    import anyio

    from sayso import PauseConsumed, RunConflict

    outcomes: list[Any] = []

    async def resume(app: Sayso) -> None:
        try:
            outcomes.append(await app.resume(run_id))
        except (PauseConsumed, RunConflict) as refused:
            outcomes.append(refused)
            on_refused()

    async with anyio.create_task_group() as tg:
        for app in apps:
            tg.start_soon(resume, app)
    return outcomes


MakeApp = Callable[..., Sayso]


@pytest.fixture
def make_app(tmp_path: Path) -> Iterator[MakeApp]:
    """Build a runtime over one SQLite file from agent definitions written in the test."""

    def make(
        agents: dict[str, Any], *, model: Any = None, models: dict[str, Any] | None = None, **kwargs: Any
    ) -> Sayso:
        config = Config.model_validate(
            {"store": f"sqlite:///{tmp_path / 'sayso.db'}", "agents": agents, "base_dir": tmp_path}
        )
        return Sayso(config, models={**({"m": model} if model is not None else {}), **(models or {})}, **kwargs)

    yield make


@pytest.fixture
async def example_app() -> AsyncIterator[Sayso]:
    async with Sayso.from_yaml(EXAMPLE) as app:
        yield app
