"""`StoreTx`: the primitives of one store transaction, which memory, SQLite and PostgreSQL each implement.

The port's business verbs (`_verbs/`) are written once, as work over these primitives run in
one transaction (`TxStore._write`, `TxStore._read`); a backend supplies the transaction and the
primitives, never the logic. Each primitive is one small step — read a row by key (`get`), insert
rows (`add`), a conditional change whose outcome it reports (`change`), each taking one typed
operation of `_ops` — so a backend maps it to one statement (or one dict operation) and the verbs
keep exactly the statements and commits they had.

Conventions every backend keeps:

- inserts of a key that exists raise the backend's integrity error, which `_write` hands to the
  verb's `race` (a concurrent writer won) or turns into `StoreError`;
- an `add`'s, a blind `change`'s or `append_audit`'s outcome is never read, so the SQL backend may
  send it with the writes after it (PostgreSQL: one round trip, `_sql/_tx.Tx.later`);
- a transaction that raises leaves nothing behind (the database rolls back; memory undoes).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar

from .._core.audit_events import AuditEvent
from .._core.decisions import DecisionRecord
from .._core.grants import Grant
from .._core.votes import Vote
from ._ops import Change, DecisionOf, DocumentOf, New, PutDocument, Ref
from ._ops import Document as Document  # re-exported: where a document was always found
from ._port import RunStore
from ._records import (
    DeliveryStatus,
    DueEscalation,
    OutboxKind,
    PauseState,
    PendingDelivery,
    RequestWithRun,
    RunRecord,
    ThreadRecord,
)

T = TypeVar("T")
R = TypeVar("R")


Pruned: TypeAlias = Literal["deliveries", "fanned_out", "not_fanned_out"]
"""What `StoreTx.prune` deletes."""


@dataclass(frozen=True, kw_only=True)
class Deciding:
    """What deciding a request reads in one step: the request with its run, and its whole pause."""

    found: RequestWithRun
    state: PauseState
    pause_id: str


WORKFLOW_STATES = "sayso.workflow_state"
"""The documents holding where each workflow run stands (`WorkflowState` as JSON), keyed by run id."""
REMOTE_TASKS = "sayso.remote_task"
"""The documents holding the remote task behind each proxy run (`RemoteTask` as JSON), keyed by run id."""


class StoreTx(ABC):
    """One open transaction of a store, as primitives. Never held beyond the work it was given to.

    Fourteen abstract primitives (`tests/store/test_primitives.py` counts them): rows by key
    (`get`), new rows (`add`), changes to rows (`change`), and the reads and writes that are not
    one row — a thread's history, a pause as deciding reads it, votes, grants, the audit chain, the
    sweeps' due rows and the outbox's upkeep.
    """

    # rows by key, new rows, changes

    @abstractmethod
    async def get(self, ref: Ref[R]) -> R | None:
        """The row `ref` names, or `None`."""

    @abstractmethod
    async def add(self, new: New) -> None:
        """Insert new rows (an existing key raises the integrity error); may be sent with the next statement."""

    @abstractmethod
    async def change(self, change: Change) -> bool:
        """Apply `change` if its condition holds; whether the row changed (`ClaimRun` and blind ones: always)."""

    # reads of more than one row

    @abstractmethod
    async def history(self, thread_id: str) -> list[bytes]:
        """The thread's stored batches, oldest first, each a JSON array (decode with `decode_history`)."""

    @abstractmethod
    async def deciding(self, request_id: str) -> Deciding | None:
        """The request, its run and its pause's requests and decisions; `None` for an unknown request."""

    @abstractmethod
    async def votes(self, request_id: str) -> list[Vote]:
        """The votes cast on a request, oldest first."""

    @abstractmethod
    async def active_grants(self, principal: str | None, now: float) -> list[Grant] | None:
        """`principal`'s active grants; `None` when none were asked for or there are too many to read at once."""

    # the audit chain

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

    # the sweeps' due rows and the outbox's upkeep

    @abstractmethod
    async def due_escalations(self, now: float, limit: int) -> list[DueEscalation]:
        """Open requests of open pauses whose next escalation step is due by `now`, soonest first."""

    @abstractmethod
    async def unfanned_events(self, limit: int, kinds: Sequence[OutboxKind]) -> list[tuple[str, str]]:
        """Events of `kinds` not fanned out yet, oldest first: each id with the request or run it is about."""

    @abstractmethod
    async def due_deliveries(self, now: float, limit: int, holder: str) -> list[PendingDelivery]:
        """Pending deliveries due by `now` and not claimed by a live sender, oldest first.

        Not one behind an earlier event of its request to its hook that another sender than `holder` has in flight.
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

    # written over the primitives

    async def document(self, namespace: str, key: str) -> Document | None:
        """The document at `namespace`/`key` with its revision, or `None`."""
        return await self.get(DocumentOf(namespace, key))

    async def put_document(self, namespace: str, key: str, body: str, now: float, *, expect: int | None = None) -> bool:
        """Write a document (see `PutDocument`)."""
        return await self.change(PutDocument(namespace, key, body, now, expect))

    async def decisions(self, request_ids: Sequence[str]) -> dict[str, DecisionRecord]:
        """The decisions taken for these requests, by request id (one read each)."""
        found: dict[str, DecisionRecord] = {}
        for request_id in dict.fromkeys(request_ids):
            record = await self.get(DecisionOf(request_id))
            if record is not None:
                found[request_id] = record
        return found


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
        thread_id=run.thread_id,
        owner=owner,
        agent=agent,
        active_run_id=run.run_id,
        created_at=run.created_at,
        parent_run_id=run.parent_run_id,
    )
