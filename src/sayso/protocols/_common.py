"""What the protocol adapters share: an agent endpoint's state."""

from __future__ import annotations

import time
from collections.abc import Callable

from .._runtime import Sayso


class AgentEndpoint:
    """One agent of a runtime, served over a protocol.

    Args:
        sayso: the runtime (opened by the server's lifespan).
        agent: the agent this endpoint talks to.
        clock: seconds since the epoch.
    """

    def __init__(self, sayso: Sayso, agent: str, *, clock: Callable[[], float] = time.time) -> None:
        self.sayso = sayso
        self.agent = agent
        self._clock = clock
