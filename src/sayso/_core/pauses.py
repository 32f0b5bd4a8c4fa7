"""Where a pause and its requests stand: what the store reads back for the decide rule, a resume and the interfaces.

`PauseState` and `RequestState` are plain records of what was raised and decided; the rule that judges a
decision on them is `deciding`'s. They live apart from it so that a caller that only shows requests (the
inbox, `sayso inbox`) loads the records, not the rule and the resume plan beneath it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from .decisions import DecisionRecord
from .requests import Request
from .votes import Vote

PauseStatus: TypeAlias = Literal["open", "consumed"]
"""A pause waits (`open`) until one resume consumes it; it is consumed exactly once."""


@dataclass(frozen=True, kw_only=True)
class PauseState:
    """A pause as the runtime needs it to decide or resume: its run, status, requests and decisions."""

    run_id: str
    """The run that paused."""
    status: PauseStatus
    """Whether the pause still waits."""
    requests: list[Request]
    """The requests of the pause, in the order they were raised."""
    decisions: dict[str, DecisionRecord]
    """The decisions taken so far, by request id."""


@dataclass(frozen=True, kw_only=True)
class RequestState:
    """One request, the status of its pause, and its decision if any."""

    request: Request
    """The request as it was raised."""
    pause_status: PauseStatus
    """`consumed` once the run resumed past this request's pause (no more decisions are taken)."""
    decision: DecisionRecord | None
    """The decision taken, if any; the first one wins."""
    votes: tuple[Vote, ...] = ()
    """The votes cast so far on a request that needs several approvals (docs/guides/routing.md), oldest first."""
