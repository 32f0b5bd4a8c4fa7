"""Protocol adapters: A2A with kagent's HITL extension (`sayso.protocols.a2a`) and AG-UI (`sayso.protocols.ag_ui`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter

    from .._runtime import Sayso


def protocol_routers(sayso: Sayso) -> list[APIRouter]:
    """The routers `sayso serve` mounts: A2A (`/a2a/{agent}`, agent cards) and AG-UI (`/ag-ui/{agent}`)."""
    from .a2a import a2a_router

    routers = [a2a_router(sayso)]
    try:
        from .ag_ui import ag_ui_router
    except ImportError:  # pragma: no cover - until the AG-UI adapter lands
        return routers
    routers.append(ag_ui_router(sayso))
    return routers


__all__ = ["protocol_routers"]
