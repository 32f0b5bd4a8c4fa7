"""Protocol adapters: A2A with kagent's HITL extension, AG-UI, and MCP (each agent as a tool at `/mcp`).

`sayso.protocols.a2a`, `sayso.protocols.ag_ui` and `sayso.protocols.mcp`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from fastapi import APIRouter
    from starlette.applications import Starlette

    from .._runtime import Sayso


def protocol_routers(
    sayso: Sayso,
    *,
    grpc_port: int | None = None,
    grpc_host: str = "127.0.0.1",
    on_grpc_listening: Callable[[int], None] | None = None,
) -> list[APIRouter]:
    """The routers `sayso serve` mounts: A2A (`/a2a/{agent}`, agent cards) and AG-UI (`/ag-ui/{agent}`).

    With `grpc_port`, A2A is also served over gRPC on `grpc_host:grpc_port` while the app runs; the
    port it listens on (the one the system picked for 0) is told `on_grpc_listening`.
    """
    from .a2a import a2a_router

    routers = [a2a_router(sayso, grpc_port=grpc_port, grpc_host=grpc_host, on_grpc_listening=on_grpc_listening)]
    try:
        from .ag_ui import ag_ui_router
    except ImportError:  # pragma: no cover - until the AG-UI adapter lands
        return routers
    routers.append(ag_ui_router(sayso))
    return routers


def protocol_apps(sayso: Sayso) -> list[tuple[str, Starlette]]:
    """The apps `sayso serve` serves beside the routers, each at its path: `/mcp` when the `mcp` extra is installed."""
    try:
        from .mcp import PATH, mcp_app
    except ImportError:
        return []
    return [(PATH, mcp_app(sayso))]


__all__ = ["protocol_apps", "protocol_routers"]
