"""`StepPort`: the store verbs of the step journal, which records the steps tools and workflow nodes take.

A part of the `RunStore` port (which inherits it), kept in its own module because it is its own
concept: a step (`sayso.step`) is marked started before its function runs and finished with its
result, keyed by run, scope and name's occurrence (`_core/steps.StepKey`); the rule of what a
found mark means lives in `_core/steps.py`, the runtime's journal over these verbs in
`_runtime/_journal.py`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from .._core.audit_events import AuditEvent
from .._core.steps import Ending, StepKey, StepRecord


class StepPort(ABC):
    """The step journal's verbs every store implements (see `RunStore`)."""

    @abstractmethod
    async def begin_step(self, key: StepKey, now: float, *, durable: bool = True) -> StepRecord | None:
        """Mark a step started before its function runs; returns the earlier record if there is one.

        Of two callers marking one step, one marks it and the other gets its record. The mark is on
        disk when this returns, unless `durable=False`: a step that may run twice (`idempotent`) needs
        no mark that outlives the machine, and its commit is carried to the disk by the next durable one.
        """

    @abstractmethod
    async def finish_step(
        self, key: StepKey, result: bytes, now: float, *, status: Ending = "done", audit: Sequence[AuditEvent] = ()
    ) -> None:
        """Record a started step's result (JSON), or (`unrecorded`) why its result could not be stored.

        The commit does not wait for the disk (see `RunStore.start_run`'s `durable=False`): a result lost
        with the machine leaves the step started, which reads as outcome unknown, never as a second run.

        `unknown` ends a step found cut off, with its `audit` records, only while it is still `started`:
        of several runs finding it so, one writes them.
        """

    @abstractmethod
    async def forget_step(self, key: StepKey) -> None:
        """Drop a started step's mark: its function raised, so it did not do its work and runs again next time."""
