"""The typed operations a store transaction takes: a row read by its key, new rows, and changes to rows.

`StoreTx.get`, `StoreTx.add` and `StoreTx.change` each take one of these and nothing else, so the
port stays a handful of primitives while every caller stays typed: a `Ref[R]` reads an `R`, a `New`
inserts, a `Change` says which row it changes and under which condition. `_dispatch.OpsTx` matches
on the operation once (with `assert_never`); each backend maps it to the one statement (or dict
operation) it always was, in the method the dispatch calls.

A change is either conditional — its outcome (whether the row changed) is what the verb reads — or
*blind* (`FreeThread`, `EndStep`, `FinishExecutions`, a `PutDocument` without `expect`): it always
reports `True` and the SQL backend may send it with the writes after it, as it does every `New`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Literal, TypeAlias, TypeVar

from .._core.decisions import DecisionRecord
from .._core.grants import Grant
from .._core.requests import Request
from .._core.steps import StepKey, StepRecord
from .._core.votes import Vote
from ._records import DeliveryStatus, ExecutionRecord, ExecutionResult, OutboxKind, RunRecord, RunStatus, ThreadRecord

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

R = TypeVar("R")


@dataclass(frozen=True)
class Document:
    """A document as stored: its JSON text and its revision (1 when first written, one more at each write)."""

    body: str
    revision: int


# rows read by key


class Ref(Generic[R]):
    """A row by its key; `StoreTx.get(ref)` reads it as an `R` (or `None`)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ThreadOf(Ref[ThreadRecord]):
    thread_id: str


@dataclass(frozen=True, slots=True)
class RunOf(Ref[RunRecord]):
    run_id: str


@dataclass(frozen=True, slots=True)
class DecisionOf(Ref[DecisionRecord]):
    """The decision taken for a request."""

    request_id: str


@dataclass(frozen=True, slots=True)
class GrantOf(Ref[Grant]):
    grant_id: str


@dataclass(frozen=True, slots=True)
class ExecutionOf(Ref[ExecutionRecord]):
    """The ledger entry of an approved call."""

    request_id: str


@dataclass(frozen=True, slots=True)
class StepOf(Ref[StepRecord]):
    """A step journal's mark."""

    key: StepKey


@dataclass(frozen=True, slots=True)
class DocumentOf(Ref[Document]):
    """A document (workflow state, remote task, an adapter's mark) with its revision."""

    namespace: str
    key: str


AnyRef: TypeAlias = ThreadOf | RunOf | DecisionOf | GrantOf | ExecutionOf | StepOf | DocumentOf
"""Every `Ref` a backend reads."""


# new rows: an insert of a key that exists raises the backend's integrity error; the outcome is never read


@dataclass(frozen=True, slots=True)
class NewRun:
    """A new run; with `thread`, the new thread it opens first."""

    run: RunRecord
    thread: ThreadRecord | None = None


@dataclass(frozen=True, slots=True)
class NewMessages:
    """A run's new messages, appended to its thread's log as one batch (nothing when empty)."""

    run: RunRecord
    messages: Sequence[ModelMessage]


@dataclass(frozen=True, slots=True)
class NewPause:
    """An open pause and its requests, open, in the order they were raised."""

    pause_id: str
    run_id: str
    requests: Sequence[Request]
    now: float


@dataclass(frozen=True, slots=True)
class NewDecisions:
    """Decisions (none taken yet); their requests become `decided`."""

    records: Sequence[DecisionRecord]


@dataclass(frozen=True, slots=True)
class NewVote:
    """A vote as the request's `seq`-th (from 0): a vote already there raises the integrity error."""

    vote: Vote
    seq: int


@dataclass(frozen=True, slots=True)
class NewEvents:
    """One outbox event per request, committed with the change it reports (`step`: an escalation's)."""

    kind: OutboxKind
    request_ids: Sequence[str]
    now: float
    step: int | None = None


@dataclass(frozen=True, slots=True)
class NewGrants:
    grants: Sequence[Grant]


@dataclass(frozen=True, slots=True)
class NewExecutions:
    """Ledger entries, `executing`, for calls about to run."""

    request_ids: Sequence[str]
    run_id: str
    now: float


@dataclass(frozen=True, slots=True)
class NewStep:
    """A step's mark, `started`."""

    key: StepKey
    now: float


New: TypeAlias = (
    NewRun | NewMessages | NewPause | NewDecisions | NewVote | NewEvents | NewGrants | NewExecutions | NewStep
)
"""Rows `StoreTx.add` inserts."""


# changes to a run's row, each with the condition it is written under


@dataclass(frozen=True, slots=True)
class PauseRun:
    """Pause a run this process still holds (`holder`): its lease goes, or becomes a hold until `hold_until`."""

    run_id: str
    pause_id: str
    holder: str
    now: float
    hold_until: float | None = None
    """The pause holds a live call only `holder` can answer: the run stays `holder`'s until then (renewed)."""
    keeper: str | None = None
    """With `hold_until`, the runtime holding the call when it is not `holder`: the run is then `keeper`'s."""


@dataclass(frozen=True, slots=True)
class EndRun:
    """End a run this process still holds (`holder`): completed, failed or cancelled, lease and pause gone."""

    run_id: str
    status: RunStatus
    output: str | None
    error: str | None
    holder: str
    now: float


@dataclass(frozen=True, slots=True)
class ClaimRun:
    """A consumed pause's run runs again under `holder`'s lease; unconditional (consuming the pause decided it)."""

    run_id: str
    pause_id: str
    holder: str
    until: float
    now: float


