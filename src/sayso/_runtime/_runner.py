"""The runner seam: `Runner` (how one kind of run goes), `Runs` (what a runner asks of the cycle), `CallOptions`.

Every verb of the cycle (`_cycle`, and the verbs of `_verbs`) reads the store, plans with a
pure function and writes, then hands the run to its kind's `Runner`: an agent's run (`_agent_runs`),
a workflow's (`_workflows`), or a remote delegate's proxy run (`_remote`). A runner that needs a run
below its own (a delegate, a workflow's agent node) asks the cycle through `Runs`, which the cycle
implements and hands to each runner, so arrows point one way: the cycle imports the runners, the
runners only this module. A new kind of run (a Temporal workflow, an approver-routed run) is one
more `Runner`.

`CallOptions` are what one call of a public verb says about everything it runs, delegates and
resumed segments included: the host's grants, how wide a scope may be offered, where the
text of a top-level run goes as the model writes it, and who closes what it leaves unanswered.
They are passed down, never read from the air.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic_ai import DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import ModelMessage

from .._core.access import Principal
from .._core.advance import AdvancePlan
from .._core.decisions import Decision, DecisionRecord, Via
from .._core.grants import Grant
from .._core.requests import DelegateRequest, Request, Scope
from .._core.resume import Closer
from .._engine.deps import RunDeps
from .._store import Decided, PauseState, RunRecord
from ..exceptions import RunConflict
from ._results import RunResult

TextSink = Callable[[str], Awaitable[None]]
"""Where the text of a top-level run goes as the model writes it."""

RunKind = Literal["agent", "workflow", "remote"]
"""The kinds of run, each with its `Runner`: an agent's, a workflow's, a remote delegate's proxy."""


@dataclass(frozen=True, kw_only=True)
class CallOptions:
    """What one call of a public verb says about every run segment it runs, delegates included.

    See docs/concepts/decisions.md#scopes-remembering-an-approval.

    A host that keeps remembered approvals itself passes `grants`: they are the only ones honoured,
    and sayso stores none. `widest` caps the scopes a request offers (`once` when the host
    remembers nothing). `on_text` receives a top-level run's text as the model writes it
    (delegates' text reaches their coordinator, not the person).
    """

    grants: tuple[Grant, ...] | None = None
    """The host's grants; `None` when sayso keeps them."""
    widest: Scope | None = None
    """The widest scope a request may offer; `None`: every scope its rule allows."""
    on_text: TextSink | None = None
    closer: Closer | None = None
    """Who the call is made by, named on each request it closes unanswered (a forced resume, a resume leaving
    requests out); `None`: a call no person made (sayso's own sweeps), whose skips are sayso's."""

    @classmethod
    def of(
        cls, grants: Sequence[Grant] | None, offer_wider_scopes: bool, on_text: TextSink | None = None
    ) -> CallOptions:
        """The options of a verb called with a host's `grants` and `offer_wider_scopes`, as `Sayso.run` takes them."""
        if grants is None and offer_wider_scopes:
            return cls(on_text=on_text)
        return cls(
            grants=None if grants is None else tuple(grants),
            widest="always" if offer_wider_scopes else "once",
            on_text=on_text,
        )

    @property
    def host_keeps_grants(self) -> bool:
        """Whether a host keeps remembered approvals for this call (sayso then stores none)."""
        return self.grants is not None


DEFAULTS = CallOptions()
"""The options of a call that says nothing: sayso keeps grants, every scope is offered, no text sink."""


@dataclass(frozen=True, kw_only=True)
class Resume:
    """What the cycle hands a runner to resume a paused run: the pause as read, and the plan made from it."""

    pause: PauseState
    plan: AdvancePlan
    settled: Sequence[DecisionRecord] = ()
    """The answers of runs below that the cycle read while planning (each made by the runner's `answer_below`)."""


