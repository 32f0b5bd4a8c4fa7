"""`SaysoRun`: one sayso run as a Temporal workflow — its segments as activities, their loops in it, its pause a wait.

The workflow holds no state of its own beyond where the run stands (the store is the system of
record): it runs the first segment, then waits. A decision arrives as the `decide` Update, whose
validator applies sayso's own checks (who may decide, does the answer fit the request) to the
open request before the Update is accepted, so a wrong answer is refused and the pause stays open;
the accepted Update records the decision (an activity: the same checks again, in the store's
transaction) and, once nothing is open, runs the resume. The run's timers are workflow timers, so
no front has to run a sweep: at each escalation step of an open request (`escalate:` of its rule)
the workflow fires it (`sayso.escalate`: sayso's escalate verb, once, audited and announced in the
outbox) and sleeps on to the next; when every open request has an expiry, it fires at the last one
and expires them (`on_timeout` decides). A decision wakes the workflow, which re-arms from where the
run now stands, so a decided request's steps never fire; a timer that came due while no worker ran
fires on the first worker that polls.

Activities and their retries (docs/guides/temporal.md#which-activities-retry-and-why): a segment (the
runtime's work between two stops: the lease, the pause consumed, the pause or end written) is
retried on another worker when its worker stops heartbeating. Its agent loop runs here, in the
`loop` Update the segment's activity sends (`_loop.run_loop`: model requests and tool calls as
activities, an approved call one attempt); the retry asks again under the same Update id and gets
the same loop. Recording a decision is retried freely (the same decision again is a no-op); sayso's
refusals are never retried.

A call whose front listens to the run's text (`on_text=`) names it by a token in its options; the
workflow keeps that call's text (`_text.Texts`: the `text` signals of the loop's model requests)
until the front has read it through the `read_text` Update. The run's own later work (a timer, a
delegate settling on its own) and its child workflows carry no token, so they stream nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, TemporalError

from .._core.deciding import check_allowed
from .._core.decisions import DECISION_ADAPTER, check_decision
from .._core.requests import REQUEST_ADAPTER
from ..exceptions import SaysoError
from ._loop import LOOP_UPDATE, LoopInput, LoopOutput, run_loop
from ._shapes import (
    RUN_WORKFLOW,
    AdvanceInput,
    BelowNote,
    DecideInput,
    Recorded,
    RunInput,
    SegmentInput,
    Standing,
    failure,
    principal_of,
    text_of,
)
from ._steps import STEP_UPDATE, StepInput, StepOutput, run_step
from ._text import READ_UPDATE, TEXT_SIGNAL, TextAsk, TextBatch, TextRead, Texts

DECIDED_SIGNAL = "decided"
"""The signal that asks a paused run's workflow to carry it on (a decision below it, forms its worker closed)."""

SEGMENT_TIMEOUT = timedelta(hours=6)
"""The longest one segment (model requests and tool calls between two stops) may take."""

_SEGMENT_RETRIES = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=1.5)
"""A segment is retried until a worker finishes it: each retry carries the run on under the ledger rules."""

_QUICK = timedelta(minutes=2)

_SLACK = 0.5
"""Seconds a timer fires after its moment, so the worker's clock (which decides what is due) has passed it too."""

_ESCALATION_TIMERS = "sayso-escalation-timers"
"""The patch under which a run's escalation steps are timers of its workflow (`workflow.patched`)."""

_REREAD_AFTER_REFUSAL = "sayso-reread-after-refusal"
"""The patch under which a refused decision makes the workflow read where its run stands (`workflow.patched`)."""

_TEXT_READ_BEFORE_END = "sayso-text-read-before-end"
"""The patch under which a run's workflow ends only once its fronts read their calls' text (`workflow.patched`)."""

TEXT_READ_GRACE = timedelta(seconds=30)
"""How long an ended run's workflow waits for a front to read the rest of its call's text: one that went away
does not hold it open longer (its call's result holds the whole text)."""

_T = TypeVar("_T")


