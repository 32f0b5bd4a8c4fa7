"""The server of the file-manager example, reached in-process through an ASGI transport."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import pytest

from sayso import Config, PrincipalConfig, Sayso, load_config
from sayso.server import WebhookConfig, create_app

from ..conftest import EXAMPLE, InProcess

__all__ = ["EXAMPLE", "InProcess", "ServerFactory"]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh sandbox folder and SQLite store for each test."""
    monkeypatch.setenv("SAYSO_SANDBOX", str(tmp_path / "sandbox"))
    monkeypatch.setenv("SAYSO_STORE", f"sqlite:///{tmp_path / 'sayso.db'}")
    return tmp_path


@pytest.fixture
def example_config(workdir: Path) -> Config:
    return load_config(EXAMPLE)


ServerFactory = Callable[..., Awaitable[InProcess]]


@pytest.fixture
async def serve(workdir: Path) -> AsyncIterator[ServerFactory]:
    """Start servers for a test (the example by default, with the principals given) and stop them after it."""
    started: list[InProcess] = []

    async def factory(
        *,
        config: Config | None = None,
        principals: Sequence[PrincipalConfig] = (),
        webhooks: Sequence[WebhookConfig] | None = None,
        expire_every_seconds: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> InProcess:
        config = (config or load_config(EXAMPLE)).model_copy(update={"principals": list(principals)})
        sayso = Sayso(config, clock=clock)
        app = create_app(sayso, webhooks=webhooks, expire_every_seconds=expire_every_seconds)
        served = await InProcess(app=app, sayso=sayso).start()
        started.append(served)
        return served

    yield factory
    for served in started:
        await served.stop()


@pytest.fixture
async def server(serve: ServerFactory) -> InProcess:
    """A server in local development mode."""
    return await serve()


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
