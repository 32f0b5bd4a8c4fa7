"""`LeasePort`: the store verbs of leases — which runtime holds a run, renewing it, taking it over, holds.

A part of the `RunStore` port (which inherits it), kept in its own module because it is its own
concept: a running run is held by one runtime (its lease holder) until a deadline the holder keeps
moving; a paused run is held only while its pause waits on a live call only that runtime can
answer (`RunStore.save_pause`'s `hold_until`). A lease that lapsed is found by `lapsed_runs` and
taken over by one caller (a conditional write); what the runtime does with them is `_runtime/_leases`'
and `_runtime/_holds`'.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from ._records import RunRecord


class LeasePort(ABC):
    """The lease verbs every store implements (see `RunStore`)."""

    @abstractmethod
    async def renew_lease(self, run_id: str, holder: str, until: float) -> bool:
        """Extend the lease of a running run, or `holder`'s hold on a paused one; `False` when it is not `holder`'s."""

    @abstractmethod
    async def release_hold(self, run_id: str, holder: str) -> bool:
        """A paused run `holder` held (`save_pause`'s `hold_until`) is held no more; `False` when it was not."""

    @abstractmethod
    async def take_over(
        self, run_id: str, *, holder: str, until: float, now: float, dead_holders: Sequence[str]
    ) -> bool:
        """Take a running run whose lease lapsed (or whose holder is known dead); exactly one caller wins."""

    @abstractmethod
    async def lapsed_runs(self, *, now: float, host: str | None = None, limit: int = 100) -> list[RunRecord]:
        """Running runs (and held pauses, `save_pause`'s `hold_until`) whose lease lapsed by `now`, oldest first.

        With `host`, also such runs held by a process on that host (lease holder `host:pid:…`),
        lapsed or not, so a restarted runtime can check at once whether their process died.
        """
