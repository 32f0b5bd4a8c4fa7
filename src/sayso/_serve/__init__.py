"""`sayso serve`: load the config, enforce the local-mode bind rule, and run every HTTP interface on uvicorn.

The composition root of the edges: REST and the web UI (`sayso.server`) with the protocol adapters
(`sayso.protocols`) mounted beside them. No edge imports another; this module joins them, and the
CLI's `sayso serve` calls it. A person starting a server reads one line per thing they need (where
it serves, the store, the mode) once it listens; the libraries' start-up chatter (migrations,
workers) stays below warning.
"""

from __future__ import annotations

import errno
import logging
import socket
import sys
from collections.abc import Callable
from types import FrameType

import anyio
import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._config.file import Config, load_config
from .._core.store_urls import store_url
from .._runtime import Sayso, build_codecs
from ..channels import FORM_PATHS, channels_router
from ..exceptions import ConfigError, SaysoError
from ..protocols import protocol_apps, protocol_routers
from ..server._app import DEFAULT_EXPIRE_EVERY_SECONDS, DEFAULT_RECOVER_EVERY_SECONDS, create_app
from ..server._bind import LOCAL_HOST, bind_address, check_bind, url_host
from ..server._deps import ServerState
from ..server._heap import HeapSettler, limit_malloc_arenas

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

    def __init__(self, config: uvicorn.Config, state: ServerState, banner: Callable[[int], list[str]]) -> None:
        super().__init__(config)
        self._state = state
        self._heap = HeapSettler()
        self._banner = banner

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:  # said once it listens: a config that did not load printed no banner
            for line in self._banner(self._port()):
                logger.info(line)

    def _port(self) -> int:
        """The port it listens on: the one asked for, or with `--port 0` the one the system picked."""
        bound = [s.getsockname()[1] for server in self.servers for s in server.sockets]
        return bound[0] if bound else self.config.port

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets)
        logger.info("sayso stopped cleanly")

    async def on_tick(self, counter: int) -> bool:
        if counter % HEAP_CHECK_TICKS == 0:
            self._heap.check()
        return await super().on_tick(counter)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._state.closing = True
        super().handle_exit(sig, frame)


class _StartFailure:
    """The app, with a runtime that cannot start (its store unreachable, say) kept as the error it is.

    Starlette reports a lifespan that raised with the whole traceback, which uvicorn prints: ~150
    lines for a database that is down. A sayso error says all there is to say in its message, so
    its traceback is left out and `serve` raises the error itself once uvicorn has given up, for the
    CLI to print in one line as it prints every other reason it cannot serve.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.failure: SaysoError | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def said(message: Message) -> None:
            failed = sys.exc_info()[1]  # Starlette sends the failure from the `except` that caught it
            if message["type"] == "lifespan.startup.failed" and isinstance(failed, SaysoError):
                self.failure = failed
                message = {**message, "message": ""}
            await send(message)

        await self.app(scope, receive, said)

    def filter(self, record: logging.LogRecord) -> bool:
        """Keeps out uvicorn's own "Application startup failed" line when the error is said in its place."""
        return self.failure is None or record.getMessage() != "Application startup failed. Exiting."


_PORT_ERRORS = (errno.EADDRINUSE, errno.EACCES)
"""What `bind` says when the port is the problem (taken, or below 1024 for a user), not the address."""


def check_port(host: str, port: int) -> None:
    """Refuse, before anything starts, a port another process holds.

    Raises:
        OSError: nothing can listen on `host:port`; the message says so and how to pick another.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            # A port taken or reserved is fixed with another port; an unknown or foreign address, with another host.
            fix = "pick another port with --port" if exc.errno in _PORT_ERRORS else "check the address --host names"
            raise OSError(exc.errno, f"cannot listen on {url_host(host)}:{port}: {exc.strerror}; {fix}") from None


def banner(config_path: str, config: Config, host: str, port: int) -> list[str]:
    """What a person starting the server reads: where it serves, its store, and its mode."""
    mode = (
        f"mode: {len(config.principals)} principal(s), each signing in with a bearer token"
        if config.principals
        else f"mode: LOCAL DEVELOPMENT MODE, no principals: anyone who can reach {url_host(host)} may run agents "
        "and decide every request as 'local'; add 'principals:' with tokens before sharing this server"
    )
    lines = [
        f"sayso serves {config_path} on http://{url_host(host)}:{port}/  (API docs at /docs; Ctrl-C stops)",
        f"store: {store_url(config.store_url(), base_dir=config.base_dir).shown}",
        mode,
    ]
    channels = config.channels
    reached = [f"email through {channels.email.smtp_host}:{channels.email.smtp_port}"] if channels.email else []
    if channels.slack:
        reached.append("Slack (its interactions at /v1/slack/interactions)")
    if reached:
        lines.append(f"channels: {', '.join(reached)}; links point at {channels.public_url or 'nowhere yet'}")
    return lines


class _Plain(logging.Formatter):
    """sayso's own lines as plain sentences; everything else with its level and source."""

    def format(self, record: logging.LogRecord) -> str:
        if record.name == "sayso.config" or (record.name.startswith("sayso") and record.levelno == logging.INFO):
            return record.getMessage()  # a config problem already reads `file:line: warning: ...`
        return f"{record.levelname.lower()}: {record.name}: {record.getMessage()}"


