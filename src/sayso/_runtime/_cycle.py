"""`Cycle`: the run loop over runners — which runner a run goes to, carrying a paused run on, the runs below.

Every run is one of three kinds, each with its `Runner` (`_runner`): an agent's run
(`_agent_runs.AgentRunner`), a workflow's (`_workflows.WorkflowRunner`, handed in by the package root only
when the config has workflows), a remote delegate's proxy run (`_remote.RemoteRunner`). The cycle picks the
runner by the run's kind, and is the one place a paused run is carried on, whatever its kind:

    read the pause → carry the runs below it on (each answers its request) → plan (pure:
    `sayso._core.advance.plan_advance`) → close the runs below the plan skipped → the runner
    consumes the pause and carries the run on (its write, then its work)

It also implements `Runs`, the port runners use for the runs below their own (a delegate, a workflow's agent
node), so a runner never imports the cycle. The verbs (`_verbs`: start, decide, answer, resume, cancel,
expire, recover) are functions over a `Cycle`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import anyio
from pydantic_ai.exceptions import CallDeferred

from .._core.advance import plan_advance, step_below, waiting_below
from .._core.decisions import DecisionRecord
from .._core.requests import DelegateRequest
from .._core.resume import SKIPPED_FOR_FORCE
from .._engine.calls import DelegateDeferral
from .._store import Decided, PauseState, RunRecord
from ..exceptions import AgentNotFound, PauseConsumed, RunConflict, RunNotFound, StoreError
from . import _leases, _tree
from ._agent_runs import AgentRunner
from ._kernel import Kernel, derived_id
from ._remote import RemoteRunner
from ._remote_port import RemoteAgents
from ._results import RunResult
from ._runner import CallOptions, Engine, Resume, RunKind, Runner, Runs, Start, WorkflowRuns

REPLANS = 3
"""How often a resume is planned again when a person's decision lands while it was being prepared."""

NEVER_HANDED_OVER = (
    "not started: its front stopped before it handed the run to the engine (the engine has no work of this run's); "
    "send the message again"
)
"""Why a run an engine should have run, but never got, failed (recovery closes it: its thread takes messages again)."""

REMOTE_CUT_OFF = (
    "outcome unknown: the process stopped while it handed the task to the remote agent, so it was not sent again; "
    "check with the remote agent before asking again"
)
"""Why a remote delegate's proxy cut off before it settled failed (its parent's model reads it)."""