@dataclass(frozen=True, kw_only=True)
class DecisionCall:
    """One decision as a verb was called with it, handed whole to an engine that checks and records it."""

    request_id: str
    decision: Decision
    principal: Principal
    """Who decides."""
    via: Via | None = None
    """The interface the decision came through."""
    resume: bool = True
    """Whether the run is carried on when this was the last open request (`False`: record only)."""


@dataclass(frozen=True, kw_only=True)
class Start:
    """How a run the store has just started begins: its message, and what its first read brought."""

    prompt: str | None
    superseded: tuple[Sequence[Request], Mapping[str, DecisionRecord]] | None = None
    """The requests and decisions of the pause a new message superseded on the thread (its open ones skipped)."""
    history: list[ModelMessage] | None = None
    """The thread's history, when the start read it (a delegate's new thread: `[]`)."""
    stored_grants: Sequence[Grant] | None = field(default=None)
    """The principal's stored grants, when the start read them."""


class Runner(Protocol):
    """How one kind of run goes: started, resumed once its pause is decided, carried on after its process died.

    The cycle decides *when* (a message came, the last request was decided, a lease lapsed) and
    plans *what* (`sayso._core.advance`); the runner does the run's own work and writes where it
    ended (paused again, completed, failed) before it returns.
    """

    local: bool
    """Whether the run's work happens in this runtime (agent and workflow runs) rather than at a remote agent.

    Only local runs are taken over when their process dies, and only they get the client's tools.
    """

    reads_grants: bool
    """Whether the run's start reads the principal's stored grants with the run (an agent's run decides calls)."""

    durable_start: bool
    """Whether the commit that starts the run waits for the disk.

    A workflow's run is told to no one before its first stop, whose durable write carries its start.
    """

    claims_with_decision: bool
    """Whether the decision that settles a top-level run's pause also claims its resume in its own commit.

    Such a runner resumes the run through `resume_decided`; the others are resumed by the cycle after
    the decision's commit (a workflow's resume reads its state with the claim).
    """

    def check(self, name: str) -> None:
        """Refuse a new run of `name` this runtime cannot run (an agent failing to build) before anything is written."""
        ...

    async def start(self, run: RunRecord, start: Start, options: CallOptions) -> RunResult:
        """Run a run the store has just started, until it pauses or ends."""
        ...

    async def resume(self, run: RunRecord, resume: Resume, options: CallOptions) -> RunResult:
        """Consume the run's decided pause as its plan says and carry the run on.

        Raises:
            PauseConsumed: another process resumed this pause first.
            RunConflict: a request the plan skips was decided meanwhile (plan again).
        """
        ...

    async def carry_on(self, run: RunRecord, options: CallOptions) -> RunResult:
        """Redo the last segment of a run whose lease this runtime has just taken over, from the store."""
        ...

    async def answer_below(self, request: DelegateRequest, outcome: RunResult) -> DecisionRecord:
        """The decision that closes the run's wait on the run below it that ended as `outcome`."""
        ...

    async def resume_decided(self, decided: Decided, options: CallOptions) -> RunResult:
        """Carry on a run whose pause the last decision's own commit consumed (`claims_with_decision` runners only)."""
        ...

    async def retry(self, run: RunRecord, options: CallOptions) -> RunResult:
        """Run a failed run again from where it failed, when its kind can (a workflow's failed node).

        Raises:
            RunConflict: the run's kind cannot be retried, or another process took it up first.
        """
        ...


def refuse_retry(run: RunRecord) -> RunConflict:
    """The refusal of a runner whose kind of run is not retried once it failed (only a paused run is resumed)."""
    return RunConflict(run.run_id, f"the run is {run.status}; only a paused run can be resumed")


class WorkflowRuns(Runner, Protocol):
    """The runner of workflows' runs (`_workflows.WorkflowRunner`): the cycle asks it which names are workflows."""

    @property
    def names(self) -> frozenset[str]:
        """The runtime's workflows by name."""
        ...


