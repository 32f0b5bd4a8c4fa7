"""`TopRunsPort`: the store verb that pages top-level runs (A2A's tasks) by owner, agent, thread, status and time.

A part of the `RunStore` port (which inherits it). A2A lists a caller's tasks: every top-level run
of an agent's threads, newest update first. The store answers a page of them and how many there
are from its indexes, so a caller with thousands of threads is not read thread by thread.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from ._records import RunRecord, RunStatus


@dataclass(frozen=True, kw_only=True)
class RunQuery:
    """Which top-level runs a listing holds: one agent's, in its threads (the thread's agent is it too)."""

    agent: str
    owner: str | None = None
    """Only the threads this principal owns; `None`: every owner's (the runtime decides who may ask that)."""
    thread_id: str | None = None
    """Only this thread's runs."""
    status: RunStatus | None = None
    updated_from: float | None = None
    """Only runs last updated at or after this time."""


@dataclass(frozen=True, kw_only=True)
class RunPage:
    """A page of top-level runs, newest update first (ties: the larger id first)."""

    runs: list[RunRecord]
    more: bool
    """Whether runs come after this page: ask again `before` its last run's `(updated_at, run_id)`."""
    total: int
    """How many runs the query lists across every page."""


class TopRunsPort(ABC):
    """The verb every store implements (see `RunStore`)."""

    @abstractmethod
    async def top_runs(self, query: RunQuery, *, limit: int, before: tuple[float, str] | None = None) -> RunPage:
        """The newest `limit` runs `query` lists that come after `before` (an `(updated_at, run_id)`) in its order.

        A delegate's run (one with a parent) is never listed, nor a run of a thread a delegate works in.
        """
