from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pydantic_ai.models
import pytest

from sayso import Config, Sayso, ScriptedModel
from sayso._scripted import Script

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
    yield


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def script(*rules: dict[str, Any], fallback: str = "no rule matched") -> ScriptedModel:
    """A scripted model from rules written inline."""
    return ScriptedModel(Script.model_validate({"name": "test", "rules": list(rules), "fallback": fallback}))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def resume_at_once(apps: list[Sayso], run_id: str) -> list[Any]:
    """Resume one run from several runtimes at the same moment; each result or refusal, in finishing order."""
    import anyio

    from sayso import PauseConsumed, RunConflict

    outcomes: list[Any] = []

    async def resume(app: Sayso) -> None:
        try:
            outcomes.append(await app.resume(run_id))
        except (PauseConsumed, RunConflict) as refused:
            outcomes.append(refused)

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
