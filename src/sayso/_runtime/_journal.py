"""The step journal of runs this runtime executes: `MarkedJournal` over the store's step verbs.

The rule of what a found step means is `_core/steps.recorded_outcome`, the way a step is marked,
run and recorded `_core/steps.MarkedJournal`; here its marks are the store's (`StepPort`): a
step is marked `started` in a durable commit before its function runs, so a process killed
mid-step leaves it started (outcome unknown, never run twice). The agent and workflow runners
hand it to the tools (`RunDeps.journal`, `_step.execute`) and nodes (`WorkflowEngine(journal=...)`,
`_workflow_host.Workflows`) they run, as the kernel's `RunJournal`: an executor with steps of its
own (a Temporal worker, whose steps are activities) runs them `through` its journal instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio

from .._core.audit_events import AuditEvent
from .._core.steps import Ending, MarkedJournal, StepCall, StepJournal, StepKey, StepRecord
from .._store import RunStore


class _StoreMarks:
    """The store's step verbs, the writes after a step's function ran shielded from cancellation.

    A run cancelled (a client gone, a server stopping) right after its step returned still keeps
    what the step did.
    """

    def __init__(self, store: RunStore) -> None:
        self._store = store

    async def begin_step(self, key: StepKey, now: float, *, durable: bool = True) -> StepRecord | None:
        return await self._store.begin_step(key, now, durable=durable)

    async def finish_step(
        self, key: StepKey, result: bytes, now: float, *, status: Ending = "done", audit: Sequence[AuditEvent] = ()
    ) -> None:
        with anyio.CancelScope(shield=True):
            await self._store.finish_step(key, result, now, status=status, audit=audit)

    async def forget_step(self, key: StepKey) -> None:
        with anyio.CancelScope(shield=True):
            await self._store.forget_step(key)


def store_journal(store: RunStore, clock: Callable[[], float]) -> MarkedJournal:
    """The journal of steps recorded in the runtime's store, with the runs they belong to."""
    return MarkedJournal(_StoreMarks(store), clock)


class RunJournal:
    """The journal a runtime hands its tools and nodes: the store's, or `through` an executor's when it has one.

    One object for the runtime's life, so the nodes' engines built with it see an executor set later.
    """

    def __init__(self, store: RunStore, clock: Callable[[], float]) -> None:
        self.store = store_journal(store, clock)
        self.through: StepJournal | None = None
        """An executor's journal (a Temporal worker's step activities), which records in `store` itself."""

    async def run(self, key: StepKey, call: StepCall, *, idempotent: bool) -> bytes:
        journal = self.through if self.through is not None else self.store
        return await journal.run(key, call, idempotent=idempotent)
