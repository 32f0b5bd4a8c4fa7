"""A step (`sayso.step`) on Temporal: an activity of the run's workflow, run by the worker whose body took it.

A step's function is a Python callable in the body of a tool (or of a workflow node) that runs in
one worker's activity: only that process can call it, and an activity cannot start an activity.
So the body's journal (`TemporalSteps`, the worker's `Kernel.journal.through`) keeps the call in
the process and asks the run's workflow, through its `step` Update, to run it: the workflow runs
it as the activity `sayso.step` (`run_step`) on the worker's own task queue, which that process
alone polls, with one attempt, never retried once started. Inside the activity the step goes
through the store's journal exactly as in one process (`_core/steps.MarkedJournal`: marked
`started` before it runs, its result recorded; found cut off, it is "outcome unknown" unless
idempotent), so sayso's store stays the system of record, and the run's history in the Temporal UI
shows each step (its name the activity's summary and in its id).

What the function raised reaches the body unchanged (the activity runs in the body's process and
hands it over), so a tool catches its own exceptions as it would in one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType

from .._core.steps import StepCall, StepKey
from .._runtime._cycle import Cycle
from ..exceptions import StepOutcomeUnknown
from ._asking import asked_again
from ._shapes import workflow_id

STEP_UPDATE = "step"
"""The Update of a run's workflow that runs one step as an activity."""

STEP_ACTIVITY = "sayso.step"
"""The activity of one step, on the task queue of the worker whose body took it."""

_STARTS_WITHIN = timedelta(minutes=1)
"""How long a step's activity may wait for its worker to poll: past it, the worker is gone and the step never ran."""


@dataclass
class StepInput:
    """One step to run: which (its run, scope, name and occurrence), where (its worker's queue), how it is found."""

    token: str
    """The Update's id, under which the body's worker keeps the step's call."""
    queue: str
    run_id: str
    scope: str
    name: str
    occurrence: int
    idempotent: bool
    heartbeat_seconds: float


@dataclass
class StepOutput:
    """The step's recorded result (JSON), or why it has none."""

    result: str | None = None
    error: str | None = None
    started: bool = True
    """Whether the activity started: a step whose worker never polled for it did not run."""


async def run_step(asked: StepInput) -> StepOutput:
    """(Workflow code) run one step as an activity on its body's worker; how it ended, never raised."""
    try:
        return await workflow.execute_activity(  # type: ignore[no-any-return]
            STEP_ACTIVITY,
            asked,
            result_type=StepOutput,
            task_queue=asked.queue,
            activity_id=f"step-{asked.name}-{asked.occurrence}-{asked.token}",
            summary=f"step {asked.name!r} of {asked.scope}",
            schedule_to_start_timeout=_STARTS_WITHIN,
            start_to_close_timeout=timedelta(hours=6),
            heartbeat_timeout=timedelta(seconds=asked.heartbeat_seconds),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
    except ActivityError as exc:
        cause = exc.cause
        never = isinstance(cause, TimeoutError) and cause.type == TimeoutType.SCHEDULE_TO_START
        return StepOutput(error=str(cause or exc), started=not never)


@dataclass
class _Pending:
    """A step's call kept in its body's process until the step's activity runs it, and how it ended."""

    call: StepCall
    result: bytes | None = None
    error: BaseException | None = None


class TemporalSteps:
    """A worker's step journal: each step an activity of its run's workflow, recorded in the store's journal."""

    def __init__(self, client: Client, cycle: Cycle, *, queue: str, heartbeat_seconds: float) -> None:
        self._client = client
        self._cycle = cycle
        self.queue = queue
        """This worker's own task queue: only this process polls it, so only it runs its bodies' steps."""
        self._heartbeat = heartbeat_seconds
        self._pending: dict[str, _Pending] = {}

    async def run(self, key: StepKey, call: StepCall, *, idempotent: bool) -> bytes:
        store = self._cycle.k.store
        home = await self._cycle.home(await store.get_run(key.run_id))
        token = f"step-{secrets.token_hex(8)}"
        pending = self._pending[token] = _Pending(call)
        asked = StepInput(
            token=token,
            queue=self.queue,
            run_id=key.run_id,
            scope=key.scope,
            name=key.name,
            occurrence=key.occurrence,
            idempotent=idempotent,
            heartbeat_seconds=self._heartbeat,
        )
        try:
            handle = self._client.get_workflow_handle(workflow_id(home))
            stepping = functools.partial(handle.execute_update, STEP_UPDATE, asked, id=token, result_type=StepOutput)
            out: StepOutput = await asked_again(stepping)  # the same Update id: the step runs once however often
        finally:
            del self._pending[token]
        if pending.error is not None:
            raise pending.error
        if pending.result is not None:
            return pending.result
        if out.started:  # cut off (its heartbeat stopped): marked started, never run again
            raise StepOutcomeUnknown(key.run_id, key.name, key.occurrence)
        raise RuntimeError(f"step {key.name!r} did not run: {out.error}")

    @activity.defn(name=STEP_ACTIVITY)
    async def run_here(self, asked: StepInput) -> StepOutput:
        """Run a step of a body in this process through the store's journal (marked, run, recorded, once)."""
        pending = self._pending.get(asked.token)
        if pending is None:  # its body is gone (cancelled): nothing waits for it, and it has not run
            raise ApplicationError(f"step {asked.name!r}: its body no longer waits", non_retryable=True)
        key = StepKey(run_id=asked.run_id, scope=asked.scope, name=asked.name, occurrence=asked.occurrence)
        async with _beating(asked.heartbeat_seconds / 3):
            try:
                pending.result = await self._cycle.k.journal.store.run(key, pending.call, idempotent=asked.idempotent)
            except Exception as exc:
                pending.error = exc
                raise ApplicationError(
                    f"{type(exc).__name__}: {exc}", type=type(exc).__name__, non_retryable=True
                ) from None
        return StepOutput(result=pending.result.decode())


@contextlib.asynccontextmanager
async def _beating(every: float) -> AsyncIterator[None]:
    """Heartbeat while the step runs, so a step cut off by its worker's death is told apart from a slow one."""

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(every)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
