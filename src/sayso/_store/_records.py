"""What the store hands out and takes in: frozen dataclasses, free of SQL, the same for every backend.

Every verb of the `RunStore` port returns one of these (or a core record such as `Request`,
`DecisionRecord`, `Grant`, `AuditRecord`), never a positional tuple, so a call site reads
`state.decisions`, not `state[3]`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import with_config

from .._core.audit import AuditRecord
from .._core.audit_events import AuditEvent, ShownDecision
from .._core.decisions import DecisionRecord
from .._core.grants import Grant
from .._core.pauses import PauseState as PauseState
from .._core.pauses import PauseStatus as PauseStatus
from .._core.pauses import RequestState as RequestState
from .._core.requests import DEFERRED, ClientTool, Request, RequestKind
from .._core.votes import Vote

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from .._core.deciding import Verdict

RunStatus: TypeAlias = Literal["running", "paused", "completed", "failed", "cancelled"]


@dataclass(frozen=True, kw_only=True)
class ThreadRecord:
    """A conversation, owned by the principal that started it."""

    thread_id: str
    owner: str
    """The principal the thread belongs to."""
    agent: str
    """The top-level agent the thread talks to."""
    active_run_id: str | None
    """The run that is running or paused on this thread, if any: one at a time."""
    created_at: float
    """Seconds since the epoch when the thread's first run started."""
    parent_run_id: str | None = None
    """For a delegate's thread (a workflow agent node's too): the run whose call started it. Who may read that
    run reads this thread (`Reading.thread`): its agent is the delegate, not the chat's agent approvers approve for."""


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One turn of a thread; a resume continues the same run."""

    run_id: str
    """Unguessable id of the run."""
    thread_id: str
    """The thread the run belongs to."""
    agent: str
    """The agent that runs (for a delegate, the delegate agent)."""
    status: RunStatus
    """Where the run stands."""
    prompt: str | None
    """The user message that started the run, kept so a crashed run can be carried on."""
    client_tools: tuple[ClientTool, ...]
    """Tools the client declared for this run, offered again when it resumes."""
    principal: str | None
    """The principal the run acts for."""
    resume_pause_id: str | None
    """The pause whose decisions the current segment applies."""
    pause_id: str | None
    """The open pause, while the run is paused."""
    output: str | None
    """The agent's final answer, once completed."""
    error: str | None
    """Why the run failed, once failed."""
    lease_holder: str | None
    """The process carrying the run on while it is running."""
    lease_expires_at: float | None
    """When the lease lapses unless renewed; after that another process may take the run over."""
    created_at: float
    """Seconds since the epoch when the run started."""
    updated_at: float
    """Seconds since the epoch of the last change to the run."""
    revision: int
    """Bumped by every change to the run's row."""
    parent_run_id: str | None = None
    """For a delegate's run: the run whose tool call handed it the work."""
    parent_call_id: str | None = None
    """For a delegate's run: the parent's tool call that handed the work down."""
    agent_path: str | None = None
    """`coordinator/analyst` for a delegate; `None` means the agent itself is the top."""

    @property
    def path(self) -> str:
        """The agent path, defaulting to the agent's own name at the top level."""
        return self.agent_path or self.agent


@dataclass(frozen=True, kw_only=True)
class ExecutionRecord:
    """The ledger entry that makes an approved call run at most once."""

    request_id: str
    """The approval request whose call this is."""
    status: LedgerStatus
    """`executing` from just before the call starts; `done` once its result is stored; `unknown` when its
    process stopped while it ran and nobody can say what it did (it is never run again)."""
    result: bytes | None
    """The call's result as JSON once done (for `unknown`, what the model read instead)."""


LedgerStatus: TypeAlias = Literal["executing", "done", "unknown"]
"""Where an approved call stands in the at-most-once ledger."""


@dataclass(frozen=True, kw_only=True)
class StuckExecution:
    """A ledger entry still `executing` although no live process is running its call."""

    request_id: str
    run_id: str
    started_at: float