class Cycle:
    """The runtime's run loop: a runner per kind of run, and the runs below runs (the `Runs` port)."""

    def __init__(
        self,
        k: Kernel,
        *,
        workflows: Callable[[Kernel, Runs], WorkflowRuns] | None,
        remote_urls: dict[str, str],
        remote: RemoteAgents | None,
        engine: Engine | None = None,
    ) -> None:
        self.k = k
        self.engine = engine
        """Where top-level local runs do their work when not here (a Temporal cluster); `None`: here."""
        self.delegates_apart = False
        """Whether a local delegate's run is started and left for another worker to run (a Temporal worker's
        runtime: each delegate's run is a child workflow of its own); `False`: it runs here, in its parent's call."""
        self.agents = AgentRunner(k, self)
        self.remote = RemoteRunner(k, remote_urls, remote)
        self._runners: dict[RunKind, Runner] = {"agent": self.agents, "remote": self.remote}
        self.workflow_names: frozenset[str] = frozenset()
        """The runtime's workflows by name."""
        if workflows is not None:  # built by `workflows` (`_workflows.workflow_runner`) only when there are any
            runner = workflows(k, self)
            self._runners["workflow"], self.workflow_names = runner, runner.names
        self._advancing: dict[str, list[anyio.Event]] = {}
        """The runs this process is carrying on from a pause now: an event per advance, set once it is done."""

    # which runner

    def kind_of(self, run: RunRecord) -> RunKind:
        """A run's kind: a remote delegate's proxy, a workflow's run, or an agent's."""
        if self.remote.serves(run):
            return "remote"
        return self._kind_named(run.agent)

    def _kind_named(self, name: str) -> RunKind:
        """The kind of a top-level run of `name`: a workflow's, or an agent's."""
        return "workflow" if name in self.workflow_names else "agent"

    def runner(self, run: RunRecord) -> Runner:
        """The runner of `run`'s kind; a top-level local run's is the engine's when there is one."""
        kind = self.kind_of(run)
        if self.engine is not None and kind != "remote" and run.parent_run_id is None:
            return _Engined(self.k, self.engine, self._runners[kind])
        return self._runners[kind]

    def runner_named(self, name: str) -> Runner:
        """The runner a top-level run of `name` (an agent's or a workflow's) goes to, before the run exists."""
        return self._runners[self._kind_named(name)]

    def runner_below(self, agent: str) -> Runner:
        """The runner a run of `agent` below another run goes to: a remote delegate's proxy, or an agent's run."""
        return self._runners["remote" if agent in self.remote.urls else "agent"]

    def entry(self, name: str) -> str:
        """`name`, when an agent or a workflow of this runtime has it: the one check of a name a caller gave.

        Raises:
            AgentNotFound: neither an agent nor a workflow has that name.
        """
        if name not in self.k.agents and name not in self.workflow_names:
            raise AgentNotFound(name, known=(*self.k.agents, *self.workflow_names))
        return name

    # carrying a paused run on

    async def advance(
        self,
        run: RunRecord,
        *,
        force: bool,
        options: CallOptions,
        state: PauseState | None = None,
        attempts: int = REPLANS,
    ) -> RunResult:
        """Carry a paused run on as far as its decisions allow, the runs below it first.

        A run resumes only when every request it waits on is answered (or `force` skips the rest);
        a run below that paused again keeps it paused, without a model call. When a person decides
        a request while a forced resume was about to skip it, the resume is planned again from the
        store (their decision counts), up to `attempts` times.

        A pause this process is carrying on already (a live form's holder, another decider's resume)
        is not raced for: an unforced advance waits for that one and says where the run stands then.

        Raises:
            PauseConsumed: another process resumed this pause first, or another advance here (done by then).
            RunConflict: decisions kept arriving while the resume was prepared.
        """
        k = self.k
        if self.engine is not None:
            # The engine's workers carry the whole tree on; this process only asks.
            await self.engine.advance(await _tree.root(k, run), force=force, options=options)
            return await _tree.result(k, run.run_id)
        if run.run_id in self._advancing and not force:
            # Raced, the loser's result would say "running" while the run is still being carried on here.
            await self.carried_here(run.run_id)
            return await _tree.result(k, run.run_id)
        # Forced past one under way, the store's claim settles which of the two carries the run on.
        done = anyio.Event()
        self._advancing.setdefault(run.run_id, []).append(done)
        try:
            return await self._advance(run, force=force, options=options, state=state, attempts=attempts)
        except PauseConsumed:
            # Lost the claim. To an advance here, the caller's result would say "running" while that one carries
            # the run on: this one is done first (two losers never wait on each other), then waits for the rest.
            self._finished(run.run_id, done)
            await self.carried_here(run.run_id)
            raise
        finally:
            self._finished(run.run_id, done)

    def _finished(self, run_id: str, done: anyio.Event) -> None:
        underway = self._advancing.get(run_id, [])
        if done in underway:
            underway.remove(done)
            if not underway:
                del self._advancing[run_id]
        done.set()

    async def carried_here(self, run_id: str) -> None:
        """Once this process's advances of the run, if any are under way, are done (the run paused again or ended)."""
        for underway in list(self._advancing.get(run_id, [])):
            await underway.wait()

    async def _advance(
        self, run: RunRecord, *, force: bool, options: CallOptions, state: PauseState | None, attempts: int
    ) -> RunResult:
        k = self.k
        assert run.pause_id is not None
        runner = self.runner(run)
        pause = state or await k.store.pause_state(run.pause_id)
        decided = dict(pause.decisions)
        settled: list[DecisionRecord] = []
        at_work: dict[str, str] = {}  # forced past a run below still at work (or cut off): its delegate, named
        for request in waiting_below(pause.requests, decided):
            outcome = await self._below(request, force=force, options=options)
            if outcome is not None:
                record = await runner.answer_below(request, outcome)
                decided[request.request_id] = record
                settled.append(record)
            elif force and (child := await k.store.get_run(request.child_run_id)).status == "running":
                remote = await k.store.remote_task(child.run_id)
                there = f" (remote task {remote.task_id!r} at {remote.url})" if remote is not None else ""
                at_work[request.request_id] = child.agent + there
        plan = plan_advance(
            run.run_id, pause.requests, decided, force=force, now=k.clock(), closer=options.closer, at_work=at_work
        )
        if plan is None:
            return await _tree.result(k, run.run_id)
        for below in plan.close_below:
            await _tree.cancel_tree(k, below, SKIPPED_FOR_FORCE, options.closer)
        try:
            return await runner.resume(run, Resume(pause=pause, plan=plan, settled=settled), options)
        except RunConflict:
            fresh = await k.store.get_run(run.run_id)
            if attempts <= 1 or fresh.pause_id != run.pause_id:
                raise
            return await self._advance(fresh, force=force, options=options, state=None, attempts=attempts - 1)

    async def _below(self, request: DelegateRequest, *, force: bool, options: CallOptions) -> RunResult | None:
        """Carry the run below `request` on if it can be; how it ended, or `None` while it still waits or works."""
        k = self.k
        child = await k.store.get_run(request.child_run_id)
        open_below = child.status == "paused" and not force and bool(await _tree.open_leaves(k, child))
        step = step_below(child.status, has_open_leaves=open_below, force=force)
        if step == "wait":
            return None
        if step == "ended":
            return _tree.standing(child)
        try:
            outcome = await self.advance(child, force=force, options=options)
        except PauseConsumed:
            return None
        return None if outcome.status in ("paused", "running") else outcome

    async def carry_on(self, run: RunRecord, options: CallOptions) -> RunResult:
        """Take over a running run whose process died, and let its runner redo its last segment from the store.

        Raises:
            RunConflict: another live runtime holds the run, or the run's work is not this runtime's to redo.
        """
        if self.engine is not None:
            if run.parent_run_id is None:
                return await self.runner(run).carry_on(run, options)  # `_Engined`: closed if it never got there
            # The engine's workers carry every run of a tree on (Temporal reschedules a dead worker's segment).
            raise RunConflict(run.run_id, "the engine's workers carry this run on; no front process takes it over")
        if self.delegates_apart and run.parent_run_id is not None and (await self.home(run)).run_id == run.run_id:
            return _tree.standing(run)  # a run apart is carried on where it runs (its own workflow), not here
        runner = self.runner(run)
        if not runner.local:
            return await runner.carry_on(run, options)  # a proxy takes itself over, asking its remote task
        return await runner.carry_on(await _leases.take_over(self.k, run), options)

    # the runs below runs (the `Runs` port)

    async def run_below(
        self,
        parent: RunRecord,
        agent: str,
        task: str,
        *,
        call_id: str,
        agent_path: str,
        options: CallOptions,
        run_id: str | None = None,
    ) -> RunResult:
        """Start a run of `agent` below `parent`'s call `call_id`, on a thread of its own, and run it.

        With `delegates_apart` a local agent's run is only started (`running`, under this runtime's lease):
        it is carried on from the store where it is run apart (its own workflow), and `parent` waits on it.
        """
        runner = self.runner_below(agent)
        runner.check(agent)  # an agent that does not exist is refused before anything is written
        child = await _tree.start_child(
            self.k,
            parent,
            agent,
            task,
            call_id=call_id,
            agent_path=agent_path,
            client_tools=parent.client_tools if runner.local else (),
            run_id=run_id,
        )
        if self.delegates_apart and self.owns_apart(parent, agent):
            return _tree.standing(child)
        return await runner.start(child, Start(prompt=task, history=[]), options)

    async def delegate(
        self, parent: RunRecord, target: str, task: str, call_id: str, options: CallOptions, *, run_step: int
    ) -> str:
        """Run a delegate for a parent's tool call; if it pauses, the parent's call waits on it (`CallDeferred`).

        A delegate run apart (`delegates_apart`) is only started: the parent's call waits on it at once,
        as it does on a delegate's run another live process still works on (`_carried_below`).
        """
        outcome = await self._once_below(parent, target, task, call_id, options, run_step=run_step)
        if outcome.status in ("paused", "running"):
            raise CallDeferred(metadata=DelegateDeferral(child_run_id=outcome.run_id).as_metadata())
        return await _tree.delegate_answer(self.k, outcome)

    async def _once_below(
        self, parent: RunRecord, target: str, task: str, call_id: str, options: CallOptions, *, run_step: int
    ) -> RunResult:
        """The delegate's run of a parent's call: started the first time the call runs, carried on when it runs again.

        A call runs again when its segment is redone after its process died (the reply holding it was
        kept, so the same call comes back) or when its Temporal activity is retried. Its run's id derives
        from the parent's run, the segment (the pause it resumes), the model request whose reply holds the
        call and the call's id: models reuse plain call ids ("call_0") across replies, never within one.
        A run under that id of another delegate or task (a call id reused where that could not tell them
        apart) is not this call's: the call takes the next id and starts its own run, as the model asked.
        """
        seed = f"{parent.run_id}/{parent.resume_pause_id or 'start'}/{run_step}/{call_id}"
        for attempt in itertools.count(1):
            run_id = derived_id("run", f"{seed}/{attempt}")
            try:
                earlier = await self.k.store.get_run(run_id)
            except RunNotFound:
                break
            if (earlier.agent, earlier.prompt, earlier.parent_call_id) == (target, task, call_id):
                return await self._carried_below(parent, earlier, options)
        return await self.run_below(
            parent, target, task, call_id=call_id, agent_path=f"{parent.path}/{target}", options=options, run_id=run_id
        )

    async def _carried_below(self, parent: RunRecord, child: RunRecord, options: CallOptions) -> RunResult:
        """Where a delegate's run stands when its call runs again: ended or paused, as it is; running, carried on.

        A run apart is carried on where it runs (its own workflow, which the parent's pause starts). A
        local run cut off with its process is taken over and its segment redone here, as the parent's call
        first ran it; one another live process holds is waited on (the parent's pause waits, and the
        recovery sweep carries it on once its holder is gone). A remote delegate's proxy cut off before it
        settled may or may not have handed the task over: it is not sent again, it fails as outcome unknown.
        """
        if child.status != "running" or (self.delegates_apart and self.owns_apart(parent, child.agent)):
            return await _tree.result(self.k, child.run_id)
        runner = self.runner_below(child.agent)
        if not runner.local:
            await _leases.abandon(self.k, child, error=REMOTE_CUT_OFF)
            return await _tree.result(self.k, child.run_id)
        try:
            taken = await _leases.take_over(self.k, child)
        except RunConflict:
            return _tree.standing(child)
        return await runner.carry_on(taken, options)

    def owns_apart(self, parent: RunRecord, agent: str) -> bool:
        """Whether a run of `agent` below `parent` is one that `delegates_apart` runs apart.

        A local agent's run: a delegate an agent's run calls, or a workflow graph's agent node.
        """
        return self.runner_below(agent) is self.agents

    async def home(self, run: RunRecord) -> RunRecord:
        """The run whose work `run`'s is part of: its own when it runs apart (`delegates_apart`), else its tree's."""
        while run.parent_run_id is not None:
            parent = await self.k.store.get_run(run.parent_run_id)
            if self.delegates_apart and self.owns_apart(parent, run.agent):
                return run
            run = parent
        return run

    # changes, when an engine does the work (its decisions: `_verbs.decide.decide_there`)

    async def changed(self, run: RunRecord) -> None:
        """Tell the engine that the store changed under `run`'s tree (a cancel); nothing without one."""
        if self.engine is not None:
            await self.engine.changed(await _tree.root(self.k, run))


