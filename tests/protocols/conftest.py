"""A real uvicorn server on 127.0.0.1 with a free port, serving the file-manager example with A2A and AG-UI."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from sayso import Config, Sayso, load_config
from sayso.protocols.a2a import a2a_router
from sayso.server import create_app

from ..conftest import EXAMPLE, free_port


@dataclass
class Server:
    base_url: str
    sayso: Sayso
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def start(config: Config) -> Server:
    port = free_port()
    sayso = Sayso(config)
    routers = [a2a_router(sayso)]
    try:
        from sayso.protocols.ag_ui import ag_ui_router

        routers.append(ag_ui_router(sayso))
    except ImportError:
        pass
    app = create_app(sayso, routers=routers, expire_every_seconds=None)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    return Server(base_url=f"http://127.0.0.1:{port}", sayso=sayso, server=server, thread=thread)


ServerFactory = Callable[..., Server]


SAMPLES = {
    "notes.txt": "Buy milk. Call the plumber.\n",
    "report-2025.txt": "Revenue grew 4% in 2025.\n",
    "report-2026.txt": "Revenue grew 6% in 2026.\n",
    "todo.md": "- water the plants\n- file the taxes\n",
}


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """The example's sandbox folder (SAYSO_SANDBOX), filled with its sample files."""
    folder = tmp_path / "sandbox"
    folder.mkdir(exist_ok=True)
    for name, text in SAMPLES.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def serve() -> Iterator[ServerFactory]:
    """Start servers of the example (with config overrides) for a test, and stop them after it."""
    started: list[Server] = []

    def factory(**overrides: Any) -> Server:
        config = load_config(EXAMPLE)
        if overrides:
            config = Config.model_validate({**config.model_dump(), **overrides, "base_dir": config.base_dir})
        server = start(config)
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()