@dataclass(frozen=True, kw_only=True)
class ExecutionResult:
    """The result of an approved call, written to its ledger entry with the run's next save."""

    request_id: str
    """The approval request whose call ran."""
    result: bytes
    """What the call returned, as JSON."""
    audit: AuditEvent
    """The audit record of the call (the arguments it really ran with); appended in the same commit."""
    status: Literal["done", "unknown"] = "done"
    """`unknown` when the call may or may not have run (the segment that ran it failed or was cut off)."""


@dataclass(frozen=True, kw_only=True)
class RequestWithRun(RequestState):
    """A request's state together with the run that raised it, read in one transaction."""

    run: RunRecord
    """The run that raised the request (for a delegate's request, the delegate's run)."""


@dataclass(frozen=True, kw_only=True)
class Claim:
    """A consumed pause: the run as this process now owns it, and the thread's history if asked for."""

    run: RunRecord
    """The run, running again under this process's lease."""
    history: list[ModelMessage] | None
    """The thread's whole history, read in the same transaction; `None` when not asked for."""
    grants: list[Grant] | None = None
    """The active grants of the principal named by `grants_of`, read in the same transaction; `None` when
    not asked for, or when there are too many to read at once (the gate then looks them up call by call)."""
    workflow_state: bytes | None = None
    """A workflow run's saved state, read in the same transaction when asked for (`None` otherwise)."""


GRANTS_READ_AT_ONCE = 200
"""At most this many of a principal's grants ride a run's first read; past that the gate looks them up per call."""


@dataclass(frozen=True, kw_only=True)
class RunStart:
    """A run to start, as every way of starting one names it (`begin_run`, `start_run`): written once, here."""

    thread_id: str
    owner: str
    """Who the run (and a new thread) belongs to."""
    agent: str
    """The run's agent (or workflow); on an existing thread `begin_run` takes the thread's."""
    run_id: str
    prompt: str
    client_tools: Sequence[ClientTool] = ()
    lease_holder: str
    """The runtime that runs it, holding its lease from the start."""
    lease_expires_at: float
    now: float
    parent_run_id: str | None = None
    """The run whose call started this one (a delegate's, an agent node's); `None` for a top-level run."""
    parent_call_id: str | None = None
    agent_path: str | None = None

    def run(self, *, agent: str | None = None, resume_pause_id: str | None = None) -> RunRecord:
        """The run as it starts: running under the lease, revision 0 (of `agent` when the thread says so)."""
        return RunRecord(
            run_id=self.run_id,
            thread_id=self.thread_id,
            agent=agent or self.agent,
            status="running",
            prompt=self.prompt,
            client_tools=tuple(self.client_tools),
            principal=self.owner,
            resume_pause_id=resume_pause_id,
            pause_id=None,
            output=None,
            error=None,
            lease_holder=self.lease_holder,
            lease_expires_at=self.lease_expires_at,
            created_at=self.now,
            updated_at=self.now,
            revision=0,
            parent_run_id=self.parent_run_id,
            parent_call_id=self.parent_call_id,
            agent_path=self.agent_path,
        )


@dataclass(frozen=True, kw_only=True)
class BegunRun:
    """What a run's first transaction found and did (`RunStore.begin_run`)."""

    thread: ThreadRecord | None
    """The thread as it was before the run, or `None` when the run created it."""
    run: RunRecord | None
    """The run, started and holding the thread; `None` when the thread has an active run (nothing was written)."""
    history: list[ModelMessage]
    """The thread's history before the run (empty for a new thread, or when nothing was started)."""
    grants: list[Grant] | None
    """The principal's active grants when `grants_of` was given (see `Claim.grants`)."""


@dataclass(frozen=True, kw_only=True)
class Decided:
    """What `RunStore.decide_request` read and wrote."""

    found: RequestWithRun
    """The request, its run and its decision, as read before the verdict."""
    state: PauseState
    """The request's pause, as read before the verdict."""
    verdict: Verdict
    """The verdict that was written."""
    claim: Claim | None
    """The consumed pause and the run as this process now owns it, when the verdict resumed it."""


