"""`RunStore`: the port every backend implements — threads, runs, pauses, requests, decisions and the rest.

The runtime talks to durable state only through these verbs, so a backend can be swapped
(`SqlRunStore` for SQLite and PostgreSQL, `MemoryRunStore` for tests and embedding) and one
contract suite (`tests/store/test_contract.py`) pins what each must do. The business verbs are
written once (`_verbs/`) over the primitives of one transaction (`_primitives.StoreTx`); a
backend supplies those primitives, its transactions and its listings. The rules a verb applies
inside its transaction (`decide_request`'s `judge`, `begin_run`'s `check_thread`) are the core's
pure functions, over the typed ask the caller built up front: the store imports the rule from
`_core`, never anything of the runtime, and the runtime hands it only data. Every step that must
happen once — consuming a pause, the first decision, starting an approved call, taking over a
run — is a conditional write whose outcome the verb reports, so the same runtime is safe across
processes and replicas. Backends raise sayso's errors only: `RunConflict` and `PauseConsumed`
when another writer won a race, `RunNotFound` for an unknown run, `StoreError` when the
storage itself failed. Other concepts' verbs are declared beside it: `_port_leases`, `_port_outbox`,
`_port_trust`, `_port_policy`, `_port_inbox` (what listing open requests needs), `_port_watch` (what a watch
reads at each look)...
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from .._core.audit import AuditHead, AuditKey
from .._core.audit_events import AuditEvent
from .._core.deciding import DecisionAsk
from .._core.decisions import DecisionRecord
from .._core.grants import Grant
from .._core.requests import Request
from .._core.starting import StartAsk
from ._port_inbox import InboxPort
from ._port_leases import LeasePort
from ._port_outbox import OutboxPort
from ._port_policy import PolicyPort
from ._port_steps import StepPort
from ._port_top_runs import TopRunsPort
from ._port_trust import TrustPort
from ._port_watch import WatchPort
from ._records import (
    BegunRun,
    Claim,
    Decided,
    ExecutionRecord,
    ExecutionResult,
    PauseState,
    RemoteTask,
    RequestState,
    RequestWithRun,
    RunRecord,
    RunRequests,
    RunStart,
    RunStatus,
    StuckExecution,
    ThreadPage,
    ThreadRecord,
    TranscriptEntry,
    TranscriptPage,
)

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage


class RunStore(InboxPort, LeasePort, OutboxPort, WatchPort, TrustPort, PolicyPort, StepPort, TopRunsPort):
    """The durable store behind every run, pause and decision.

    Open it before use (`await store.open()` or `async with store:`) and close it after. Audit
    bodies are JSON objects: a store keeps them as canonical JSON and hands back what that JSON
    reads as, so the hash chain checks the same bytes on every backend.
    """

    audit_key: AuditKey | None = None
    """The key that signs every audit record and head this store appends (see `use_audit_key`)."""
    _head_listener: Callable[[AuditHead], None] | None = None

    def use_audit_key(self, key: AuditKey | None, *, on_head: Callable[[AuditHead], None] | None = None) -> None:
        """Sign every audit record (and the chain's head) this store appends with `key` from now on.

        `on_head` is told the chain's new head after each commit that extended it (the runtime
        exports it to a file). Without a key, appending to a chain that is signed is refused
        (`ConfigError`): one unsigned record would break it.
        """
        self.audit_key = key
        self._head_listener = on_head

    def _announce_head(self, head: AuditHead | None) -> None:
        """Tell the listener a committed head (never before the commit: a rolled-back head was never the chain's)."""
        if head is not None and self._head_listener is not None:
            self._head_listener(head)

    @abstractmethod
    async def ping(self) -> None:
        """Check that the store answers.

        Raises:
            StoreError: it does not.
        """

    # threads and runs

    @abstractmethod
    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        """The thread, or `None` when there is none with this id."""

    @abstractmethod
    async def start_run(
        self,
        start: RunStart,
        *,
        expect_active: str | None,
        skips: Sequence[DecisionRecord] = (),
        audit: Sequence[AuditEvent] = (),
        supersede_pause: str | None = None,
        durable: bool = True,
    ) -> RunRecord:
        """Create the thread if new and start a run on it, in one transaction.

        `expect_active` is the active run the caller saw on the thread (or `None`); if another
        process got there first the whole step is refused, so two runs never share a thread.
        When a paused run is superseded by a new message (`supersede_pause`, the pause of
        `expect_active`), its pause is consumed, the run cancelled and `skips` recorded here too.

        `durable=False` lets the commit return before it reaches the disk (a crash of the process
        loses nothing; a power cut may): for a caller whose next write of the run is durable and
        comes before anyone is told of the run, which that write then makes durable too.

        Raises:
            RunConflict: the thread's active run is no longer `expect_active`.
            PauseConsumed: `supersede_pause` was consumed meanwhile.
        """

    @abstractmethod
    async def begin_run(
        self, start: RunStart, *, ask: StartAsk | None = None, grants_of: str | None = None
    ) -> BegunRun:
        """A run's first transaction: read the thread, start the run on it, read its history.

        With `ask`, the core's `check_thread` rules on the thread as read (`None` for a new one)
        before anything is written: it raises to refuse, say because the caller may not speak in
        it. A new thread is created for `start.owner` and `start.agent`; on an existing thread the
        run is the thread's agent's. When the thread has an active run nothing is written and `run`
        is `None` (the caller supersedes it through `start_run`). `grants_of`'s active grants are
        read in the same transaction.

        The commit does not wait for the disk: the run is safe from a crash of this process at
        once, and reaches the disk with the run's next commit (its pause or its end), which does.

        Raises:
            RunConflict: another process started a run on the same thread meanwhile.
        """

    @abstractmethod
    async def get_run(self, run_id: str) -> RunRecord:
        """The run.

        Raises:
            RunNotFound: no run has this id.
        """

    @abstractmethod
    async def stalled_runs(self, *, before: float, limit: int = 100) -> list[str]:
        """Paused runs whose open pause waits on no person and on which nothing happened since `before`.

        Every request of such a pause is decided (or is a delegate's call), so the run should have
        resumed: the process that recorded the last decision died before it could. Oldest first.
        """

    @abstractmethod
    async def save_pause(
        self,
        run: RunRecord,
        *,
        holder: str,
        pause_id: str,
        new_messages: Sequence[ModelMessage],
        requests: Sequence[Request],
        now: float,
        executions: Sequence[ExecutionResult] = (),
        workflow_state: bytes | None = None,
        hold_until: float | None = None,
        keeper: str | None = None,
    ) -> None:
        """Persist a pause: the run's new messages, its requests, and the run's paused status, atomically.

        `executions` are results of approved calls the segment ran; their ledger entries are
        finished and their audit records appended in the same commit. A workflow run's state
        (`workflow_state`, what it waits on included) is replaced in the same commit too.

        With `hold_until`, the pause holds a live call only `holder` can answer: the run keeps its
        lease until then, renewed (`renew_lease`) until `release_hold` or the pause is consumed. `keeper` names
        another runtime that holds the call (a Temporal worker whose tool activity asked), which then holds the run.

        Raises:
            RunConflict: this process no longer holds the run's lease.
        """

    @abstractmethod
    async def finish_run(
        self,
        run: RunRecord,
        *,
        holder: str,
        new_messages: Sequence[ModelMessage],
        status: RunStatus,
        output: str | None,
        error: str | None,
        now: float,
        executions: Sequence[ExecutionResult] = (),
        workflow_state: bytes | None = None,
    ) -> None:
        """Persist the end of a run (with the results of the approved calls it ran) and free its thread.

        A workflow run's final state (`workflow_state`) is replaced in the same commit.

        Raises:
            RunConflict: this process no longer holds the run's lease.
        """

    @abstractmethod
    async def cancel_run(
        self, run: RunRecord, *, now: float, skips: Sequence[DecisionRecord], audit: Sequence[AuditEvent] = ()
    ) -> None:
        """Close a paused run whose parent moved on: its pause is consumed and its undecided requests skipped."""

    @abstractmethod
    async def expired_runs(self, now: float) -> list[str]:
        """Paused runs whose open requests have all passed their expiry time."""

    # the message log

    @abstractmethod
    async def load_messages(self, thread_id: str) -> list[ModelMessage]:
        """The thread's whole history, oldest first."""

    @abstractmethod
    async def run_messages(self, run_id: str) -> list[ModelMessage]:
        """The messages one run added to its thread, oldest first (none for an unknown run)."""

    @abstractmethod
    async def transcript(self, thread_id: str, *, after_seq: int = 0) -> list[TranscriptEntry]:
        """A thread's history as plain entries (text, tool calls, results), after the batch `after_seq`."""

    @abstractmethod
    async def transcript_page(self, thread_id: str, *, limit: int, cursor: str | None = None) -> TranscriptPage:
        """A thread's newest `limit` transcript lines before `cursor` (the newest of all without one), oldest first.

        A long thread's page reads the batches it shows, not the whole history.

        Raises:
            InvalidCursor: `cursor` is not the `next_cursor` of a page.
        """

    @abstractmethod
    async def last_seq(self, thread_id: str) -> int:
        """The position of the latest stored batch of a thread's history, 0 when it has none."""

    @abstractmethod
    async def threads(self, *, owner: str | None, limit: int, cursor: str | None = None) -> ThreadPage:
        """Threads, newest first, a page at a time, without delegates' own threads; only `owner`'s unless `None`.

        Raises:
            InvalidCursor: `cursor` is not the `next_cursor` of a page.
        """

    # pauses, requests and decisions

    @abstractmethod
    async def pause_state(self, pause_id: str) -> PauseState:
        """A pause's run and status, its requests (in the order they were raised) and their decisions.

        Raises:
            StoreError: no pause has this id (the runtime only asks for pauses it has seen).
        """

    @abstractmethod
    async def get_request(self, request_id: str) -> RequestState | None:
        """A request, the status of its pause, and its decision if any; `None` when unknown."""

    @abstractmethod
    async def request_with_run(self, request_id: str) -> RequestWithRun | None:
        """A request's state and the run that raised it, in one read; `None` when unknown."""

    @abstractmethod
    async def run_requests(self, run_id: str) -> RunRequests:
        """Every request a run ever raised, in order, with the decisions taken."""

    @abstractmethod
    async def open_requests(self, *, limit: int = 100) -> list[Request]:
        """Open requests of open pauses across every thread (delegate calls aside), oldest first."""

    @abstractmethod
    async def record_decision(
        self, record: DecisionRecord, *, audit: Sequence[AuditEvent] = (), grant: Grant | None = None
    ) -> DecisionRecord | None:
        """Record a decision (with its audit records and any grant it creates) unless one exists.

        Returns the existing decision when there is one: the first decision wins, and nothing is written.
        """

    @abstractmethod
    async def record_decisions(
        self,
        records: Sequence[DecisionRecord],
        *,
        audit: Sequence[AuditEvent] = (),
        grants: Sequence[Grant] = (),
    ) -> list[DecisionRecord]:
        """Record several decisions at once, or none of them.

        Returns the decisions already taken for any of the requests; when there are some, nothing
        is written (the first decision wins). An empty list means all were recorded.
        """

    @abstractmethod
    async def add_decisions(self, records: Sequence[DecisionRecord], *, audit: Sequence[AuditEvent] = ()) -> None:
        """Record decisions sayso takes itself (a delegate's result, an expiry); ones already decided are kept."""

    @abstractmethod
    async def consume_pause(
        self,
        run: RunRecord,
        *,
        pause_id: str,
        holder: str,
        until: float,
        now: float,
        added: Sequence[DecisionRecord],
        audit: Sequence[AuditEvent] = (),
        executing: Sequence[str] = (),
        load_history: bool = True,
        grants_of: str | None = None,
        durable: bool = True,
        load_workflow_state: bool = False,
    ) -> Claim:
        """Consume a pause and make this process the run's lease holder; exactly one caller succeeds.

        `added` are decisions the resume takes itself (skips of what was left open). `executing`
        names the approved requests about to run: their ledger marks are written in the same
        commit, so they are durable before any of those calls starts. The thread's history is
        read in the same transaction when `load_history` is set, and `grants_of`'s active grants.
        `durable=False` as for `start_run`; never with `executing`, whose marks must be on disk
        before the calls run. `load_workflow_state` reads a workflow run's saved state in the same
        transaction.

        Raises:
            PauseConsumed: the pause was consumed before.
            RunConflict: one of `added` was decided meanwhile (nothing is written; re-plan and try again).
        """

    @abstractmethod
    async def decide_request(self, ask: DecisionAsk, *, until: float) -> Decided | None:
        """Decide a request in one transaction: read it, let the core's `judge` rule on `ask`, write the verdict.

        `judge` gets the request with its run, votes and decision, and its pause's requests and
        decisions, as read; it raises to refuse, and then nothing is written. When a concurrent
        writer gets in the way it is called again on what is there now. The verdict's decision is
        recorded with its audit records and grant (the first decision wins: the judge sees an
        earlier one). When the verdict resumes the run, its pause is consumed, this process
        (`ask.holder`, until `until`) takes the run's lease, the approved calls' ledger marks are
        written and the thread's history is read, all in the same commit.

        Returns `None` when no request has this id.
        """

    # the at-most-once ledger of approved calls

    @abstractmethod
    async def begin_execution(self, request_id: str, run_id: str, now: float) -> ExecutionRecord | None:
        """Mark an approved call as running before it runs; returns the earlier entry if there is one."""

    @abstractmethod
    async def finish_execution(
        self,
        request_id: str,
        result: bytes,
        now: float,
        *,
        audit: Sequence[AuditEvent] = (),
        status: Literal["done", "unknown"] = "done",
    ) -> None:
        """Record an approved call's result, with its audit record of the arguments it really ran with.

        `status="unknown"` resolves an entry whose call was cut off: `result` is what the model reads
        instead, and the audit record says the outcome is unknown.
        """

    @abstractmethod
    async def stuck_executions(self, *, run_id: str | None = None, limit: int = 100) -> list[StuckExecution]:
        """Ledger entries still `executing` whose run is no longer `running` (or, with `run_id`, that run's).

        No live process will finish them: the segment that marked them ended (failed, or carried on
        elsewhere), so the runtime resolves each as `unknown`.
        """

    # remote delegates

    @abstractmethod
    async def set_remote_task(self, run_id: str, *, url: str, task_id: str, context_id: str) -> None:
        """Remember which remote A2A task a proxy run stands for."""

    @abstractmethod
    async def remote_task(self, run_id: str) -> RemoteTask | None:
        """The remote task behind a proxy run, or `None` for a local run."""

    # workflows

    @abstractmethod
    async def workflow_state(self, run_id: str) -> bytes | None:
        """The last saved state of a workflow run (JSON), or `None` when none was saved."""

    @abstractmethod
    async def save_workflow_state(
        self,
        run: RunRecord,
        *,
        holder: str,
        state: bytes,
        now: float,
        new_messages: Sequence[ModelMessage] = (),
    ) -> None:
        """Replace a running workflow run's state (a node finished), appending any messages it adds.

        The commit does not wait for the disk (see `start_run`'s `durable=False`): it is progress,
        which the run's next pause or end, both durable, makes durable too.

        Raises:
            RunConflict: this process no longer holds the run's lease.
        """

    @abstractmethod
    async def reopen_run(self, run: RunRecord, *, holder: str, until: float, now: float) -> RunRecord:
        """Run a failed run again under this process's lease (a workflow retrying its failed node).

        The run takes its thread back; exactly one caller wins.

        Raises:
            RunConflict: the run is not failed (another caller reopened it first).
            ThreadBusy: another run started on the thread since the run failed.
        """

    # adapters' own state

    @abstractmethod
    async def set_mark(self, namespace: str, key: str, value: str) -> None:
        """Keep a value an interface adapter needs beside sayso's state, replacing any earlier one.

        `namespace` is the adapter's own (say `a2a.activation`), so adapters never collide.
        """

    @abstractmethod
    async def claim_mark(self, namespace: str, key: str, value: str) -> bool:
        """Keep a value only if none is kept under `namespace` and `key` yet; `False` when one was (nothing changes).

        Of two callers at once, across processes, exactly one gets `True`: what a one-time token or a
        replayed payload is refused by.
        """

    @abstractmethod
    async def update_mark(self, namespace: str, key: str, change: Callable[[str | None], str]) -> str:
        """Replace the value under `namespace` and `key` with `change(the value now)`, and return it.

        Read and written in one transaction, written only if nobody wrote it meanwhile (its revision),
        else done again: of concurrent updates across processes none is lost. `change` must be pure;
        what it raises leaves the value as it was.
        """

    @abstractmethod
    async def get_mark(self, namespace: str, key: str) -> str | None:
        """The value kept under `namespace` and `key`, or `None`."""
