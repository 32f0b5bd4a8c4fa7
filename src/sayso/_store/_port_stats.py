"""`StatsPort`: the store's listing of approval requests in a window with what became of each, for statistics."""

from __future__ import annotations

from abc import ABC, abstractmethod

from ._records import RequestFact


class StatsPort(ABC):
    """The statistics listing every store implements (see `RunStore`)."""

    @abstractmethod
    async def request_facts(self, *, since: float, until: float) -> list[RequestFact]:
        """Every approval request raised in `[since, until)`, with its decision (if any) and escalation count.

        Read in one query (SQL: requests joined to decisions over `ix_requests_open`'s `created_at`); the
        numbers themselves are computed by the core (`_core/stats.py`), the same for every backend.
        """
