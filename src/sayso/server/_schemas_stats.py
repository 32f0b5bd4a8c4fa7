"""The REST wire format of `GET /v1/stats`: approval rates and times to decide over a window, overall and by group.

Kept beside `_schemas_out`, whose conventions it follows (every field sent is documented, nothing else is).
"""

from __future__ import annotations

from ._schemas_out import Rfc3339, _Out


class RatesOut(_Out):
    """One group's approval requests in the window and what became of them; each rate is a share of `requests`."""

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
    """Median seconds from the request to a person's decision (`null`: none decided by a person)."""
    decide_p90_seconds: float | None


class StatsOut(_Out):
    """How approvals went over a window: overall, per tool, per rule (`(no rule)` when none asked) and approver."""

    since: Rfc3339
    until: Rfc3339
    window_seconds: float
    overall: RatesOut
    by_tool: dict[str, RatesOut]
    by_rule: dict[str, RatesOut]
    by_approver: dict[str, RatesOut]
    """Per person who decided: the requests they decided."""