@dataclass(frozen=True, kw_only=True)
class RunRequests:
    """Every request a run ever raised, in order, with the decisions taken."""

    requests: list[Request]
    """The requests, oldest first (in the order they were raised within a pause)."""
    decisions: dict[str, DecisionRecord]
    """The decisions taken, by request id."""


@with_config(DEFERRED)
@dataclass(frozen=True, kw_only=True)
class RemoteTask:
    """The remote A2A task a proxy run (a remote delegate) stands for."""

    url: str
    """The remote agent's A2A endpoint."""
    task_id: str
    """The task's id on the remote side."""
    context_id: str
    """The remote conversation the task belongs to."""


@dataclass(frozen=True, kw_only=True)
class InboxFilter:
    """Which open requests to list."""

    agent: str | None = None
    """Only requests asked by this agent or on its behalf (any agent on the request's path)."""
    kind: RequestKind | None = None
    """Only requests of this kind."""
    thread_id: str | None = None
    """Only requests of this thread."""
    older_than: float | None = None
    """Only requests opened at least this many seconds ago."""
    newer_than: float | None = None
    """Only requests opened at most this many seconds ago."""
    request_ids: Sequence[str] | None = None
    """Only these requests (a watch asks which of the requests it heard of its principal's inbox lists)."""
    owner: str | None = None
    """Visibility: requests on threads of this owner ..."""
    approved_agents: Sequence[str] | None = None
    """... or whose root agent is one of these; both `None` (and no `every_agent`) means every request is visible."""
    every_agent: bool = False
    """... or on any thread and agent at all (an approver for `*`), a routed request still only to its deciders."""
    decider: str | None = None
    """With any of them: a routed request (its rule names approvers) is listed only to a principal who may decide it."""


@dataclass(frozen=True, kw_only=True)
class InboxPage:
    """One page of open requests, oldest first, and the cursor of the next page."""

    requests: list[Request]
    """The requests of this page."""
    next_cursor: str | None
    """Pass it back for the next page; `None` on the last page."""
    total: int
    """How many requests the filter lists across every page: what is really open for the caller."""
    votes: Mapping[str, tuple[Vote, ...]] = field(default_factory=dict)
    """The votes cast on this page's routed requests, by request id (docs/guides/routing.md#quorum)."""


@dataclass(frozen=True, kw_only=True)
class ThreadSummary:
    """A thread as listed for its owner."""

    thread_id: str
    agent: str
    """The top-level agent the thread talks to."""
    owner: str
    """The principal the thread belongs to."""
    active_run_id: str | None
    """The run running or paused on the thread, if any."""
    created_at: float
    """Seconds since the epoch when the thread started."""
    title: str | None
    """The first user message, shortened."""


@dataclass(frozen=True, kw_only=True)
class ThreadPage:
    """One page of threads, newest first, and the cursor of the next page."""

    threads: list[ThreadSummary]
    """The threads of this page."""
    next_cursor: str | None
    """Pass it back for the next page; `None` on the last page."""


EntryRole: TypeAlias = Literal["user", "assistant", "tool_call", "tool_result", "decision", "error"]
"""Who speaks in a transcript line: the person, the agent, a tool call, its result, the decision a call
waited on, or a run's failure."""


@dataclass(frozen=True, kw_only=True)
class TranscriptEntry:
    """One line of a thread as a person reads it."""

    seq: int
    """Position of the stored batch this entry came from; later batches have larger numbers."""
    run_id: str
    """The run that added the entry."""
    role: EntryRole
    """Who speaks: the user, the assistant, a tool call or its result."""
    text: str | None = None
    """What was said (for a tool result, the result as the model read it)."""
    tool_name: str | None = None
    """The tool called, for tool calls and results."""
    tool_call_id: str | None = None
    """The model's id of the call, for tool calls and results."""
    args: Any = None
    """The arguments of a tool call."""
    decision: ShownDecision | None = None
    """For a decision line: what was decided, by whom, through which interface and with what (scope,
    reason, edits field by field, the answer given, the grant that allowed the call), redacted as
    the agent's `redact` says."""
    at: float | None = None
    """Seconds since the epoch when it was said, decided or failed, when known."""
    pending: bool = False
    """`True` for the message of a run still working on it, not in the message log yet (a run's messages are
    stored when it pauses or ends): its `seq` is the stored batch it follows, and a later read shows the stored
    message in its place."""


