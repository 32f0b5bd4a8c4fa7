"""`StoreJournal`: the step journal of runs this runtime executes, over the store's step verbs.

The rule of what a found step means is `_core/steps.recorded_outcome`; this carries it out: a
step is marked `started` in a durable commit before its function runs, so a process killed
mid-step leaves it started (outcome unknown, never run twice), and finished with its result in
another. The agent and workflow runners hand it to the tools (`RunDeps.journal`) and nodes
(`WorkflowEngine(journal=...)`) they run; an executor of its own (Temporal) hands its own.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from .._core.steps import NotJson, StepCall, StepKey, recorded_outcome
from .._store import RunStore
from ..exceptions import UsageError


class StoreJournal:
    """Steps recorded in the runtime's store, with the run they belong to (a `StepJournal`)."""

    def __init__(self, store: RunStore, clock: Callable[[], float]) -> None:
        self._store = store
        self._clock = clock

    async def run(self, key: StepKey, call: StepCall, *, idempotent: bool) -> bytes:
        store = self._store
        recorded = recorded_outcome(await store.begin_step(key, self._clock()), key, idempotent=idempotent)
        if recorded is not None:
            return recorded
        try:
            result = await call()
        except NotJson as exc:
            # The work was done: every later run of the body reads why it has no result, not a fresh run.
            with anyio.CancelScope(shield=True):
                await store.finish_step(key, str(exc).encode(), self._clock(), status="unrecorded")
            raise UsageError(str(exc)) from None
        except Exception:
            with anyio.CancelScope(shield=True):
                await store.forget_step(key)  # it raised: it did not do its work, and runs again next time
            raise
        # Shielded: a run cancelled right after its step returned still keeps what the step did.
        with anyio.CancelScope(shield=True):
            await store.finish_step(key, result, self._clock())
        return result