class Runs(Protocol):
    """What a runner asks of the cycle: the runs below its own, run and carried on as the cycle runs any run."""

    async def delegate(
        self, parent: RunRecord, target: str, task: str, call_id: str, options: CallOptions, *, run_step: int
    ) -> str:
        """Run the delegate `target` for `parent`'s call once, however often the call runs; its answer.

        `run_step`: the segment's model request whose reply holds the call. Raises `CallDeferred` while the
        delegate's run pauses or works apart.
        """
        ...

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

        `run_id` names the run (a caller that must find it again after a crash); a new id by default.
        """
        ...

    async def advance(self, run: RunRecord, *, force: bool, options: CallOptions) -> RunResult:
        """Carry a paused run on as far as its decisions allow, runs below first."""
        ...

    async def carry_on(self, run: RunRecord, options: CallOptions) -> RunResult:
        """Take over a running run whose process died, and redo its last segment."""
        ...


class Engine(Protocol):
    """Where the work of top-level runs happens when not in this process: a Temporal cluster's workers.

    With an engine, this runtime is a front (docs/guides/temporal.md): it writes what a verb
    starts (a run, a superseding message) and hands the run's work to the engine; decisions go
    to the run's workflow, which checks them before anything is recorded. The store stays the
    system of record: what the engine's workers do, they write there, and the front reads it.
    """

    async def start(self, run: RunRecord, options: CallOptions) -> None:
        """Hand a run the store has just started to the engine; returns once it paused or ended.

        Raises:
            StoreError: the engine is out of reach, or none of its workers took the run up (the run may or may
                not have been handed over: whoever still holds its lease decides).
        """
        ...

    async def advance(self, top: RunRecord, *, force: bool, options: CallOptions) -> None:
        """Ask the engine to carry the paused top-level run `top` on (its runs below first)."""
        ...

    async def decide(self, top: RunRecord, call: DecisionCall, options: CallOptions) -> bool:
        """Deliver a decision on a request of `top`'s tree to its workflow, which checks and records it.

        Returns whether it was recorded (the same decision again is not), once the run went on.

        Raises:
            DecisionRefused: the decision does not fit (the pause stays open).
            NotAllowed: the principal may not decide the request.
            StoreError: the engine is out of reach, or none of its workers took the decision up.
        """
        ...

    async def changed(self, top: RunRecord) -> None:
        """Tell `top`'s workflow that the store changed under it (a cancel, a superseding message)."""
        ...

    async def started(self, top: RunRecord) -> bool:
        """Whether the engine has `top`'s work (running or ended): `False` when it was never handed over.

        Raises:
            StoreError: the engine is out of reach.
        """
        ...

    async def aclose(self) -> None:
        """Close the connection to the engine."""
        ...


@dataclass(frozen=True, kw_only=True)
class LoopCall:
    """One agent segment's loop, as `_step.execute` would run it: what the model is given, and the run's deps."""

    prompt: str | None
    history: list[ModelMessage]
    deferred: DeferredToolResults | None
    deps: RunDeps
    instructions: str | None
    on_text: TextSink | None = None
    """Where the segment's text goes as the model writes it: a top-level run's caller's sink, else `None`."""


@dataclass(frozen=True, kw_only=True)
class LoopResult:
    """How an agent segment's loop ended: the messages it added, and its output (text, or the calls it deferred)."""

    new_messages: list[ModelMessage]
    all_messages: list[ModelMessage]
    output: str | DeferredToolRequests


class AgentLoop(Protocol):
    """Where agent segments' loops run when not in this process: an executor's (Temporal's durable agent loop).

    The runtime still does everything around the loop (the lease, the pause or the end it writes);
    the loop's tools reach the store through the runtime's own `RunDeps` on whichever process runs them.
    """

    def covers(self, agent: str) -> bool:
        """Whether the loop of `agent`'s segments runs there (else in this process)."""
        ...

    async def run(self, run: RunRecord, call: LoopCall) -> LoopResult:
        """Run `run`'s segment loop there until it stops (text, or deferred calls); a failure is raised."""
        ...
