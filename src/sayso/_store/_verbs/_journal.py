"""The verbs of the step journal: a step marked once before it runs, finished with its result, or forgotten."""

from __future__ import annotations

from collections.abc import Sequence

from ..._core.audit_events import AuditEvent
from ..._core.steps import Ending, StepKey, StepRecord
from .._ops import DropStep, EndStep, NewStep, ResolveStep, StepOf
from .._primitives import StoreTx, TxStore


class StepVerbs(TxStore):
    """`RunStore`'s step journal verbs (`StepPort`)."""

    async def begin_step(self, key: StepKey, now: float, *, durable: bool = True) -> StepRecord | None:
        async def earlier(tx: StoreTx) -> StepRecord | None:
            return await tx.get(StepOf(key))

        async def work(tx: StoreTx) -> StepRecord | None:
            found = await tx.get(StepOf(key))
            if found is None:
                await tx.add(NewStep(key, now))
            return found

        # Durable: a step whose process (or machine) dies mid-way must be found started, so it never runs twice.
        return await self._write(work, race=earlier, durable=durable)

    async def finish_step(
        self, key: StepKey, result: bytes, now: float, *, status: Ending = "done", audit: Sequence[AuditEvent] = ()
    ) -> None:
        if status == "unknown":

            async def resolve(tx: StoreTx) -> None:
                if await tx.change(ResolveStep(key, now)):  # once, however many runs find it cut off
                    await tx.append_audit(audit)

            await self._write(resolve)
            return

        async def work(tx: StoreTx) -> None:
            await tx.change(EndStep(key, status, result, now))

        # Not waiting for the disk: a result lost with the machine leaves the step started, so it reads as
        # outcome unknown and never runs twice; only the mark before the function runs must be on disk.
        await self._write(work, durable=False)

    async def forget_step(self, key: StepKey) -> None:
        async def work(tx: StoreTx) -> None:
            await tx.change(DropStep(key))

        await self._write(work, durable=False)  # lost with the machine, the step reads as outcome unknown
