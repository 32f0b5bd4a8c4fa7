"""The activities of a run's workflow, run by `sayso worker`: each one a verb of the worker's own runtime.

A worker is a `Sayso` that runs every run itself (`engine="here"`); its activities are that
runtime's verbs, so the store's transactions, the ledger, the audit chain, the outbox and the
inbox are written exactly as they are without Temporal. A segment takes the run's lease first:
from the front that started it (handed over), or from a worker that died (its lease lapsed, or
its process is gone), and carries the run on from the store; the agent loop of the segment runs
as its own workflow (`_loop`), which the segment waits for. `unknown` is the loop's: what a call
cut off by a dead worker returns instead of running again. A segment whose worker stops while it
waits on its loop is handed back (`_loop.TemporalLoop.hand_back`): the activity lets go of the run's
lease and fails, so Temporal retries it at once on a worker on any machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from pydantic_core import to_json
from temporalio import activity
from temporalio.exceptions import ApplicationError

from .._core.decisions import DECISION_ADAPTER
from .._core.requests import REQUEST_ADAPTER, DelegateRequest, RuleTerms, escalation_due
from .._core.resume import open_requests
from .._engine.gate import UNKNOWN_OUTCOME, outcome_unknown
from .._runtime import Sayso
from .._runtime._cycle import Cycle
from .._runtime._kernel import Kernel
from .._runtime._leases import release, take_over
from .._runtime._tree import open_leaves, result
from .._runtime._verbs.decide import decide
from .._runtime._verbs.escalate import escalate
from .._runtime._verbs.expire import expire
from .._runtime._verbs.resume import resume_if_ready
from .._store import RunRecord
from ..exceptions import PauseConsumed, RunConflict, SaysoError, StoreError
from ._durable import UNKNOWN_ACTIVITY, UnknownCall
from ._loop import TemporalLoop
from ._shapes import (
    AdvanceInput,
    Below,
    DecideInput,
    Recorded,
    SegmentInput,
    Standing,
    failure,
    options_of,
    principal_of,
    workflow_id,
)


class Activities:
    """The activities of `SaysoRun`, over one worker's runtime."""

    def __init__(self, app: Sayso, loop: TemporalLoop, *, heartbeat_seconds: float) -> None:
        self._c: Cycle = app._cycle
        self._k: Kernel = self._c.k
        self._loop = loop
        self._beat = heartbeat_seconds / 3

    def all(self) -> Sequence[Callable[..., Any]]:
        """Every activity, for the worker to register."""
        return [self.segment, self.advance, self.record, self.standing, self.expire, self.escalate, self.unknown]

    @activity.defn(name="sayso.segment")
    async def segment(self, work: SegmentInput) -> Standing:
        """Run a run's segment: the one a front just started, or the one a dead worker left running."""
        async with self._working():
            async with self._handing_back(work.run_id):
                run = await self._k.store.get_run(work.run_id)
                if run.status == "running":
                    await self._carry_on(run.run_id, handed_by=work.handed_by, options=work.options)
            return await self._standing(work.run_id)

    @activity.defn(name="sayso.advance")
    async def advance(self, asked: AdvanceInput) -> Standing:
        """Carry a paused run on (or, on a retry, the segment a dead worker left running)."""
        async with self._working():
            async with self._handing_back(asked.run_id):
                top = await self._k.store.get_run(asked.run_id)
                options = options_of(asked.options)
                if top.status == "running":
                    await self._carry_on(top.run_id, handed_by=None, options=asked.options)
                elif top.status == "paused":
                    try:
                        if asked.force:
                            await self._c.advance(top, force=True, options=options)
                        else:
                            await resume_if_ready(self._c, top, options)
                    except PauseConsumed:
                        pass  # another worker resumed it; where it stands is read below
            return await self._standing(asked.run_id)

    @activity.defn(name="sayso.record")
    async def record(self, asked: DecideInput) -> Recorded:
        """Record a decision with every check sayso makes (in the store's transaction); no resume."""
        async with self._working():
            done = await decide(
                self._c,
                asked.request_id,
                DECISION_ADAPTER.validate_json(asked.decision),
                principal=principal_of(asked.principal),
                resume=False,
                via=asked.via,  # type: ignore[arg-type]
                options=options_of(asked.options),
            )
            top = await self._k.store.get_run(asked.run_id)
            ready = top.status == "paused" and not await open_leaves(self._k, top)
            owner = await self._owner(asked.request_id, asked.run_id)
            return Recorded(recorded=done.recorded, ready=ready and owner is None, owner=owner)

    @activity.defn(name="sayso.standing")
    async def standing(self, run_id: str) -> Standing:
        """Where a run stands now, from the store."""
        async with self._working():
            return await self._standing(run_id)

    @activity.defn(name="sayso.expire")
    async def expire(self, run_id: str) -> Standing:
        """Fire due escalation steps and expire what has expired (the run's timer fired), as `Sayso.expire` does."""
        async with self._working():
            swept_at = self._k.clock()
            await escalate(self._k)
            await expire(self._c)
            return await self._standing(run_id, swept_at=swept_at)

    @activity.defn(name="sayso.escalate")
    async def escalate(self, run_id: str) -> Standing:
        """Fire the escalation steps due of the run's open requests (its step timer fired), with sayso's escalate verb.

        Each step is claimed, audited and announced in the outbox in one store transaction, exactly as a
        front's sweep fires it, so it fires once whichever of them comes first.
        """
        async with self._working():
            swept_at = self._k.clock()
            found = await result(self._k, run_id)
            await escalate(self._k, requests={r.request_id for r in found.requests}, limit=1000)
            return await self._standing(run_id, swept_at=swept_at)

    @activity.defn(name=UNKNOWN_ACTIVITY)
    async def unknown(self, cut: UnknownCall) -> Any:
        """A call whose worker died while it ran (its one attempt failed): recorded "outcome unknown", never run again.

        An approved call's ledger entry says whether it finished after all (its result is then what the
        model reads); otherwise the entry and the audit record it unknown, once however often this runs.
        """
        async with self._working():
            k = self._k
            audit = outcome_unknown(
                request_id=cut.request_id or cut.tool_call_id, run_id=cut.run_id, tool_name=cut.tool_name, at=k.clock()
            )
            if cut.request_id is None:
                await k.store.append_audit([audit])  # nobody approved it: no ledger entry, the audit says so
                return UNKNOWN_OUTCOME
            earlier = await k.store.begin_execution(cut.request_id, cut.run_id, k.clock())
            if earlier is None or earlier.status not in ("done", "unknown") or earlier.result is None:
                await k.store.finish_execution(
                    cut.request_id, to_json(UNKNOWN_OUTCOME), k.clock(), audit=[audit], status="unknown"
                )
                earlier = await k.store.begin_execution(cut.request_id, cut.run_id, k.clock())
            assert earlier is not None and earlier.result is not None
            return json.loads(earlier.result)

    async def _carry_on(self, run_id: str, *, handed_by: str | None, options: str) -> None:
        """Take the run's lease (from the front that handed it over, or a dead holder) and redo its segment."""
        k = self._k
        run = await k.store.get_run(run_id)
        now = k.clock()
        if handed_by is not None and run.lease_holder == handed_by:
            taken = await k.store.take_over(
                run_id, holder=k.holder, until=now + k.lease_seconds, now=now, dead_holders=[handed_by]
            )
            if not taken:
                raise ApplicationError(f"run {run_id!r}: could not take it over from its front; retrying")
            run = await k.store.get_run(run_id)
        else:
            try:
                run = await take_over(k, run)
            except RunConflict as exc:
                # Its holder may still be alive (a lease that has not lapsed): Temporal retries later.
                raise ApplicationError(str(exc)) from None
        await self._c.runner(run).carry_on(run, options_of(options))

    async def _standing(self, run_id: str, *, swept_at: float | None = None) -> Standing:
        found = await result(self._k, run_id)
        open_ = [REQUEST_ADAPTER.dump_json(r).decode() for r in found.requests]
        expiries = [r.expires_at for r in found.requests]
        last = None if not expiries or any(e is None for e in expiries) else max(e for e in expiries if e is not None)
        steps = sorted(
            due
            for r in found.requests
            if isinstance(r, RuleTerms)
            for done in range(len(r.escalation))
            if (due := escalation_due(r, done)) is not None
        )
        below = await self._below(await self._k.store.get_run(run_id))
        return Standing(status=found.status, open=open_, expires_at=last, steps=steps, swept_at=swept_at, below=below)

    async def _below(self, run: RunRecord) -> list[Below]:
        """The runs below `run` (delegates', agent nodes') that wait for their child workflows: started, not yet run.

        Found through the runs below `run` that run in its own workflow (a remote agent's proxy).
        """
        if run.status != "paused" or run.pause_id is None:
            return []
        state = await self._k.store.pause_state(run.pause_id)
        found: list[Below] = []
        for request in open_requests(state.requests, state.decisions):
            if not isinstance(request, DelegateRequest):
                continue
            child = await self._k.store.get_run(request.child_run_id)
            if not self._c.owns_apart(run, child.agent):
                found.extend(await self._below(child))
            elif child.status == "running":
                found.append(Below(run_id=child.run_id, workflow_id=workflow_id(child), handed_by=child.lease_holder))
        return found

    async def _owner(self, request_id: str, run_id: str) -> str | None:
        """The workflow that resumes the run which raised `request_id`, when it is not `run_id`'s own."""
        found = await self._k.store.request_with_run(request_id)
        if found is None:
            return None
        home = await self._c.home(found.run)
        return None if home.run_id == run_id else workflow_id(home)

    @contextlib.asynccontextmanager
    async def _handing_back(self, run_id: str) -> AsyncIterator[None]:
        """Carry `run_id`'s segment on; handed back (its worker stops), let go of the run and fail, to be retried.

        Raises:
            ApplicationError: the segment was handed back; Temporal retries it on a worker that polls.
        """
        with self._loop.carrying(run_id):
            yield
        if self._loop.handed_back(run_id):
            await release(self._k, run_id)
            raise ApplicationError(f"run {run_id!r}: its worker is stopping; another worker carries it on")

    @contextlib.asynccontextmanager
    async def _working(self) -> AsyncIterator[None]:
        """Heartbeat while the activity works; a sayso error becomes a failure the front raises again."""

        async def beat() -> None:
            while True:
                activity.heartbeat()
                await asyncio.sleep(self._beat)

        task = asyncio.create_task(beat())
        try:
            yield
        except StoreError as exc:
            # The store did not answer: Temporal tries again (with backoff) until it does.
            raise ApplicationError(str(exc)) from None
        except SaysoError as exc:
            raise failure(exc) from None
        finally:
            task.cancel()