@dataclass(frozen=True, kw_only=True)
class TranscriptPage:
    """A thread's newest transcript lines before a cursor, oldest first, and the cursor of the lines before them."""

    entries: list[TranscriptEntry]
    """This page's lines, oldest first."""
    next_cursor: str | None
    """Pass it back for the lines before this page's; `None` when it starts at the thread's first line."""
    title: str | None
    """The thread's title, as the thread list shows it (its first message, shortened)."""


@dataclass(frozen=True, kw_only=True)
class GrantPage:
    """One page of active grants, newest first, and the cursor of the next page."""

    grants: list[Grant]
    next_cursor: str | None
    """Pass it back for the next page; `None` on the last page."""


@dataclass(frozen=True, kw_only=True)
class AuditPage:
    """One page of the audit log and the cursor of the next page."""

    records: list[AuditRecord]
    """The records of this page, in the order asked for."""
    next_cursor: int | None
    """The `seq` to continue after; `None` on the last page."""
    total: int
    """How many records the whole log holds."""


OutboxKind: TypeAlias = Literal[
    "request.opened", "request.decided", "request.voted", "request.escalated", "run.updated"
]
"""What an outbox event reports: a request was opened (saved with its pause), decided, voted on (one vote
toward a quorum, the event's `step` its position among the request's votes) or escalated (one step of its
rule's `escalate:`, the event's `step`), or a top-level run paused, ended or was cancelled (its `request_id`
is then the run's id: what A2A push notifications report)."""

REQUEST_KINDS: tuple[OutboxKind, ...] = ("request.opened", "request.decided", "request.voted")
"""The events webhooks report."""


@dataclass(frozen=True, kw_only=True)
class RequestFact:
    """One approval request raised in a window and what became of it: the row statistics are computed from."""

    request_id: str
    tool_name: str
    rule: str | None
    created_at: float
    escalations: int
    """How many escalation steps fired while it waited."""
    decision: str | None
    """The decision's kind (`approve`, `reject`, `expired`...); `None` while open or closed undecided."""
    by: str | None
    principal: str | None
    decided_at: float | None
    closed: bool
    """Closed unanswered (`DecisionRecord.closed`): `by` and `principal` say who went on without it."""


@dataclass(frozen=True, kw_only=True)
class DueEscalation:
    """An open request whose next escalation step is due: `step` steps fired before it."""

    request_id: str
    step: int
    due_at: float


DeliveryStatus: TypeAlias = Literal["pending", "delivered", "skipped", "failed"]
"""Where one event's delivery to one webhook stands."""


@dataclass(frozen=True, kw_only=True)
class PendingDelivery:
    """One event claimed for delivery to one webhook."""

    delivery_id: str
    """Stable across retries and senders (derived from the event and the hook): receivers drop duplicates by it."""
    event_id: str
    hook: str
    """The webhook's key (the sender's name for it; every replica with the same config uses the same)."""
    kind: OutboxKind
    request_id: str
    created_at: float
    """When the change the event reports was committed."""
    attempts: int
    """Attempts made before this one."""
    step: int | None = None
    """`request.escalated`: which step of the request's escalation (0 for the first) fired; `request.voted`: which
    of the request's votes (0 for the first) was cast."""


@dataclass(frozen=True, kw_only=True)
class FeedEvent:
    """One outbox event as a watch reads it: where it stands in the outbox, what it reports and about what."""

    seq: int
    """Its position: later commits' events mostly stand further on (see `WatchPort.events_after`)."""
    kind: OutboxKind
    request_id: str
    """The request it is about (a run's id for `run.updated`)."""
    created_at: float
    step: int | None = None
    """As `PendingDelivery.step`: the escalation step that fired, or the vote's position."""


@dataclass(frozen=True, kw_only=True)
class EventsPage:
    """The outbox's events after a position, oldest first, and the newest event's position."""

    events: list[FeedEvent]
    head: int
    """The position of the newest event stored (0 when the outbox is empty)."""
