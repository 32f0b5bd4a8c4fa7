"""`StoreTx`: the primitives of one store transaction, which memory, SQLite and PostgreSQL each implement.

The port's business verbs (`_verbs/`) are written once, as work over these primitives run in
one transaction (`TxStore._write`, `TxStore._read`); a backend supplies the transaction and the
primitives, never the logic. Each primitive is one small step — read a row, insert rows, a
conditional change whose outcome it reports — so a backend maps it to one statement (or one
dict operation) and the verbs keep exactly the statements and commits they had.

Conventions every backend keeps:

- inserts of a key that exists raise the backend's integrity error, which `_write` hands to the
  verb's `race` (a concurrent writer won) or turns into `StoreError`;
- an `add_*` or `append_*` primitive's outcome is never read, so the SQL backend may send it
  with the writes after it (PostgreSQL: one round trip, `_sql/_tx.Tx.later`);
- a transaction that raises leaves nothing behind (the database rolls back; memory undoes).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from .._core.audit_events import AuditEvent
from .._core.decisions import DecisionRecord
from .._core.grants import Grant
from .._core.requests import Request
from .._core.steps import StepKey, StepRecord
from .._core.votes import Vote
from ._port import RunStore
from ._records import (
    DeliveryStatus,
    DueEscalation,
    ExecutionRecord,
    ExecutionResult,
    OutboxKind,
    PauseState,
    PendingDelivery,
    RequestWithRun,
    RunRecord,
    RunStatus,
    ThreadRecord,
)

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

T = TypeVar("T")


# the changes a run's row takes, each with the condition it is written under


@dataclass(frozen=True, slots=True)
class PauseRun:
    """Pause a run this process still holds (`holder`): its lease goes, or becomes a hold until `hold_until`."""

    pause_id: str
    holder: str
    now: float
    hold_until: float | None = None
    """The pause holds a live call only `holder` can answer: the run stays `holder`'s until then (renewed)."""


@dataclass(frozen=True, slots=True)
class EndRun:
    """End a run this process still holds (`holder`): completed, failed or cancelled, lease and pause gone."""

    status: RunStatus
    output: str | None
    error: str | None
    holder: str
    now: float


@dataclass(frozen=True, slots=True)
class ClaimRun:
    """A consumed pause's run runs again under `holder`'s lease; unconditional (consuming the pause decided it)."""

    pause_id: str
    holder: str
    until: float
    now: float


@dataclass(frozen=True, slots=True)
class CancelRun:
    """Cancel a run; with `only_paused`, only while it is paused."""

    now: float
    only_paused: bool


@dataclass(frozen=True, slots=True)
class RenewLease:
    """Extend `holder`'s lease on a running run, or its hold on a paused one (no revision bump: nothing changed)."""

    holder: str
    until: float


@dataclass(frozen=True, slots=True)
class ReleaseHold:
    """A paused run `holder` held is held no more (the live call it kept has gone)."""

    holder: str


@dataclass(frozen=True, slots=True)
class TakeOver:
    """Take a running run whose lease lapsed by `now`, or whose holder is `dead`."""

    holder: str
    until: float
    now: float
    dead: str | None


@dataclass(frozen=True, slots=True)
class ReopenRun:
    """Run a failed run again under `holder`'s lease."""

    holder: str
    until: float
    now: float


RunChange: TypeAlias = PauseRun | EndRun | ClaimRun | CancelRun | RenewLease | ReleaseHold | TakeOver | ReopenRun
"""A change to a run's row; every one but `RenewLease` and `ReleaseHold` bumps its revision and `updated_at`."""


@dataclass(frozen=True, slots=True)
class ClaimDelivery:
    """Claim a pending delivery nobody holds a live claim on (by `now`), until `until`."""

    now: float
    until: float


@dataclass(frozen=True, slots=True)
class Settled:
    """What became of a claimed delivery, as its row takes it."""

    status: DeliveryStatus
    error: str | None
    next_attempt_at: float | None
    """When a `pending` delivery is tried again (`None`: unchanged)."""
    finished_at: float | None
    """When a settled one finished (`None`: unchanged)."""
    attempted: bool
    """Whether this counts as an attempt (all but `skipped`)."""


DeliveryChange: TypeAlias = ClaimDelivery | Settled
"""A conditional change to one delivery's row."""

Pruned: TypeAlias = Literal["deliveries", "fanned_out", "not_fanned_out"]
"""What `StoreTx.prune` deletes."""


@dataclass(frozen=True, kw_only=True)
class Deciding:
    """What deciding a request reads in one step: the request with its run, and its whole pause."""

    found: RequestWithRun
    state: PauseState
    pause_id: str


@dataclass(frozen=True)
class Document:
    """A document as stored: its JSON text and its revision (1 when first written, one more at each write)."""

    body: str
    revision: int


