"""The store port's business verbs, written once over the transaction primitives of `_primitives.StoreTx`.

One mixin per concept (`_runs`, `_decisions`, `_trust`, `_outbox`, `_escalations`, `_journal`), joined with a
backend's transactions, primitives and listings in `MemoryRunStore` and `SqlRunStore`: what a verb reads, checks and
writes, and which commit waits for the disk, is decided here for every backend at once.
"""

from __future__ import annotations

from ._decisions import DecisionVerbs
from ._escalations import EscalationVerbs
from ._journal import StepVerbs
from ._outbox import OutboxVerbs
from ._runs import RunVerbs
from ._trust import TrustVerbs

__all__ = ["DecisionVerbs", "EscalationVerbs", "OutboxVerbs", "RunVerbs", "StepVerbs", "TrustVerbs"]
