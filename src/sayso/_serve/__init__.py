"""`sayso serve`: load the config, enforce the local-mode bind rule, and run every HTTP interface on uvicorn.

The composition root of the edges: REST and the web UI (`sayso.server`) with the protocol adapters
(`sayso.protocols`) mounted beside them. No edge imports another; this module joins them, and the
CLI's `sayso serve` calls it.
"""

from __future__ import annotations

import logging
from types import FrameType

import uvicorn

from .._config.file import load_config
from .._runtime import Sayso
from ..protocols import protocol_apps, protocol_routers
from ..server._app import DEFAULT_EXPIRE_EVERY_SECONDS, DEFAULT_RECOVER_EVERY_SECONDS, create_app
from ..server._bind import LOCAL_HOST, check_bind
from ..server._deps import ServerState
from ..server._heap import HeapSettler

logger = logging.getLogger("sayso.server")

GRACEFUL_SHUTDOWN_SECONDS = 30
"""How long in-flight requests get to finish after SIGTERM or Ctrl-C."""

HEAP_CHECK_TICKS = 50
"""uvicorn ticks (0.1 s each) between looks at the garbage collector's oldest generation."""


class _Server(uvicorn.Server):
    """uvicorn's server, telling live streams (`/v1/events`) to end the moment it is asked to stop.

    uvicorn waits for open responses before it stops the app, and a live stream is open for a
    long while; so the streams learn of the stop here and end at their next look (within a second).
    Its ticks also keep long-lived objects out of the garbage collector's full passes (`_heap`).
    """

    def __init__(self, config: uvicorn.Config, state: ServerState) -> None:
        super().__init__(config)
        self._state = state
        self._heap = HeapSettler()

    async def on_tick(self, counter: int) -> bool:
        if counter % HEAP_CHECK_TICKS == 0:
            self._heap.check()
        return await super().on_tick(counter)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._state.closing = True
        super().handle_exit(sig, frame)


def serve(
    config_path: str,
    host: str = LOCAL_HOST,
    port: int = 8000,
    *,
    expire_every_seconds: float | None = DEFAULT_EXPIRE_EVERY_SECONDS,
    recover_every_seconds: float | None = DEFAULT_RECOVER_EVERY_SECONDS,
) -> None:
    """Serve REST, the web UI, A2A, AG-UI and MCP (`/mcp`) for a config until interrupted (`sayso serve CONFIG`).

    Args:
        config_path: the `sayso.yaml` to serve (its `webhooks:` receive request events).
        host: the address to bind; only 127.0.0.1 without principals.
        port: the TCP port.
        expire_every_seconds: how often to close runs whose open requests all expired, and to prune
            webhook events past their retention.
        recover_every_seconds: how often to carry on runs whose process died (also once at start).

    Raises:
        ConfigError: the config is invalid, or local development mode was asked to bind elsewhere.
    """
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    config = load_config(config_path)
    check_bind(config, host)
    sayso = Sayso(config)
    app = create_app(
        sayso,
        expire_every_seconds=expire_every_seconds,
        recover_every_seconds=recover_every_seconds,
        routers=protocol_routers(sayso),
        apps=protocol_apps(sayso),
    )
    logger.info("sayso serves %s on http://%s:%d (UI at /, API docs at /docs)", config_path, host, port)
    listening = uvicorn.Config(
        app, host=host, port=port, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS, log_level="info"
    )
    _Server(listening, app.state.sayso_server).run()
