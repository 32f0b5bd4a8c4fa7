"""`EscalationPort`: the store verbs of escalation timers — which requests' next steps are due, firing one once.

A part of the `RunStore` port (which inherits it). Each open request with escalation steps keeps
when its next step is due and how many fired, set when its pause is saved; the sweep reads the due
ones and fires each step in one transaction that claims it (a conditional update), records it in
the audit log and writes a `request.escalated` outbox event: once, whichever replica sweeps.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from .._core.audit_events import AuditEvent
from .._core.requests import Request
from ._records import DueEscalation


class EscalationPort(ABC):
    """The escalation verbs every store implements (see `RunStore`)."""

    @abstractmethod
    async def due_escalations(self, now: float, *, limit: int = 100) -> list[DueEscalation]:
        """Open requests (of open pauses) whose next escalation step is due by `now`, soonest first."""

    @abstractmethod
    async def fire_escalation(
        self,
        request_id: str,
        *,
        step: int,
        next_at: float | None,
        audit: Sequence[AuditEvent],
        now: float,
        widened: Request | None = None,
    ) -> bool:
        """Fire step `step` of an open request, with its audit and its `request.escalated` outbox event, once.

        In one commit: the step counted, when the next is due set (`next_at`; `None`: no step is left),
        `audit` appended and the event written; with `widened` (the request with the step's `add_approvers`
        in its routing), the request replaced by it and listed in the inbox of each of its deciders.

        Returns `False`, changing nothing, when the step already fired (another replica's sweep) or the
        request is no longer open.
        """
