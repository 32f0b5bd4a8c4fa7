"""The verbs of escalation timers: the due steps, and firing one exactly once with its audit and outbox event."""

from __future__ import annotations

from collections.abc import Sequence

from ..._core.audit_events import AuditEvent
from ..._core.requests import Request
from .._ops import AdvanceEscalation, NewEvents, WidenRequest
from .._primitives import StoreTx, TxStore
from .._records import DueEscalation


class EscalationVerbs(TxStore):
    """`RunStore`'s escalation verbs (`EscalationPort`)."""

    async def due_escalations(self, now: float, *, limit: int = 100) -> list[DueEscalation]:
        async def work(tx: StoreTx) -> list[DueEscalation]:
            return await tx.due_escalations(now, limit)

        return await self._read(work)

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
        async def work(tx: StoreTx) -> bool:
            await tx.lock_audit()  # before the request's row: the one lock order (a decider's is the same)
            # Then the claim: of two sweeps firing the same step, the second's update waits for the first to
            # commit, then matches nothing, and writes neither an audit record nor an event.
            if not await tx.change(AdvanceEscalation(request_id, step, next_at)):
                return False
            if widened is not None:
                # Claimed under the audit lock every voter takes first: no vote is judged on the old approvers
                # once this commits, and none judged before it is lost (it committed first).
                await tx.change(WidenRequest(widened))
            await tx.append_audit(audit)
            await tx.add(NewEvents("request.escalated", [request_id], now, step=step))
            return True

        async def lost(tx: StoreTx) -> bool:
            return False

        return await self._write(work, race=lost)
