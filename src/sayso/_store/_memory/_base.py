"""The in-memory store's tables (rows as dataclasses of serialised values), their lookups, and undoable changes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from ..._core.audit import AuditHead, AuditRecord
from ..._core.decisions import DECISION_ADAPTER, DecidedBy, DecisionRecord, Via
from ..._core.grants import Grant
from ..._core.requests import CLIENT_TOOLS_ADAPTER, REQUEST_ADAPTER, Request
from ..._core.steps import StepKey, StepRecord
from ..._core.votes import VOTE_ADAPTER, Vote
from .._messages import decode_history
from .._ops import Document
from .._records import (
    GRANTS_READ_AT_ONCE,
    DeliveryStatus,
    LedgerStatus,
    OutboxKind,
    PauseStatus,
    RunRecord,
    ThreadRecord,
)

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage


@dataclass
class _Pause:
    run_id: str
    status: PauseStatus
    created_at: float = 0.0


@dataclass
class _Request:
    request_id: str
    pause_id: str
    position: int
    run_id: str
    thread_id: str
    agent_path: str
    kind: str
    status: Literal["open", "decided"]
    created_at: float
    expires_at: float | None
    body: bytes
    deciders: tuple[str, ...] | None = None
    """Who may decide a routed request (docs/guides/routing.md); `None`: unrouted."""
    escalate_at: float | None = None
    escalations: int = 0

    def load(self) -> Request:
        return REQUEST_ADAPTER.validate_json(self.body)


@dataclass(frozen=True)
class _Decision:
    body: bytes
    by: DecidedBy
    principal: str | None
    decided_at: float
    via: Via | None
    closed: bool


@dataclass
class _Execution:
    status: LedgerStatus
    result: bytes | None
    run_id: str
    started_at: float


@dataclass(frozen=True)
class _Batch:
    seq: int
    run_id: str
    body: bytes


@dataclass
class _Event:
    event_id: str
    kind: OutboxKind
    request_id: str
    created_at: float
    fanned_out: bool = False
    step: int | None = None
    seq: int = 0
    """Its position: one more than the last event's written (`_Tables._outbox_seq`)."""


@dataclass
class _Delivery:
    event: _Event
    hook: str
    status: DeliveryStatus = "pending"
    attempts: int = 0
    next_attempt_at: float = 0.0
    claimed_by: str | None = None
    claimed_until: float | None = None
    last_error: str | None = None
    finished_at: float | None = None


@dataclass(frozen=True)
class _Audit:
    seq: int
    body: str
    prev_hash: str
    hash: str
    mac: str | None


class _Tables:
    """The tables, as dicts of serialised rows; read and changed under the store's lock only."""

    def __init__(self) -> None:
        self._threads: dict[str, ThreadRecord] = {}
        self._runs: dict[str, RunRecord] = {}
        """Runs with their client tools held as JSON in `_tools`, so the stored record shares nothing."""
        self._tools: dict[str, bytes] = {}
        self._pauses: dict[str, _Pause] = {}
        self._requests: dict[str, _Request] = {}
        self._decisions: dict[str, _Decision] = {}
        self._executions: dict[str, _Execution] = {}
        self._messages: dict[str, list[_Batch]] = {}
        self._grants: dict[str, Grant] = {}
        self._audit: list[_Audit] = []
        self._audit_head: AuditHead | None = None
        self._documents: dict[tuple[str, str], Document] = {}
        self._outbox: list[_Event] = []
        self._outbox_seq = 0
        """The last position given to an event; undone with its transaction, so positions leave no gap."""
        self._deliveries: dict[str, _Delivery] = {}
        self._votes: dict[tuple[str, int], bytes] = {}
        """Votes on routed requests by request id and position, as JSON."""
        self._steps: dict[StepKey, StepRecord] = {}

    def _run(self, run_id: str) -> RunRecord:
        tools = self._tools.get(run_id)
        return replace(self._runs[run_id], client_tools=CLIENT_TOOLS_ADAPTER.validate_json(tools) if tools else ())

    def _votes_of(self, request_id: str) -> tuple[Vote, ...]:
        found = sorted((seq, body) for (rid, seq), body in self._votes.items() if rid == request_id)
        return tuple(VOTE_ADAPTER.validate_json(body) for _, body in found)

    def _waits(self, row: _Request) -> bool:
        return row.status == "open" and self._pauses[row.pause_id].status == "open"

    def _decided(self, request_ids: Iterable[str]) -> dict[str, DecisionRecord]:
        found: dict[str, DecisionRecord] = {}
        for request_id in request_ids:
            d = self._decisions.get(request_id)
            if d is not None:
                found[request_id] = DecisionRecord(
                    request_id=request_id,
                    decision=DECISION_ADAPTER.validate_json(d.body),
                    by=d.by,
                    principal=d.principal,
                    decided_at=d.decided_at,
                    via=d.via,
                    closed=d.closed,
                )
        return found

    def _active_grants(self, principal: str | None, now: float) -> list[Grant] | None:
        if principal is None:
            return None
        found = [
            g
            for g in self._grants.values()
            if g.principal == principal and g.revoked_at is None and (g.expires_at is None or g.expires_at > now)
        ]
        return None if len(found) > GRANTS_READ_AT_ONCE else found


def _load(batches: Iterable[_Batch]) -> list[ModelMessage]:
    return decode_history([b.body for b in batches])


def _audit_record(row: _Audit) -> AuditRecord:
    return AuditRecord(seq=row.seq, body=json.loads(row.body), prev_hash=row.prev_hash, hash=row.hash, mac=row.mac)


_MISSING: Any = object()


class Duplicate(Exception):
    """A key inserted twice: the memory store's integrity error."""


class _Changes:
    """Changes to the tables that can be undone, newest first: what makes a memory transaction one."""

    def __init__(self) -> None:
        self.undo: list[Callable[[], None]] = []

    def rollback(self) -> None:
        """Undo every change made so far, newest first."""
        while self.undo:
            self.undo.pop()()

    def _put(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        old = table.get(key, _MISSING)
        table[key] = value
        self.undo.append(lambda: table.pop(key, None) if old is _MISSING else table.__setitem__(key, old))

    def _insert(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        if key in table:
            raise Duplicate(f"{key!r} is stored already")
        self._put(table, key, value)

    def _pop(self, table: dict[Any, Any], key: Any) -> None:
        old = table.pop(key)
        self.undo.append(lambda: table.__setitem__(key, old))

    def _set(self, row: Any, **values: Any) -> None:
        old = {name: getattr(row, name) for name in values}
        for name, value in values.items():
            setattr(row, name, value)

        def restore() -> None:
            for name, value in old.items():
                setattr(row, name, value)

        self.undo.append(restore)

    def _append(self, items: list[Any], item: Any) -> None:
        items.append(item)
        self.undo.append(items.pop)
