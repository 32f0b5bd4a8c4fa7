"""The file-manager example served with A2A and AG-UI, reached in-process through an ASGI transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from pydantic_ai.models import Model

from sayso import Config, Sayso, load_config
from sayso.protocols.a2a import a2a_router
from sayso.protocols.ag_ui import ag_ui_router
from sayso.server import create_app

from ..conftest import EXAMPLE, InProcess
from ..models import Said, ToolModel, tool_model

__all__ = [
    "EXAMPLE",
    "NOT_ASKED",
    "InProcess",
    "ServerFactory",
    "client_tool",
    "example_config",
    "protocol_app",
    "two_deletes",
]

NOT_ASKED = "I am a test model and nobody asked me that."
"""What the models below answer to anything else."""


def two_deletes() -> ToolModel:
    """In place of the example's model: `delete both` asks to delete notes.txt and todo.md in one turn, `delete NAME`
    one file; the model then says `Done: ` and what the (first) call returned."""

    def route(said: str) -> Said:
        words = said.split()
        if words == ["delete", "both"]:
            return [("delete_file", {"name": "notes.txt"}), ("delete_file", {"name": "todo.md"})]
        if len(words) == 2 and words[0] == "delete":
            return "delete_file", {"name": words[1]}
        return NOT_ASKED

    return tool_model(route, read="Done: {result}")


def client_tool() -> ToolModel:
    """In place of the example's model: `color please` calls the browser's `pick_color`; the model then says what
    the browser chose."""
    return tool_model(
        lambda said: ("pick_color", {}) if said.strip() == "color please" else NOT_ASKED,
        read="The browser chose {result}.",
    )


def example_config(**overrides: Any) -> Config:
    """The example's config, with top-level keys replaced (models, agents, a2a ...)."""
    config = load_config(EXAMPLE)
    if overrides:
        config = Config.model_validate({**config.model_dump(), **overrides, "base_dir": config.base_dir})
    return config


def protocol_app(sayso: Sayso) -> FastAPI:
    """The server with both protocol adapters mounted, as `sayso serve` builds it."""
    return create_app(sayso, routers=[a2a_router(sayso), ag_ui_router(sayso)], expire_every_seconds=None)


ServerFactory = Callable[..., Awaitable[InProcess]]


SAMPLES = {
    "notes.txt": "Buy milk. Call the plumber.\n",
    "report-2025.txt": "Revenue grew 4% in 2025.\n",
    "report-2026.txt": "Revenue grew 6% in 2026.\n",
    "todo.md": "- water the plants\n- file the taxes\n",
}


def filled(folder: Path) -> Path:
    """`folder` (made if missing) with the sample files in it."""
    folder.mkdir(exist_ok=True)
    for name, text in SAMPLES.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """The example's sandbox folder (SAYSO_SANDBOX), filled with its sample files."""
    return filled(tmp_path / "sandbox")


@pytest.fixture
async def serve() -> AsyncIterator[ServerFactory]:
    """Start servers of the example (with config overrides, or another `config`; `models` in place of the configured
    models of their names) for a test; stop them after it."""
    started: list[InProcess] = []

    async def factory(
        *, config: Config | None = None, models: Mapping[str, Model] | None = None, **overrides: Any
    ) -> InProcess:
        sayso = Sayso(config or example_config(**overrides), models=models)
        served = await InProcess(app=protocol_app(sayso), sayso=sayso).start()
        started.append(served)
        return served

    yield factory
    for served in started:
        await served.stop()