class _Engined:
    """The `Runner` of a top-level run whose work an `Engine` does: this process starts and asks, never runs."""

    local = False
    reads_grants = False  # the engine's worker reads them with the segment
    durable_start = True  # another process reads the run the moment the engine has it
    claims_with_decision = False  # a decision goes to the engine, which resumes the run itself

    def __init__(self, k: Kernel, engine: Engine, here: Runner) -> None:
        self._k = k
        self._engine = engine
        self._here = here

    def check(self, name: str) -> None:
        self._here.check(name)  # the front builds the same agents its workers do

    async def start(self, run: RunRecord, start: Start, options: CallOptions) -> RunResult:
        try:
            if start.superseded is not None and start.superseded[0]:
                # The superseded run's workflow waits on a pause this message just closed.
                old = await self._k.store.get_run(start.superseded[0][0].run_id)
                await self._engine.changed(await _tree.root(self._k, old))
            await self._engine.start(run, options)
        except StoreError as exc:
            raise await self._not_started(run, exc) from exc
        return await _tree.result(self._k, run.run_id)

    async def _not_started(self, run: RunRecord, exc: StoreError) -> StoreError:
        """Close a run the engine could not be handed (`exc` says why) as failed, so its thread is not left locked.

        Only while this process still holds the run's lease: an engine's worker that took the run up took
        the lease, and the run goes on there (the failed write is conditional on the holder). One that takes it
        up later finds it failed and leaves it.
        """
        try:
            await self._k.store.finish_run(
                run,
                holder=self._k.holder,
                new_messages=(),
                status="failed",
                output=None,
                error=f"not started: {exc}",
                now=self._k.clock(),
            )
        except RunConflict:
            return await self._taken_meanwhile(run, exc)
        except StoreError:
            return exc
        self._k.events.touched()
        said = (
            f"{exc}; run {run.run_id!r} was not started: it is closed as failed, and its thread takes the next message"
        )
        return StoreError(said, service=exc.service)

    async def _taken_meanwhile(self, run: RunRecord, exc: StoreError) -> StoreError:
        """`exc` of a run this process no longer held when it would close it: where the run stands now."""
        try:
            now = await self._k.store.get_run(run.run_id)
        except StoreError:
            return exc
        if now.status in ("running", "paused"):
            said = f"run {run.run_id!r} was taken up all the same, and goes on"
        else:
            said = f"run {run.run_id!r} was closed meanwhile ({now.status}), and its thread takes the next message"
        return StoreError(f"{exc}; {said}", service=exc.service)

    async def resume(self, run: RunRecord, resume: Resume, options: CallOptions) -> RunResult:
        await self._engine.advance(run, force=False, options=options)
        return await _tree.result(self._k, run.run_id)

    async def carry_on(self, run: RunRecord, options: CallOptions) -> RunResult:
        """Close a run whose front stopped before it handed the run over; the engine's workers carry the others on.

        Raises:
            RunConflict: the engine has the run, or a live process still holds it (it may hand it over yet).
        """
        if await self._engine.started(run):
            raise RunConflict(run.run_id, "the engine's workers carry this run on; no front process takes it over")
        await _leases.abandon(self._k, run, error=NEVER_HANDED_OVER)
        return await _tree.result(self._k, run.run_id)

    async def answer_below(self, request: DelegateRequest, outcome: RunResult) -> DecisionRecord:
        raise RunConflict(request.run_id, "the engine's workers answer the runs below this run")

    async def resume_decided(self, decided: Decided, options: CallOptions) -> RunResult:
        raise RunConflict(decided.found.run.run_id, "a decision on an engine's run is resumed by the engine")

    async def retry(self, run: RunRecord, options: CallOptions) -> RunResult:
        raise RunConflict(run.run_id, "a failed run of an engine is not run again from a front")
