"""The in-memory store's state and the steps several verbs share; each runs under the lock, inside one verb."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import anyio
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from ..._core.audit import AuditHead, AuditRecord, canonical_json, seal
from ..._core.audit_events import AuditEvent
from ..._core.decisions import DECISION_ADAPTER, DecidedBy, DecisionRecord, Via
from ..._core.grants import Grant
from ..._core.requests import CLIENT_TOOLS_ADAPTER, REQUEST_ADAPTER, Request
from ...exceptions import RunConflict, StoreError
from .._port import RunStore
from .._records import (
    GRANTS_READ_AT_ONCE,
    DeliveryStatus,
    ExecutionResult,
    LedgerStatus,
    OutboxKind,
    PauseStatus,
    RemoteTask,
    RunRecord,
    ThreadRecord,
)


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

    def load(self) -> Request:
        return REQUEST_ADAPTER.validate_json(self.body)


@dataclass(frozen=True)
class _Decision:
    body: bytes
    by: DecidedBy
    principal: str | None
    decided_at: float
    via: Via | None


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


class _MemoryBase(RunStore):
    """The tables, as dicts of serialised rows, and one lock that makes each verb atomic."""

    def __init__(self) -> None:
        self._lock = anyio.Lock()
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
        self._remote: dict[str, RemoteTask] = {}
        self._marks: dict[tuple[str, str], str] = {}
        self._outbox: list[_Event] = []
        self._deliveries: dict[str, _Delivery] = {}
        self._workflow_states: dict[str, bytes] = {}

    async def ping(self) -> None:
        return None

    def _run(self, run_id: str) -> RunRecord:
        tools = self._tools.get(run_id)
        return replace(self._runs[run_id], client_tools=CLIENT_TOOLS_ADAPTER.validate_json(tools) if tools else ())

    def _put_run(self, run: RunRecord) -> None:
        if run.client_tools:
            self._tools[run.run_id] = CLIENT_TOOLS_ADAPTER.dump_json(run.client_tools)
        self._runs[run.run_id] = replace(run, client_tools=())

    def _update_run(self, run_id: str, now: float, **values: Any) -> None:
        run = self._runs.get(run_id)
        if run is not None:
            self._runs[run_id] = replace(run, **values, updated_at=now, revision=run.revision + 1)

    def _own(self, run_id: str, owner: str) -> None:
        run = self._runs.get(run_id)
        if run is None or run.lease_owner != owner:
            raise RunConflict(run_id, "this process lost its lease on the run; another process carries it on")

    def _free_thread(self, run: RunRecord) -> None:
        thread = self._threads.get(run.thread_id)
        if thread is not None and thread.active_run_id == run.run_id:
            self._threads[run.thread_id] = replace(thread, active_run_id=None)

    def _is_open(self, pause_id: str) -> bool:
        pause = self._pauses.get(pause_id)
        return pause is not None and pause.status == "open"

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
                )
        return found

    def _insert_decisions(self, records: Sequence[DecisionRecord], audit: Sequence[AuditEvent]) -> None:
        self._append_audit(audit)
        for d in records:
            self._decisions[d.request_id] = _Decision(
                body=DECISION_ADAPTER.dump_json(d.decision),
                by=d.by,
                principal=d.principal,
                decided_at=d.decided_at,
                via=d.via,
            )
            row = self._requests.get(d.request_id)
            if row is not None:
                row.status = "decided"
        self._outbox_events(
            "request.decided", [d.request_id for d in records], now=max((d.decided_at for d in records), default=0.0)
        )

    def _outbox_events(self, kind: OutboxKind, request_ids: Sequence[str], *, now: float) -> None:
        for request_id in request_ids:
            self._outbox.append(
                _Event(event_id=f"evt_{secrets.token_urlsafe(12)}", kind=kind, request_id=request_id, created_at=now)
            )

    def _check_new_grants(self, grants: Sequence[Grant]) -> None:
        if any(g.grant_id in self._grants for g in grants):
            raise StoreError("a grant with this id is stored already")

    def _finish_executions(self, executions: Sequence[ExecutionResult]) -> None:
        self._append_audit([done.audit for done in executions])
        for done in executions:
            self._finish(done.request_id, done.result, done.status)

    def _finish(self, request_id: str, result: bytes, status: Literal["done", "unknown"] = "done") -> None:
        entry = self._executions.get(request_id)
        if entry is not None:
            entry.status, entry.result = status, result

    def _append_messages(self, run: RunRecord, new: Sequence[ModelMessage]) -> None:
        if not new:
            return
        batches = self._messages.setdefault(run.thread_id, [])
        seq = batches[-1].seq + 1 if batches else 1
        batches.append(_Batch(seq=seq, run_id=run.run_id, body=ModelMessagesTypeAdapter.dump_json(list(new))))

    def _active_grants(self, principal: str | None, now: float) -> list[Grant] | None:
        if principal is None:
            return None
        found = [
            g
            for g in self._grants.values()
            if g.principal == principal and g.revoked_at is None and (g.expires_at is None or g.expires_at > now)
        ]
        return None if len(found) > GRANTS_READ_AT_ONCE else found

    def _append_audit(self, bodies: Sequence[AuditEvent]) -> None:
        """Extend the chain after its head, or raise before changing anything (a verb appends its audit first)."""
        records, head = seal(bodies, after=self._audit_head, key=self.audit_key)
        for r in records:
            self._audit.append(
                _Audit(seq=r.seq, body=canonical_json(r.body), prev_hash=r.prev_hash, hash=r.hash, mac=r.mac)
            )
        if records:
            self._audit_head = head
            self._announce_head(head)


def _load(batches: Iterable[_Batch]) -> list[ModelMessage]:
    messages: list[ModelMessage] = []
    for b in batches:
        messages.extend(ModelMessagesTypeAdapter.validate_json(b.body))
    return messages


def _audit_record(row: _Audit) -> AuditRecord:
    return AuditRecord(seq=row.seq, body=json.loads(row.body), prev_hash=row.prev_hash, hash=row.hash, mac=row.mac)