@workflow.defn(name=RUN_WORKFLOW, sandboxed=False)
class SaysoRun:
    """One sayso run (and the runs below it): segments as activities, a pause as a wait for Updates."""

    @workflow.init
    def __init__(self, start: RunInput) -> None:
        self._run_id = ""
        # The text of the start's call, if its front listens (`_text`); the run's later work streams none.
        self._texts = Texts()
        self._start_text, self._options = text_of(start.options)
        self._texts.open(self._start_text)
        self._standing: Standing | None = None
        self._ready = False  # the first segment stopped and the delegates it started settled
        self._seen = 0
        self._version = 0
        self._poked = False
        self._swept = 0.0  # the worker's clock at the last sweep of escalation steps: every step due by then fired
        self._heartbeat = timedelta(seconds=10)
        self._lock = asyncio.Lock()  # noqa: TID251 - Temporal's workflow event loop is asyncio's, deterministic
        # Delegates' runs as child workflows: started ones, those not settled yet, what they reported.
        self._children: dict[str, workflow.ChildWorkflowHandle[Any, Any]] = {}
        self._unsettled: set[str] = set()
        self._below = 0
        self._below_handled = 0
        self._reported: set[str] = set()
        self._passing: list[str] = []  # decisions reported from below, to report further up
        self._decided: list[str] = []  # decisions recorded for this (child) run, to resume it on

    @workflow.run
    async def run(self, start: RunInput) -> str:
        self._run_id = start.run_id
        self._heartbeat = timedelta(seconds=start.heartbeat_seconds)
        async with self._lock:
            self._set(await self._segment("sayso.segment", SegmentInput(start.run_id, start.handed_by, start.options)))
            await self._settle(start.options)
        self._ready = True
        self._texts.end(self._start_text)
        await self._report([])
        # Workflows started before escalation steps were timers of their own replay without them.
        escalating = workflow.patched(_ESCALATION_TIMERS)
        while (standing := self._now()).waiting:
            self._seen = self._version
            timer = self._next_timer(standing, escalating=escalating)
            timeout = None if timer is None else max(0.0, timer[0] - workflow.now().timestamp())
            try:
                await workflow.wait_condition(self._woken, timeout=timeout)
            except TimeoutError:
                assert timer is not None
                async with self._lock:
                    self._set(await self._quick(timer[1], self._run_id, Standing))
                    await self._settle()
                await self._report([])
                continue
            if self._poked:
                self._poked = False
                async with self._lock:
                    self._set(await self._quick("sayso.standing", self._run_id, Standing))
                await self._report([])
            elif self._decided:
                tokens, self._decided = self._decided, []
                async with self._lock:
                    self._set(await self._segment("sayso.advance", self._advance_input()))
                    await self._settle()
                await self._report(tokens)
            elif self._below != self._below_handled:
                tokens, self._passing = self._passing, []
                async with self._lock:
                    await self._settle()
                await self._report(tokens)
        await self._close_children()
        # A front reads its call's text between long-polls: the last pieces are not lost to a workflow that ended.
        if not self._texts.all_read() and workflow.patched(_TEXT_READ_BEFORE_END):
            with contextlib.suppress(TimeoutError):
                await workflow.wait_condition(self._texts.all_read, timeout=TEXT_READ_GRACE)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self._now().status

    @workflow.update(name=LOOP_UPDATE)
    async def loop(self, asked: LoopInput) -> LoopOutput:
        """Run one agent segment's loop here (`_loop.run_loop`), for the segment activity that asked and waits."""
        with self._texts.writing(asked.text):
            return await run_loop(asked)

    @workflow.signal(name=TEXT_SIGNAL)
    def text(self, batch: TextBatch) -> None:
        """A batch of the text a model request of the running loop wrote (`_text.send_text`): kept for the front."""
        self._texts.take(batch)

    @workflow.update(name=READ_UPDATE)
    async def read_text(self, asked: TextAsk) -> TextRead:
        """A front's long-poll for the text of its call (`_text.listen`)."""
        return await self._texts.read(asked)

    @read_text.validator
    def _text_kept(self, asked: TextAsk) -> None:
        self._texts.check(asked)

    @workflow.update(name=STEP_UPDATE)
    async def step(self, asked: StepInput) -> StepOutput:
        """Run one step of a body (a tool's, a node's) as an activity on its worker (`_steps.run_step`)."""
        return await run_step(asked)

    @workflow.update(name="settled")
    async def settled(self) -> str:
        """Wait until the first segment stopped (paused or ended) and its delegates settled: how `run` returns."""
        await workflow.wait_condition(lambda: self._ready)
        return self._now().status

    @workflow.update(name="decide")
    async def decide(self, decision: DecideInput) -> bool:
        """Record one decision and, when nothing is left open, carry the run on; whether it was new.

        A decision on a delegate's request is recorded here too; the delegate's own (child) workflow
        resumes its run, and this Update returns once that settled and this run was carried on.
        """
        token = text_of(decision.options)[0]
        self._texts.open(token)
        try:
            async with self._lock:
                try:
                    recorded = await self._quick("sayso.record", decision, Recorded)
                except ActivityError:
                    # A refusal may still have moved the run (a form whose holder died: closed, the run carried on).
                    if workflow.patched(_REREAD_AFTER_REFUSAL):
                        self._set(await self._quick("sayso.standing", self._run_id, Standing))
                    raise
                if decision.resume and recorded.owner is not None and await self._tell(recorded.owner, decision):
                    await workflow.wait_condition(lambda: decision.request_id in self._reported)
                    self._below_handled = self._below
                    self._set(await self._segment("sayso.advance", self._advance_input(decision.options)))
                    await self._settle(decision.options)
                elif decision.resume and recorded.ready:
                    self._set(await self._segment("sayso.advance", self._advance_input(decision.options)))
                    await self._settle(decision.options)
                else:
                    self._set(await self._quick("sayso.standing", self._run_id, Standing))
        finally:
            self._texts.end(token)
        return recorded.recorded

    @decide.validator
    def _check(self, decision: DecideInput) -> None:
        """Sayso's checks of a decision against the open request, before the Update is accepted."""
        standing = self._standing
        for raw in standing.open if standing is not None else ():
            request = REQUEST_ADAPTER.validate_json(raw)
            if request.request_id != decision.request_id:
                continue
            try:
                check_allowed(request, principal_of(decision.principal))
                check_decision(
                    request,
                    DECISION_ADAPTER.validate_json(decision.decision),
                    existing=None,
                    now=workflow.now().timestamp(),
                )
            except SaysoError as exc:
                raise failure(exc) from None
            return
        # Not open as this workflow last saw it: recording it applies the same checks, in the store.

    @workflow.update(name="advance")
    async def advance(self, asked: AdvanceInput) -> str:
        """Carry the paused run on (a resume asked for, an answered pause, a forced skip)."""
        token = text_of(asked.options)[0]
        self._texts.open(token)
        try:
            async with self._lock:
                self._set(await self._segment("sayso.advance", asked))
                await self._settle(asked.options)
        finally:
            self._texts.end(token)
        return self._now().status

    @workflow.signal(name="changed")
    def changed(self) -> None:
        """The store changed under the run (a cancel, a superseding message): read where it stands."""
        self._poked = True

    @workflow.signal(name=DECIDED_SIGNAL)
    def decided(self, request_id: str) -> None:
        """A decision on this run's request was recorded: resume the run if it is ready.

        Sent by a delegate's decision, and by a stopping worker that closed the forms it held (then with the run's id).
        """
        self._decided.append(request_id)

    @workflow.signal(name="below")
    def below(self, note: BelowNote) -> None:
        """A child workflow settled (paused, ended, or carried on after the decisions `note` names)."""
        self._unsettled.discard(note.run_id)
        self._reported.update(note.decisions)
        self._passing.extend(note.decisions)
        self._below += 1

    def _woken(self) -> bool:
        return bool(self._poked or self._decided or self._below != self._below_handled or self._version != self._seen)

    def _advance_input(self, options: str | None = None) -> AdvanceInput:
        return AdvanceInput(self._run_id, force=False, options=self._options if options is None else options)

    async def _settle(self, options: str | None = None) -> None:
        """Start child workflows for the delegates' runs this run's pause waits on; carry it on once they settled.

        Each child settles paused, or ended (a finished delegate answers its call); the run carried on may
        call new delegates, started the same way, until none is new. `options` are the call's that carries
        the run on (its front hears its text); `None`: the run's own, which stream no text.
        """
        while True:
            for below in self._now().below:
                if below.run_id in self._children:
                    continue
                start = RunInput(below.run_id, below.handed_by, self._options, self._heartbeat.total_seconds())
                self._unsettled.add(below.run_id)
                self._children[below.run_id] = await workflow.start_child_workflow(
                    RUN_WORKFLOW, start, id=below.workflow_id, task_queue=workflow.info().task_queue, result_type=str
                )
            if not self._unsettled and self._below == self._below_handled:
                return
            await workflow.wait_condition(lambda: all(self._children[r].done() for r in self._unsettled))
            self._unsettled.clear()
            self._below_handled = self._below
            self._set(await self._segment("sayso.advance", self._advance_input(options)))

    async def _tell(self, owner: str, decision: DecideInput) -> bool:
        """Tell a delegate's workflow that a decision on its run was recorded; whether it is there to hear it."""
        try:
            await workflow.get_external_workflow_handle(owner).signal(DECIDED_SIGNAL, decision.request_id)
        except TemporalError:
            return False  # its workflow has ended: where the tree stands is read from the store
        return True

    async def _report(self, decisions: list[str]) -> None:
        """(A delegate's workflow) tell the parent's workflow that this run settled, after `decisions`."""
        parent = workflow.info().parent
        if parent is None:
            return
        try:
            await workflow.get_external_workflow_handle(parent.workflow_id).signal(
                "below", BelowNote(run_id=self._run_id, decisions=decisions)
            )
        except TemporalError:
            pass  # the parent's workflow has ended (a cancel, a forced resume): nothing waits on this run

    async def _close_children(self) -> None:
        """Let the child workflows still waiting read that their runs ended too (a cancel, a forced resume)."""
        for handle in self._children.values():
            if not handle.done():
                with contextlib.suppress(TemporalError):
                    await handle.signal("changed")
        for handle in self._children.values():
            with contextlib.suppress(TemporalError):
                await handle

    def _now(self) -> Standing:
        assert self._standing is not None
        return self._standing

    def _set(self, standing: Standing) -> None:
        self._standing = standing
        if standing.swept_at is not None:
            self._swept = max(self._swept, standing.swept_at)
        self._version += 1

    def _next_timer(self, standing: Standing, *, escalating: bool) -> tuple[float, str] | None:
        """When the run's timer fires next and which activity it runs: the next escalation step, or the expiry.

        A step is due once `created_at + after` passed; the steps up to the last sweep's clock fired (the
        escalate verb fires every step due by its clock), so the next one is the first after it.
        """
        timers: list[tuple[float, str]] = []
        if standing.expires_at is not None:
            timers.append((standing.expires_at + _SLACK, "sayso.expire"))
        if escalating:
            after = [due for due in standing.steps if due > self._swept]
            if after:
                timers.append((after[0] + _SLACK, "sayso.escalate"))
        return min(timers) if timers else None

    async def _segment(self, name: str, arg: SegmentInput | AdvanceInput) -> Standing:
        return await workflow.execute_activity(  # type: ignore[no-any-return]
            name,
            arg,
            result_type=Standing,
            start_to_close_timeout=SEGMENT_TIMEOUT,
            heartbeat_timeout=self._heartbeat,
            retry_policy=_SEGMENT_RETRIES,
        )

    async def _quick(self, name: str, arg: object, result: type[_T]) -> _T:
        return await workflow.execute_activity(  # type: ignore[no-any-return]
            name, arg, result_type=result, start_to_close_timeout=_QUICK, heartbeat_timeout=self._heartbeat
        )
