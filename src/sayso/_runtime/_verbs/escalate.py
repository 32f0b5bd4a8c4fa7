"""The verb escalate: the escalation steps of waiting requests fire as they come due, once across replicas.

The same sweep that expires requests (`Sayso.expire`, run every few seconds by `sayso serve`) fires
them first. Each step is read from the request (its rule's plan, saved with it), claimed and
recorded in one store transaction (`fire_escalation`: counted, audited, announced in the outbox as
`request.escalated` for the channels to deliver; a step's `add_approvers` widen the request's
routing in the same commit, so those principals see it in their inbox and may decide it on every
interface from then on), so a step fires once whichever replica sweeps,
and a step that came due while no process ran fires at the next sweep of any process. On Temporal the
run's workflow timer fires its own requests' steps (`requests`) the same way. What a
request's timeout decides (`on_timeout`) is expiry's (`expire`, planned by `_core/resume.py` `plan_expiry`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from ..._core.audit_events import EscalatedEvent
from ..._core.requests import RuleTerms, escalation_due
from .._kernel import Kernel

_ROUNDS = 20
"""How many rounds one sweep reads the due steps in: a request whose several steps came due while no process
ran fires them in order, one a round."""


async def escalate(k: Kernel, *, limit: int = 100, requests: Collection[str] | None = None) -> int:
    """Fire every escalation step due by now (of `requests` only, when given); returns how many this runtime fired.

    `requests` is how a run's own timer fires its steps (on Temporal, the run's workflow timer).
    """
    fired = 0
    for _ in range(_ROUNDS):
        now = k.clock()
        due = await k.store.due_escalations(now, limit=limit)
        progressed = False
        for item in due:
            if requests is not None and item.request_id not in requests:
                continue
            state = await k.store.get_request(item.request_id)
            if state is None or not isinstance(state.request, RuleTerms) or state.decision is not None:
                continue
            request = state.request
            if item.step >= len(request.escalation):
                continue
            step = request.escalation[item.step]
            event = EscalatedEvent(
                event="escalated",
                request_id=request.request_id,
                tool_name=request.tool_name,
                run_id=request.run_id,
                rule=request.rule,
                step=item.step,
                after_seconds=step.after_seconds,
                remind=step.remind,
                notify=list(step.notify),
                add_approvers=list(step.add_approvers),
                reason=step.said,
                at=now,
            )
            next_at = escalation_due(request, item.step + 1)
            widened = None
            if step.add_approvers and request.routing is not None:
                widened = replace(request, routing=request.routing.widened(step.add_approvers, step.added))
            if await k.store.fire_escalation(
                request.request_id, step=item.step, next_at=next_at, audit=[event], now=now, widened=widened
            ):
                fired += 1
                progressed = True
        if not progressed:
            break  # nothing left due (or another replica fired it all)
    return fired