WORKFLOW_STATES = "sayso.workflow_state"
"""The documents holding where each workflow run stands (`WorkflowState` as JSON), keyed by run id."""
REMOTE_TASKS = "sayso.remote_task"
"""The documents holding the remote task behind each proxy run (`RemoteTask` as JSON), keyed by run id."""


class StoreTx(ABC):
    """One open transaction of a store, as primitives. Never held beyond the work it was given to."""

    # threads

    @abstractmethod
    async def thread(self, thread_id: str) -> ThreadRecord | None:
        """The thread, or `None`."""

    @abstractmethod
    async def claim_thread(self, thread_id: str, run_id: str, *, expect: str | None, again: bool = False) -> bool:
        """Make `run_id` the thread's active run if its active run is `expect` (`None`: it has none).

        `again`: also when `run_id` is already the active run (a failed run taking its thread back).
        """

    @abstractmethod
    async def free_thread(self, run: RunRecord) -> None:
        """The thread has no active run any more, if `run` was it."""

    # runs

    @abstractmethod
    async def run(self, run_id: str) -> RunRecord | None:
        """The run, or `None`."""

    @abstractmethod
    async def add_run(self, run: RunRecord, *, thread: ThreadRecord | None = None) -> None:
        """Insert a new run; with `thread`, the new thread it opens first."""

    @abstractmethod
    async def update_run(self, run_id: str, change: RunChange) -> bool:
        """Apply `change` if its condition holds; whether the row changed (`ClaimRun`: always)."""

    # the message log

    @abstractmethod
    async def append_messages(self, run: RunRecord, new: Sequence[ModelMessage]) -> None:
        """Append a run's new messages to its thread's log, as one batch (nothing when empty)."""

    @abstractmethod
    async def history(self, thread_id: str) -> list[bytes]:
        """The thread's stored batches, oldest first, each a JSON array (decode with `decode_history`)."""

    # pauses, requests, decisions

    @abstractmethod
    async def add_pause(self, pause_id: str, run_id: str, requests: Sequence[Request], now: float) -> None:
        """Insert an open pause and its requests, open, in the order they were raised."""

    @abstractmethod
    async def consume_pause(self, pause_id: str) -> bool:
        """Consume an open pause; `False` when it was consumed before (someone else won)."""

    @abstractmethod
    async def deciding(self, request_id: str) -> Deciding | None:
        """The request, its run and its pause's requests and decisions; `None` for an unknown request."""

    @abstractmethod
    async def decisions(self, request_ids: Sequence[str]) -> dict[str, DecisionRecord]:
        """The decisions taken for these requests, by request id."""

    @abstractmethod
    async def add_decisions(self, records: Sequence[DecisionRecord]) -> None:
        """Insert decisions (none taken yet); their requests become `decided`."""

    @abstractmethod
    async def votes(self, request_id: str) -> list[Vote]:
        """The votes cast on a request, oldest first."""

    @abstractmethod
    async def add_vote(self, vote: Vote, *, seq: int) -> None:
        """Insert a vote as the request's `seq`-th (from 0); a vote already there raises the integrity error."""

    @abstractmethod
    async def add_events(
        self, kind: OutboxKind, request_ids: Sequence[str], now: float, *, step: int | None = None
    ) -> None:
        """Write one outbox event per request, committed with the change it reports (`step`: an escalation's)."""

    # grants and the audit chain

    @abstractmethod
    async def add_grants(self, grants: Sequence[Grant]) -> None:
        """Insert new grants."""

    @abstractmethod
    async def active_grants(self, principal: str | None, now: float) -> list[Grant] | None:
        """`principal`'s active grants; `None` when none were asked for or there are too many to read at once."""

    @abstractmethod
    async def revoke_grant(self, grant_id: str, now: float) -> Grant | None:
        """Revoke an active grant and return it as revoked; `None` when no active grant has this id."""

    @abstractmethod
    async def lock_audit(self) -> None:
        """Take the audit chain's lock now, in a transaction that locks a pause, run or thread row before its audit.

        The one lock order: the chain's lock, then the rows. A decider takes the chain's lock with its
        decision and then consumes the pause; a writer that consumed the pause first and appended its
        audit after would wait for the decider while it waited for that writer (a deadlock).
        """

    @abstractmethod
    async def append_audit(self, bodies: Sequence[AuditEvent]) -> None:
        """Extend the audit chain after its checkpointed head, signed with the store's key (nothing when empty).

        The chain's new head is announced by the store once the transaction commits.
        """

    # the ledger

    @abstractmethod
    async def execution(self, request_id: str) -> ExecutionRecord | None:
        """The ledger entry of an approved call, or `None`."""

    @abstractmethod
    async def mark_executing(self, request_ids: Sequence[str], run_id: str, now: float) -> None:
        """Insert ledger entries, `executing`, for calls about to run."""

    @abstractmethod
    async def finish_executions(self, executions: Sequence[ExecutionResult], now: float) -> None:
        """Write the results of approved calls to their ledger entries (their audit records appended first)."""

    @abstractmethod
    async def resolve_execution(
        self, request_id: str, result: bytes, now: float, status: Literal["done", "unknown"]
    ) -> bool:
        """Finish an entry still `executing`; `False` when it is not (another sweep resolved it)."""

    # the step journal

    @abstractmethod
    async def step(self, key: StepKey) -> StepRecord | None:
        """A step's record, or `None`."""

    @abstractmethod
    async def add_step(self, key: StepKey, now: float) -> None:
        """Insert a step's mark, `started`."""

    @abstractmethod
    async def end_step(self, key: StepKey, status: Literal["done", "unrecorded"], result: bytes, now: float) -> None:
        """Write a step's outcome to its mark."""

    @abstractmethod
    async def resolve_step(self, key: StepKey, now: float) -> bool:
        """Mark a step still `started` as `unknown` (found cut off); `False` when it is not started."""

    @abstractmethod
    async def drop_step(self, key: StepKey) -> None:
        """Delete a step's mark, if it is `started`."""

    # documents: workflow states, remote tasks, adapters' marks

    @abstractmethod
    async def document(self, namespace: str, key: str) -> Document | None:
        """The document at `namespace`/`key` with its revision, or `None`."""

    @abstractmethod
    async def put_document(self, namespace: str, key: str, body: str, now: float, *, expect: int | None = None) -> bool:
        """Write a document (JSON text); with `expect`, only if its revision still is `expect` (0: there is none).

        Whether it was written: always without `expect`, whose write may be sent with the next statement.
        """

    # escalation timers

    @abstractmethod
    async def due_escalations(self, now: float, limit: int) -> list[DueEscalation]:
        """Open requests of open pauses whose next escalation step is due by `now`, soonest first."""

    @abstractmethod
    async def advance_escalation(self, request_id: str, step: int, next_at: float | None) -> bool:
        """Count step `step` of an open request as fired and set when the next is due; `False` when another did."""

    @abstractmethod
    async def widen_request(self, request: Request) -> None:
        """Replace a routed request by `request` (its routing widened) and list it for each of its deciders."""

    # the outbox

    @abstractmethod
    async def unfanned_events(self, limit: int, kinds: Sequence[OutboxKind]) -> list[str]:
        """Events of `kinds` not fanned out yet, oldest first (their ids)."""

    @abstractmethod
    async def fan_out(self, event_id: str, hooks: Sequence[str], now: float) -> bool:
        """Mark the event fanned out and give it one pending delivery per hook; `False` when another sender did."""

    @abstractmethod
    async def due_deliveries(self, now: float, limit: int) -> list[PendingDelivery]:
        """Pending deliveries due by `now` and not claimed by a live sender, oldest first."""

    @abstractmethod
    async def change_delivery(self, delivery_id: str, holder: str, change: DeliveryChange) -> bool:
        """Claim a delivery for `holder`, or write what became of one `holder` holds the claim on (the claim goes).

        `False` when the condition does not hold: another sender holds a live claim, or `holder` no longer does.
        """

    @abstractmethod
    async def delivery_counts(self) -> dict[DeliveryStatus, int]:
        """How many deliveries stand where."""

    @abstractmethod
    async def prune(self, what: Pruned, before: float, limit: int) -> int:
        """Delete at most `limit` rows older than `before` that are done with; how many went.

        `deliveries`: settled ones that finished before it. `fanned_out` / `not_fanned_out`: events
        created before it, with no delivery left (one not fanned out only while it still is not).
        """


TxWork = Callable[[StoreTx], Coroutine[Any, Any, T]]
"""What a verb does inside one transaction of primitives."""


class TxStore(RunStore):
    """A store whose business verbs are written over `StoreTx`: a backend supplies the transactions."""

    @abstractmethod
    async def _write(self, work: TxWork[T], *, race: TxWork[T] | None = None, durable: bool = True) -> T:
        """Run `work` in one write transaction: committed when it returns, rolled back when it raises.

        `race` answers instead when an insert met a key a concurrent writer inserted first: it runs
        in a fresh transaction and returns the winner's state, redoes the step, or raises the
        conflict. `durable=False` commits without waiting for the disk (see `RunStore.start_run`).
        The audit chain's new head is announced once the commit is done.
        """

    @abstractmethod
    async def _read(self, work: TxWork[T]) -> T:
        """Run `work` without writing; it sees committed data only."""


def new_thread(run: RunRecord, *, owner: str, agent: str) -> ThreadRecord:
    """The thread a run creates when it starts on a thread id nobody used yet."""
    return ThreadRecord(
        thread_id=run.thread_id, owner=owner, agent=agent, active_run_id=run.run_id, created_at=run.created_at
    )
