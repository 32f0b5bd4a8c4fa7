"""The runtime: `Sayso`, the one door every interface goes through, split by concept.

| module | holds |
|---|---|
| `_facade` | `Sayso`: the public verbs; resolves the caller, applies the access rule, builds the call's `CallOptions` |
| `_verbs` | the verbs, a module each (start, decide, answer, resume, cancel, expire, recover); `rules`: their asks |
| `_cycle` | `Cycle`: the runner of each kind of run, carrying any paused run on (one plan), the runs below runs |
| `_runner` | the runner seam: `Runner`, `Runs` (what runners ask of the cycle), `CallOptions`, `Start`, `Resume` |
| `_agent_runs` | `AgentRunner`: an agent's run started, resumed and carried on as engine steps |
| `_workflows` | `WorkflowRunner`: a workflow's run stepped by its engine, and what is written when |
| `_remote` | `RemoteRunner`: remote (A2A) delegates as proxy runs |
| `_remote_port` | the `RemoteAgents` port remote delegates go through, and what it carries |
| `_step` | one engine step from store to store: an agent segment, then its pause or its end |
| `_workflow_host` | the workflows' engines, over the store (persistence) and the cycle's runs below (agent nodes) |
| `_tree` | the delegate tree: where a run stands, its leaves, starting a run below, closing a tree |
| `_leases` | which runtime holds a running run; taking one over; calls its dead holder cut off |
| `_heartbeat` | one timer that renews the leases of every run this runtime works on |
| `_auth` | who calls an HTTP interface: a bearer token becomes a `Principal`, for every edge |
| `_events` | `request.opened` / `decided` / `expired` for listeners |
| `_outbox` | the same events from the store's outbox, claimed and settled by a webhook sender |
| `_sender` | `OutboxSender`: a sender's lifecycle (wake, claim with a lease, send per key in order, settle, drain) |
| `_outage` | `Outage`: a background loop's failures logged once as they start, sparingly, then as they end |
| `_notices` | which destinations the outbox fans out to, and which `notify` targets a request's notice goes to |
| `_links` | mailed links: made, opened (never deciding) and decided through once, as the principal mailed |
| `_link_verbs` | `LinkVerbs`: the facade's link verbs, which load `_links` when first called |
| `_audit` | the audit key, the exported head, verification |
| `_watch` | what changed for a principal, whichever process changed it (the live UI follows it) |
| `_reader` | `Reader`: the reading verbs over the store alone, for callers that run nothing (`sayso audit`, `grants`) |
| `_listing` | who a caller is (`principal_of`), and which open requests they may list (`inbox_page`) |
| `_inbox` | `Inbox`: the open requests over the store's inbox port alone, no kernel or write side (`sayso inbox`) |
| `_kernel` | what the parts share (config, agents, store, clock, lease holder) |
| `_defaults` | the adapters the runtime falls back on (the A2A client, engines), filled by the package root |
| `_codecs` | `build_codecs`: what a server builds before it listens, which short commands build only on first use |

Interfaces import from here only the names below: the facade and the records its verbs return. They
resolve lazily (PEP 562, as the package root's): a command that only reads the store loads the reading
runtime and the store, not the engine, pydantic-ai or the cycle; `sayso inbox` only `Inbox` and the store's
inbox port.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._core.lazy import load_lazily

if TYPE_CHECKING:
    from .._store import (
        AuditPage,
        DeliveryStatus,
        GrantPage,
        InboxFilter,
        InboxPage,
        RemoteTask,
        RequestState,
        RunPage,
        RunQuery,
        RunRecord,
        RunRequests,
        RunStatus,
        ThreadPage,
        ThreadRecord,
        ThreadSummary,
        TranscriptEntry,
        TranscriptPage,
    )
    from ._auth import Authenticator, authenticate, authenticator
    from ._codecs import build_codecs
    from ._defaults import DEFAULT_REMOTE_AGENTS
    from ._events import EventData, EventListener, RequestEvent
    from ._facade import Sayso
    from ._inbox import Inbox
    from ._kernel import new_id
    from ._listing import PrincipalLike
    from ._outage import Outage
    from ._outbox import EscalationNotice, OutboundEvent, RunUpdate
    from ._reader import Reader
    from ._remote_port import RemoteAgents, RemoteAsk, RemoteCutOff, RemoteOutcome, RemoteUnreachable, RemoteWire
    from ._results import (
        ApproversJson,
        DecideResult,
        QuorumJson,
        RunResult,
        decide_json,
        request_json,
        request_state_json,
        rfc3339,
        routing_json,
        run_json,
        stats_json,
    )
    from ._sender import KeptClaim, OutboxSender
    from ._watch import Change, GrantsChanged, RequestClosed, RequestOpened, RequestVoted, RunChanged, ThreadsChanged

__all__ = [
    "DEFAULT_REMOTE_AGENTS",
    "AuditPage",
    "GrantPage",
    "Authenticator",
    "DeliveryStatus",
    "Change",
    "DecideResult",
    "EventData",
    "EventListener",
    "InboxFilter",
    "InboxPage",
    "EscalationNotice",
    "OutboundEvent",
    "KeptClaim",
    "Outage",
    "OutboxSender",
    "Inbox",
    "PrincipalLike",
    "Reader",
    "RemoteAgents",
    "RemoteAsk",
    "RemoteCutOff",
    "RemoteOutcome",
    "RemoteTask",
    "RemoteUnreachable",
    "RemoteWire",
    "RequestClosed",
    "RequestVoted",
    "RequestEvent",
    "RequestOpened",
    "RequestState",
    "RunPage",
    "RunQuery",
    "RunRecord",
    "RunChanged",
    "RunResult",
    "RunUpdate",
    "RunRequests",
    "RunStatus",
    "Sayso",
    "ThreadRecord",
    "ThreadPage",
    "TranscriptPage",
    "ThreadSummary",
    "ThreadsChanged",
    "GrantsChanged",
    "TranscriptEntry",
    "authenticate",
    "authenticator",
    "build_codecs",
    "new_id",
    "decide_json",
    "routing_json",
    "ApproversJson",
    "QuorumJson",
    "request_json",
    "request_state_json",
    "rfc3339",
    "run_json",
    "stats_json",
    "decide_json",
    "routing_json",
    "ApproversJson",
    "QuorumJson",
]

_LAZY: dict[str, str] = {
    "AuditPage": ".._store",
    "GrantPage": ".._store",
    "Authenticator": "._auth",
    "Change": "._watch",
    "DEFAULT_REMOTE_AGENTS": "._defaults",
    "DecideResult": "._results",
    "DeliveryStatus": ".._store",
    "EscalationNotice": "._outbox",
    "EventData": "._events",
    "EventListener": "._events",
    "InboxFilter": ".._store",
    "InboxPage": ".._store",
    "OutboundEvent": "._outbox",
    "Outage": "._outage",
    "KeptClaim": "._sender",
    "OutboxSender": "._sender",
    "PrincipalLike": "._listing",
    "Inbox": "._inbox",
    "Reader": "._reader",
    "RemoteAgents": "._remote_port",
    "RemoteAsk": "._remote_port",
    "RemoteCutOff": "._remote_port",
    "RemoteOutcome": "._remote_port",
    "RemoteTask": ".._store",
    "RemoteUnreachable": "._remote_port",
    "RemoteWire": "._remote_port",
    "RequestClosed": "._watch",
    "RequestVoted": "._watch",
    "RequestEvent": "._events",
    "RequestOpened": "._watch",
    "RequestState": ".._store",
    "RunChanged": "._watch",
    "RunPage": ".._store",
    "RunQuery": ".._store",
    "RunRecord": ".._store",
    "RunRequests": ".._store",
    "RunResult": "._results",
    "RunStatus": ".._store",
    "RunUpdate": "._outbox",
    "Sayso": "._facade",
    "ThreadRecord": ".._store",
    "ThreadPage": ".._store",
    "TranscriptPage": ".._store",
    "ThreadSummary": ".._store",
    "ThreadsChanged": "._watch",
    "GrantsChanged": "._watch",
    "TranscriptEntry": ".._store",
    "authenticate": "._auth",
    "authenticator": "._auth",
    "build_codecs": "._codecs",
    "new_id": "._kernel",
    "request_json": "._results",
    "request_state_json": "._results",
    "rfc3339": "._results",
    "run_json": "._results",
    "stats_json": "._results",
    "decide_json": "._results",
    "routing_json": "._results",
    "ApproversJson": "._results",
    "QuorumJson": "._results",
}


def __getattr__(name: str) -> Any:
    return load_lazily(globals(), _LAZY, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
