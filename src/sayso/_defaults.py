"""The adapters the runtime falls back on when its caller passes none, filled in by the package root.

The runtime defines the ports and the protocol packages implement them; neither may import the
other. This list is where the two meet without either importing the other, and it lives outside
`_runtime/` so the package root can fill it without importing the whole runtime (`sayso --help`
stays instant).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._runtime._remote import RemoteAgents

DEFAULT_REMOTE_AGENTS: list[Callable[[], RemoteAgents]] = []
"""Factories of the A2A client remote delegates go through; the last one wins."""