def _quiet_logging() -> None:
    """Our lines at info, every library at warning; a host that set up logging keeps its own."""
    if logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(_Plain())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    logging.getLogger("sayso").setLevel(logging.INFO)


def compose(
    sayso: Sayso,
    *,
    expire_every_seconds: float | None = DEFAULT_EXPIRE_EVERY_SECONDS,
    recover_every_seconds: float | None = DEFAULT_RECOVER_EVERY_SECONDS,
    grpc_port: int | None = None,
    grpc_host: str = LOCAL_HOST,
    on_grpc_listening: Callable[[int], None] | None = None,
) -> FastAPI:
    """The app `sayso serve` runs: REST and the web UI, every protocol, and the channels (notices, links, Slack).

    Raises:
        ConfigError: a channel the config names cannot be set up (its extra or a secret is missing).
    """
    channels = channels_router(sayso)
    return create_app(
        sayso,
        expire_every_seconds=expire_every_seconds,
        recover_every_seconds=recover_every_seconds,
        routers=[
            *protocol_routers(sayso, grpc_port=grpc_port, grpc_host=grpc_host, on_grpc_listening=on_grpc_listening),
            *([channels] if channels else []),
        ],
        apps=protocol_apps(sayso),
        form_paths=FORM_PATHS if channels else (),
    )


async def verify_mcp(sayso: Sayso) -> None:
    """Check each agent's MCP bindings against its servers before serving (`Sayso.verify_tools`).

    A binding naming a tool its server does not offer is a config error found now rather than by the
    first run. A server that cannot be reached yet is only warned about: it may come up later, and
    every run checks its bindings again when it lists the tools.

    Raises:
        ConfigError: a binding names a tool its server does not offer, or a rule an argument it lacks.
    """
    for name, agent in sayso.config.agents.items():
        if not agent.mcp:
            continue
        try:
            await sayso.verify_tools(name)
        except ConfigError:
            raise
        except Exception as exc:  # the server did not start, refused the connection, timed out
            logger.warning("could not check the MCP tools of agent %r now (%s); each run checks them", name, exc)


def serve(
    config_path: str,
    host: str = LOCAL_HOST,
    port: int = 8000,
    *,
    expire_every_seconds: float | None = DEFAULT_EXPIRE_EVERY_SECONDS,
    recover_every_seconds: float | None = DEFAULT_RECOVER_EVERY_SECONDS,
    grpc_port: int | None = None,
) -> None:
    """Serve REST, the web UI, A2A, AG-UI and MCP (`/mcp`) for a config until interrupted (`sayso serve CONFIG`).

    Args:
        config_path: the `sayso.yaml` to serve (its `webhooks:` receive request events).
        host: the address to bind; only a loopback name (127.0.0.1, localhost, ::1) without principals.
        port: the TCP port (0: any free one, which the start-up line then names).
        expire_every_seconds: how often to close runs whose open requests all expired, and to prune
            webhook events past their retention.
        recover_every_seconds: how often to carry on runs whose process died (also once at start).
        grpc_port: also serve A2A over gRPC on this port of `host` (the `grpc` extra).

    Raises:
        ConfigError: the config is invalid, local development mode was asked to bind elsewhere, or an MCP
            binding names a tool its server does not offer.
        OSError: the port is taken.
        SaysoError: the runtime could not start (its store cannot be opened, say).
    """
    _quiet_logging()
    limit_malloc_arenas()  # before any thread starts: a flat resident size under steady load (`_heap`)
    config = load_config(config_path)
    check_bind(config, host)
    host = bind_address(host)  # `--host [::1]`, as a URL writes it, binds ::1
    check_port(host, port)
    sayso = Sayso(config)
    anyio.run(verify_mcp, sayso)
    grpc_listening: list[int] = []  # the gRPC port it got (the system's pick for 0), once the app has started
    app = compose(
        sayso,
        expire_every_seconds=expire_every_seconds,
        recover_every_seconds=recover_every_seconds,
        grpc_port=grpc_port,
        grpc_host=url_host(host),
        on_grpc_listening=grpc_listening.append,
    )
    started = _StartFailure(app)
    listening = uvicorn.Config(
        started, host=host, port=port, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS, log_level="warning"
    )
    logging.getLogger("uvicorn.access").setLevel(logging.INFO)  # each request, one line, as uvicorn writes it
    logging.getLogger("uvicorn.error").addFilter(started.filter)

    def lines(bound: int) -> list[str]:
        said = banner(config_path, config, host, bound)
        if grpc_listening:
            said.insert(
                1, f"A2A over gRPC on {url_host(host)}:{grpc_listening[-1]} (tenant: {config.a2a.namespace}/<name>)"
            )
        return said

    build_codecs()  # the first request after a start is served as fast as the next (`_runtime/_codecs.py`)
    try:
        _Server(listening, app.state.sayso_server, lines).run()
    finally:
        if started.failure is not None:
            raise started.failure
