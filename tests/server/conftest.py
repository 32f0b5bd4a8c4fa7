"""The server of the file-manager example, reached in-process through an ASGI transport."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path

import pytest
from pydantic_ai.models import Model

from sayso import Config, PrincipalConfig, Sayso, load_config
from sayso.server import WebhookConfig, create_app

from ..conftest import EXAMPLE, InProcess
from ..models import Said, tool_model

__all__ = ["EXAMPLE", "InProcess", "ServerFactory", "helper_models"]


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
    """Start servers for a test (the example by default, with the principals given; `models` in place of the
    configured models of their names) and stop them after it."""
    started: list[InProcess] = []

    async def factory(
        *,
        config: Config | None = None,
        principals: Sequence[PrincipalConfig] = (),
        webhooks: Sequence[WebhookConfig] | None = None,
        expire_every_seconds: float | None = None,
        clock: Callable[[], float] = time.time,
        models: Mapping[str, Model] | None = None,
    ) -> InProcess:
        config = (config or load_config(EXAMPLE)).model_copy(update={"principals": list(principals)})
        sayso = Sayso(config, clock=clock, models=models)
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


SURVEY = {
    "questions": [{"question": "Which colours do you like?", "choices": ["red", "green", "blue"], "multiple": True}]
}


def helper_models() -> dict[str, Model]:
    """The model of `helper_config`'s agent, by name, for `Sayso(models=...)`: `survey` asks a multiple-choice
    question (`You said: ` the answers), `locate` calls the client's `get_location` (`You are at ` what it gave)."""

    def route(said: str) -> Said:
        if said.startswith("survey"):
            return "ask_user", SURVEY
        if said.startswith("locate"):
            return "get_location", {"precision": "city"}
        return "I know: survey, locate."

    def read(tool: str, result: str) -> str:
        return f"You said: {result}" if tool == "ask_user" else f"You are at {result}"

    return {"helper": tool_model(route, read=read)}


@pytest.fixture
def helper_config(workdir: Path) -> Config:
    """An agent that asks a multiple-choice question or calls a client tool; its model is `helper_models()`."""
    return Config.model_validate(
        {
            "store": f"sqlite:///{workdir / 'sayso.db'}",
            "agents": {"helper": {"model": "helper", "client_tools": ["get_location"]}},
            "base_dir": workdir,
        }
    )