@dataclass(frozen=True, slots=True)
class CancelRun:
    """Cancel a run; with `only_paused`, only while it is paused."""

    run_id: str
    now: float
    only_paused: bool


@dataclass(frozen=True, slots=True)
class RenewLease:
    """Extend `holder`'s lease on a running run, or its hold on a paused one (no revision bump: nothing changed)."""

    run_id: str
    holder: str
    until: float


@dataclass(frozen=True, slots=True)
class ReleaseHold:
    """A paused run `holder` held is held no more (the live call it kept has gone)."""

    run_id: str
    holder: str


@dataclass(frozen=True, slots=True)
class TakeOver:
    """Take a running run whose lease lapsed by `now`, or whose holder is `dead`."""

    run_id: str
    holder: str
    until: float
    now: float
    dead: str | None


@dataclass(frozen=True, slots=True)
class ReopenRun:
    """Run a failed run again under `holder`'s lease."""

    run_id: str
    holder: str
    until: float
    now: float


RunChange: TypeAlias = PauseRun | EndRun | ClaimRun | CancelRun | RenewLease | ReleaseHold | TakeOver | ReopenRun
"""A change to a run's row; every one but `RenewLease` and `ReleaseHold` bumps its revision and `updated_at`."""


# changes to the other rows


@dataclass(frozen=True, slots=True)
class ClaimThread:
    """Make `run_id` the thread's active run if its active run is `expect` (`None`: it has none).

    `again`: also when `run_id` is already the active run (a failed run taking its thread back).
    """

    thread_id: str
    run_id: str
    expect: str | None
    again: bool = False


@dataclass(frozen=True, slots=True)
class FreeThread:
    """Blind: the thread has no active run any more, if `run_id` was it."""

    thread_id: str
    run_id: str


@dataclass(frozen=True, slots=True)
class ConsumePause:
    """Consume an open pause; `False` when it was consumed before (someone else won)."""

    pause_id: str


@dataclass(frozen=True, slots=True)
class AdvanceEscalation:
    """Count step `step` of an open request as fired and set when the next is due; `False` when another did."""

    request_id: str
    step: int
    next_at: float | None


@dataclass(frozen=True, slots=True)
class WidenRequest:
    """Replace a routed request by `request` (its routing widened) and list it for each decider; blind."""

    request: Request


@dataclass(frozen=True, slots=True)
class RevokeGrant:
    """Revoke an active grant; `False` when no active grant has this id."""

    grant_id: str
    now: float


@dataclass(frozen=True, slots=True)
class FinishExecutions:
    """Blind: the results of approved calls, written to their ledger entries (their audit appended first)."""

    executions: Sequence[ExecutionResult]
    now: float


@dataclass(frozen=True, slots=True)
class ResolveExecution:
    """Finish a ledger entry still `executing`; `False` when it is not (another sweep resolved it)."""

    request_id: str
    result: bytes
    now: float
    status: Literal["done", "unknown"]


@dataclass(frozen=True, slots=True)
class EndStep:
    """Blind: a step's outcome, written to its mark."""

    key: StepKey
    status: Literal["done", "unrecorded"]
    result: bytes
    now: float


@dataclass(frozen=True, slots=True)
class ResolveStep:
    """Mark a step still `started` as `unknown` (found cut off); `False` when it is not started."""

    key: StepKey
    now: float


@dataclass(frozen=True, slots=True)
class DropStep:
    """Delete a step's mark, if it is `started`."""

    key: StepKey


@dataclass(frozen=True, slots=True)
class PutDocument:
    """Write a document (JSON text); with `expect`, only if its revision still is `expect` (0: there is none).

    Without `expect` the write is blind (always `True`, and it may be sent with the next statement).
    """

    namespace: str
    key: str
    body: str
    now: float
    expect: int | None = None


@dataclass(frozen=True, slots=True)
class FanOut:
    """Mark an event fanned out and give it one pending delivery per hook; `False` when another sender did."""

    event_id: str
    hooks: Sequence[str]
    now: float


@dataclass(frozen=True, slots=True)
class ClaimDelivery:
    """Claim a pending delivery for `holder` that nobody holds a live claim on (by `now`), until `until`.

    With `renew`, extend instead the claim `holder` already holds on it (a sender still working through its batch).
    """

    delivery_id: str
    holder: str
    now: float
    until: float
    renew: bool = False


@dataclass(frozen=True, slots=True)
class Settled:
    """What became of a delivery `holder` holds the claim on, as its row takes it (the claim goes)."""

    delivery_id: str
    holder: str
    status: DeliveryStatus
    error: str | None
    next_attempt_at: float | None
    """When a `pending` delivery is tried again (`None`: unchanged)."""
    finished_at: float | None
    """When a settled one finished (`None`: unchanged)."""
    attempted: bool
    """Whether this counts as an attempt (all but `skipped`)."""


Change: TypeAlias = (
    RunChange
    | ClaimThread
    | FreeThread
    | ConsumePause
    | AdvanceEscalation
    | WidenRequest
    | RevokeGrant
    | FinishExecutions
    | ResolveExecution
    | EndStep
    | ResolveStep
    | DropStep
    | PutDocument
    | FanOut
    | ClaimDelivery
    | Settled
)
"""A change `StoreTx.change` writes: whether the row changed (blind ones: always `True`)."""
