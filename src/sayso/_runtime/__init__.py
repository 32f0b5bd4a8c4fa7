"""The runtime: `Sayso`, the one door every interface goes through, split by concept.

| module | holds |
|---|---|
| `_facade` | `Sayso`: the public verbs; resolves the caller and applies the access rule |
| `_turns` | a new message (superseding a paused run), resume, cancel |
| `_deciding` | checking and recording decisions, answering a whole pause, expiry, grant creation |
| `_step` | one engine step from store to store: an agent segment, then its pause or its end |
| `_tree` | the delegate tree: leaves, advancing delegates first, cancelling below |
| `_remote` | remote (A2A) delegates as proxy runs, and the `RemoteAgents` port they go through |
| `_leases` | which runtime holds a running run; taking over runs whose process died |
| `_workflows` | workflow runs (docs/guides/workflows.md): the run verbs that step them, and what is written when |
| `_workflow_host` | the workflows' engines, over the store (their persistence) and the runtime's agents (agent nodes) |
| `_events` | `request.opened` / `decided` / `expired` for listeners |
| `_outbox` | the same events from the store's outbox, claimed and settled by a webhook sender |
| `_audit` | the audit key, the exported head, verification |
| `_watch` | what changed for a principal, whichever process changed it (the live UI follows it) |
| `_kernel` | what the parts share (config, agents, store, clock, lease owner) |

Interfaces import from here only the names below: the facade and the records its verbs return.
"""

from .._store import (
    AuditPage,
    DeliveryStatus,
    InboxFilter,
    InboxPage,
    RemoteTask,
    RequestState,
    RunRecord,
    RunRequests,
    RunStatus,
    ThreadRecord,
    ThreadSummary,
    TranscriptEntry,
)
from ._events import EventListener, RequestEvent
from ._facade import DEFAULT_REMOTE_AGENTS, Sayso
from ._kernel import new_id
from ._outbox import OutboundEvent
from ._reading import PrincipalLike
from ._remote import RemoteAgents, RemoteAsk, RemoteOutcome, RemoteWire
from ._results import DecideResult, RunResult, request_json, request_state_json, rfc3339, run_json
from ._watch import Change, RequestClosed, RequestOpened, RunChanged, ThreadsChanged

__all__ = [
    "DEFAULT_REMOTE_AGENTS",
    "AuditPage",
    "DeliveryStatus",
    "Change",
    "DecideResult",
    "EventListener",
    "InboxFilter",
    "InboxPage",
    "OutboundEvent",
    "PrincipalLike",
    "RemoteAgents",
    "RemoteAsk",
    "RemoteOutcome",
    "RemoteTask",
    "RemoteWire",
    "RequestClosed",
    "RequestEvent",
    "RequestOpened",
    "RequestState",
    "RunRecord",
    "RunChanged",
    "RunResult",
    "RunRequests",
    "RunStatus",
    "Sayso",
    "ThreadRecord",
    "ThreadSummary",
    "ThreadsChanged",
    "TranscriptEntry",
    "new_id",
    "request_json",
    "request_state_json",
    "rfc3339",
    "run_json",
]
