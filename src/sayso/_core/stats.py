"""Approval statistics: time to decide, and approval, rejection, expiry and escalation rates, over a window.

Overall, per tool, per rule and per approver. Pure: computed from the store's listing of the window's
requests (`RequestFact`s), the same for every backend and interface.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

NO_RULE = "(no rule)"
"""The rule a request is counted under when no policy rule asked (a tool's body, a hook, a service)."""


class Fact(Protocol):
    """What statistics read of one request (the store's `RequestFact`)."""

    @property
    def tool_name(self) -> str: ...
    @property
    def rule(self) -> str | None: ...
    @property
    def created_at(self) -> float: ...
    @property
    def escalations(self) -> int: ...
    @property
    def decision(self) -> str | None: ...
    @property
    def by(self) -> str | None: ...
    @property
    def principal(self) -> str | None: ...
    @property
    def decided_at(self) -> float | None: ...
    @property
    def closed(self) -> bool: ...


@dataclass(frozen=True, kw_only=True)
class Rates:
    """One group's requests and what became of them; each rate is a share of `requests` (`None` when none)."""

    requests: int
    decided: int
    """Requests with a decision of their own: a person's, a rule's, a service's or the timeout's."""
    approved: int
    rejected: int
    expired: int
    """Timed out: expired, or rejected or approved by the rule's `on_timeout`."""
    escalated: int
    """Requests at least one escalation step fired for."""
    open: int
    closed: int
    """Closed unanswered: the run went on without them (a forced resume, a new message, a cancel)."""
    approval_rate: float | None
    rejection_rate: float | None
    expiry_rate: float | None
    closed_rate: float | None
    open_rate: float | None
    escalation_rate: float | None
    decide_p50_seconds: float | None
    """Median time from the request to a person's decision."""
    decide_p90_seconds: float | None


@dataclass(frozen=True, kw_only=True)
class Stats:
    """Approval statistics over a window."""

    since: float
    until: float
    overall: Rates
    by_tool: dict[str, Rates]
    by_rule: dict[str, Rates]
    by_approver: dict[str, Rates]
    """Per person who decided: the requests they decided (a person's own decisions only)."""


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile (`share` 0.5: the median); `None` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _share(count: int, total: int) -> float | None:
    return round(count / total, 4) if total else None


def rates(facts: Sequence[Fact]) -> Rates:
    """What became of `facts`, counted."""
    by_person = [f for f in facts if _persons(f) is not None and f.decided_at is not None]
    waits = [f.decided_at - f.created_at for f in by_person if f.decided_at is not None]
    timed_out = sum(f.by == "expiry" for f in facts)
    approved = sum(f.decision == "approve" for f in facts)
    rejected = sum(f.decision == "reject" for f in facts)
    escalated = sum(f.escalations > 0 for f in facts)
    still_open = sum(f.decision is None for f in facts)
    closed = sum(f.closed for f in facts)
    total = len(facts)
    return Rates(
        requests=total,
        decided=sum(f.decision is not None and not f.closed for f in facts),
        approved=approved,
        rejected=rejected,
        expired=timed_out,
        escalated=escalated,
        open=still_open,
        closed=closed,
        approval_rate=_share(approved, total),
        rejection_rate=_share(rejected, total),
        expiry_rate=_share(timed_out, total),
        closed_rate=_share(closed, total),
        open_rate=_share(still_open, total),
        escalation_rate=_share(escalated, total),
        decide_p50_seconds=percentile(waits, 0.5),
        decide_p90_seconds=percentile(waits, 0.9),
    )


def _persons(fact: Fact) -> str | None:
    """Who decided `fact` as a person: not a rule, a timeout, or someone who closed it unanswered."""
    return fact.principal if fact.by == "person" and not fact.closed else None


def _grouped(facts: Iterable[Fact], key: Callable[[Fact], str | None]) -> dict[str, Rates]:
    groups: dict[str, list[Fact]] = {}
    for fact in facts:
        name = key(fact)
        if name is not None:
            groups.setdefault(name, []).append(fact)
    return {name: rates(group) for name, group in sorted(groups.items())}


def summarize(facts: Sequence[Fact], *, since: float, until: float) -> Stats:
    """The statistics of the requests raised in `[since, until)`."""
    return Stats(
        since=since,
        until=until,
        overall=rates(facts),
        by_tool=_grouped(facts, lambda f: f.tool_name),
        by_rule=_grouped(facts, lambda f: f.rule or NO_RULE),
        by_approver=_grouped(facts, _persons),
    )
