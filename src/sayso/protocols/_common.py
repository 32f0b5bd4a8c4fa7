"""What the protocol adapters share: the refusal they raise at the edge, and an agent endpoint's state."""

from __future__ import annotations

import time
from collections.abc import Callable

from .._runtime import Sayso
from ..exceptions import SaysoError


class ProtocolRefusal(SaysoError):
    """A protocol message refused where it entered; nothing was recorded.

    Args:
        problem: what is wrong, in words the client can act on.
    """

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(problem)

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return self.__class__, (self.problem,)


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
