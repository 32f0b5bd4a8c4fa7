"""`RoutingPort`: the store's reading verb of routed requests' votes (docs/guides/routing.md#quorum).

A part of the `RunStore` port (which inherits it), kept in its own module because it is its own
concept: votes are written by `decide_request` inside the transaction that judged them (the
primitives `StoreTx.votes` / `add_vote`); this reads them for the interfaces that show where a
vote stands (the inbox, a run's requests, the transcript).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from .._core.votes import Vote


class RoutingPort(ABC):
    """The votes' reading verb every store implements (see `RunStore`)."""

    @abstractmethod
    async def votes(self, request_ids: Sequence[str]) -> dict[str, tuple[Vote, ...]]:
        """The votes cast on these requests, oldest first; requests without any are left out."""
