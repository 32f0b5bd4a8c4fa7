"""A real uvicorn server on 127.0.0.1 with a free port, serving the file-manager example."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn

from sayso import Config, PrincipalConfig, Sayso, load_config
from sayso.server import WebhookConfig, create_app

from ..conftest import EXAMPLE, free_port


@dataclass
class RunningServer:
    base_url: str
    server: uvicorn.Server
    thread: threading.Thread

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def start_server(
    config: Config, *, webhooks: Sequence[WebhookConfig] | None = None, expire_every_seconds: float | None = None
) -> RunningServer:
    port = free_port()
    app = create_app(Sayso(config), webhooks=webhooks, expire_every_seconds=expire_every_seconds)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    return RunningServer(base_url=f"http://127.0.0.1:{port}", server=server, thread=thread)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh sandbox folder and SQLite store for each test."""
    monkeypatch.setenv("SAYSO_SANDBOX", str(tmp_path / "sandbox"))
    monkeypatch.setenv("SAYSO_STORE", f"sqlite:///{tmp_path / 'sayso.db'}")
    return tmp_path


@pytest.fixture
def example_config(workdir: Path) -> Config:
    return load_config(EXAMPLE)


ServerFactory = Callable[..., RunningServer]


@pytest.fixture
def serve(workdir: Path) -> Iterator[ServerFactory]:
    """Start servers for a test and stop them after it."""
    started: list[RunningServer] = []

    def factory(
        *,
        config: Config | None = None,
        principals: Sequence[PrincipalConfig] = (),
        webhooks: Sequence[WebhookConfig] | None = None,
        expire_every_seconds: float | None = None,
    ) -> RunningServer:
        config = (config or load_config(EXAMPLE)).model_copy(update={"principals": list(principals)})
        running = start_server(config, webhooks=webhooks, expire_every_seconds=expire_every_seconds)
        started.append(running)
        return running

    yield factory
    for running in started:
        running.stop()


@pytest.fixture
def server(serve: ServerFactory) -> RunningServer:
    """A server in local development mode."""
    return serve()


HELPER_SCRIPT = """
name: helper
rules:
  - user: '^survey'
    call: ask_user
    args:
      questions:
        - {question: "Which colours do you like?", choices: [red, green, blue], multiple: true}
  - tool: ask_user
    result: '(?s)(?P<answers>.*)'
    reply: "You said: {answers}"
  - user: '^locate'
    call: get_location
    args: {precision: city}
  - tool: get_location
    result: '(?s)(?P<where>.*)'
    reply: "You are at {where}"
fallback: "[script] I know: survey, locate."
"""


@pytest.fixture
def helper_config(workdir: Path) -> Config:
    """An agent that asks a multiple-choice question (`survey`) or calls a client tool (`locate`)."""
    (workdir / "helper.yaml").write_text(HELPER_SCRIPT)
    return Config.model_validate(
        {
            "store": f"sqlite:///{workdir / 'sayso.db'}",
            "models": {"script": {"scripted": "helper.yaml"}},
            "agents": {"helper": {"model": "script", "client_tools": ["get_location"]}},
            "base_dir": workdir,
        }
    )
