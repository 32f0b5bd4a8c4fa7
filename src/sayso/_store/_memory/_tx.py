"""The memory store's transactions: `MemoryTx`, the primitives over its tables, undone when the work raises.

`_MemoryBase` runs each transaction under one lock, so a verb is atomic. Each primitive changes
the tables at once and keeps how to undo the change, so a transaction that raises leaves nothing
behind, as a database's rollback would. Inserting a key that exists raises `Duplicate`, the
memory store's integrity error (a verb's `race` answers it).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Literal, TypeVar, assert_never

import anyio

from ..._core.audit import AuditHead, seal
from ..._core.audit_events import AuditEvent
from ..._core.decisions import DECISION_ADAPTER, DecisionRecord
from ..._core.grants import Grant
from ..._core.requests import CLIENT_TOOLS_ADAPTER, REQUEST_ADAPTER, Request, escalation_due
from ..._core.steps import StepKey, StepRecord
from ..._core.votes import VOTE_ADAPTER, Vote
from ...exceptions import StoreError
from .._messages import encode_messages
from .._ops import (
    CancelRun,
    ClaimRun,
    Document,
    DropStep,
    EndRun,
    EndStep,
    PauseRun,
    ReleaseHold,
    RenewLease,
    ReopenRun,
    ResolveStep,
    RunChange,
    TakeOver,
)
from .._primitives import Deciding, TxStore, TxWork
from .._records import (
    DueEscalation,
    ExecutionRecord,
    ExecutionResult,
    OutboxKind,
    PauseState,
    RequestWithRun,
    RunRecord,
    ThreadRecord,
)
from ._base import Duplicate, _Audit, _Batch, _Decision, _Event, _Execution, _Pause, _Request, _Tables
from ._outbox import MemoryOutboxTx

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

T = TypeVar("T")
R = TypeVar("R")


class MemoryTx(MemoryOutboxTx):
    """The primitives over a memory store's tables, under its lock, with an undo log; the outbox's from its base."""

    s: _MemoryBase

    def __init__(self, store: _MemoryBase) -> None:
        super().__init__()
        self.s = store
        self.audit_head: AuditHead | None = None
        """The chain's head after this transaction's appends, announced once it commits."""

    # rows by key

    async def _thread(self, thread_id: str) -> ThreadRecord | None:
        return self.s._threads.get(thread_id)

    async def _run(self, run_id: str) -> RunRecord | None:
        return self.s._run(run_id) if run_id in self.s._runs else None

    async def _decision(self, request_id: str) -> DecisionRecord | None:
        return self.s._decided([request_id]).get(request_id)

    async def _grant(self, grant_id: str) -> Grant | None:
        return self.s._grants.get(grant_id)

    async def _step(self, key: StepKey) -> StepRecord | None:
        return self.s._steps.get(key)

    async def _document(self, namespace: str, key: str) -> Document | None:
        return self.s._documents.get((namespace, key))

    # threads

    async def _claim_thread(self, thread_id: str, run_id: str, *, expect: str | None, again: bool = False) -> bool:
        thread = self.s._threads.get(thread_id)
        if thread is None:
            return False
        if not (thread.active_run_id in (None, run_id) if again else thread.active_run_id == expect):
            return False
        self._put(self.s._threads, thread_id, replace(thread, active_run_id=run_id))
        return True

    async def _free_thread(self, thread_id: str, run_id: str) -> None:
        thread = self.s._threads.get(thread_id)
        if thread is not None and thread.active_run_id == run_id:
            self._put(self.s._threads, thread_id, replace(thread, active_run_id=None))

    # runs

    async def _add_run(self, run: RunRecord, *, thread: ThreadRecord | None = None) -> None:
        if thread is not None:
            self._insert(self.s._threads, thread.thread_id, thread)
        if run.run_id in self.s._runs:
            raise Duplicate(f"run {run.run_id!r} is stored already")
        if run.client_tools:  # kept as JSON, so the stored record shares nothing with the caller's
            self._put(self.s._tools, run.run_id, CLIENT_TOOLS_ADAPTER.dump_json(run.client_tools))
        self._put(self.s._runs, run.run_id, replace(run, client_tools=()))

    async def _update_run(self, change: RunChange) -> bool:
        run_id = change.run_id
        run = self.s._runs.get(run_id)
        if run is None:
            return isinstance(change, ClaimRun)
        match change:
            case PauseRun(pause_id=pause_id, holder=holder, now=now, hold_until=hold_until, keeper=kept_by):
                ok = run.lease_holder == holder
                keeper = (kept_by or holder) if hold_until is not None else None
                changed = replace(
                    run, status="paused", pause_id=pause_id, lease_holder=keeper, lease_expires_at=hold_until
                )
            case EndRun(status=status, output=output, error=error, holder=holder, now=now):
                ok = run.lease_holder == holder
                changed = replace(run, status=status, output=output, error=error, pause_id=None)
                changed = replace(changed, lease_holder=None, lease_expires_at=None)
            case ClaimRun(pause_id=pause_id, holder=holder, until=until, now=now):
                ok = True
                changed = replace(run, status="running", pause_id=None, resume_pause_id=pause_id)
                changed = replace(changed, lease_holder=holder, lease_expires_at=until)
            case CancelRun(now=now, only_paused=only_paused):
                ok = run.status == "paused" or not only_paused
                changed = replace(run, status="cancelled", pause_id=None)
            case RenewLease(holder=holder, until=until):
                if run.lease_holder != holder or run.status not in ("running", "paused"):
                    return False
                self._put(self.s._runs, run_id, replace(run, lease_expires_at=until))  # no bump: nothing changed
                return True
            case ReleaseHold(holder=holder):
                if run.lease_holder != holder or run.status != "paused":
                    return False
                self._put(self.s._runs, run_id, replace(run, lease_holder=None, lease_expires_at=None))
                return True
            case TakeOver(holder=holder, until=until, now=now, dead=dead):
                lapsed = run.lease_expires_at is not None and run.lease_expires_at < now
                ok = run.status == "running" and (lapsed or (dead is not None and run.lease_holder == dead))
                changed = replace(run, lease_holder=holder, lease_expires_at=until)
            case ReopenRun(holder=holder, until=until, now=now):
                ok = run.status == "failed"
                changed = replace(run, status="running", error=None, lease_holder=holder, lease_expires_at=until)
            case _:
                assert_never(change)
        if ok:
            self._put(self.s._runs, run_id, replace(changed, updated_at=now, revision=run.revision + 1))
        return ok

    # the message log

    async def _append_messages(self, run: RunRecord, new: Sequence[ModelMessage]) -> None:
        if not new:
            return
        if run.thread_id not in self.s._messages:
            self._put(self.s._messages, run.thread_id, [])
        batches = self.s._messages[run.thread_id]
        seq = batches[-1].seq + 1 if batches else 1
        self._append(batches, _Batch(seq=seq, run_id=run.run_id, body=encode_messages(new)))

    async def history(self, thread_id: str) -> list[bytes]:
        return [b.body for b in self.s._messages.get(thread_id, ())]

    # pauses, requests, decisions

    async def _add_pause(self, pause_id: str, run_id: str, requests: Sequence[Request], now: float) -> None:
        self._insert(self.s._pauses, pause_id, _Pause(run_id=run_id, status="open", created_at=now))
        for position, r in enumerate(requests):
            row = _Request(
                request_id=r.request_id,
                pause_id=pause_id,
                position=position,
                run_id=r.run_id,
                thread_id=r.thread_id,
                agent_path=r.agent_path,
                kind=r.kind,
                status="open",
                created_at=r.created_at,
                expires_at=r.expires_at,
                body=REQUEST_ADAPTER.dump_json(r),
                deciders=r.routing.deciders(r.principal) if r.routing is not None else None,
                escalate_at=escalation_due(r, 0),
            )
            self._insert(self.s._requests, r.request_id, row)

    async def _consume_pause(self, pause_id: str) -> bool:
        pause = self.s._pauses.get(pause_id)
        if pause is None or pause.status != "open":
            return False
        self._set(pause, status="consumed")
        return True

    async def deciding(self, request_id: str) -> Deciding | None:
        s = self.s
        row = s._requests.get(request_id)
        if row is None or row.run_id not in s._runs:
            return None
        found = RequestWithRun(
            request=row.load(),
            pause_status=s._pauses[row.pause_id].status,
            decision=s._decided([request_id]).get(request_id),
            run=s._run(row.run_id),
        )
        rows = sorted((r for r in s._requests.values() if r.pause_id == row.pause_id), key=lambda r: r.position)
        state = PauseState(
            run_id=row.run_id,
            status=found.pause_status,
            requests=[r.load() for r in rows],
            decisions=s._decided(r.request_id for r in rows),
        )
        return Deciding(found=found, state=state, pause_id=row.pause_id)

    async def _add_decisions(self, records: Sequence[DecisionRecord]) -> None:
        for d in records:
            decision = _Decision(
                body=DECISION_ADAPTER.dump_json(d.decision),
                by=d.by,
                principal=d.principal,
                decided_at=d.decided_at,
                via=d.via,
                closed=d.closed,
            )
            self._insert(self.s._decisions, d.request_id, decision)
            row = self.s._requests.get(d.request_id)
            if row is not None:
                self._set(row, status="decided")

    async def votes(self, request_id: str) -> list[Vote]:
        return list(self.s._votes_of(request_id))

    async def _add_vote(self, vote: Vote, *, seq: int) -> None:
        self._insert(self.s._votes, (vote.request_id, seq), VOTE_ADAPTER.dump_json(vote))

    async def _add_events(
        self, kind: OutboxKind, request_ids: Sequence[str], now: float, *, step: int | None = None
    ) -> None:
        for request_id in request_ids:
            event_id = f"evt_{secrets.token_urlsafe(12)}"
            self._set(self.s, _outbox_seq=self.s._outbox_seq + 1)
            event = _Event(
                event_id=event_id, kind=kind, request_id=request_id, created_at=now, step=step, seq=self.s._outbox_seq
            )
            self._append(self.s._outbox, event)

    # escalation timers

    async def due_escalations(self, now: float, limit: int) -> list[DueEscalation]:
        s = self.s
        due = [
            DueEscalation(request_id=r.request_id, step=r.escalations, due_at=r.escalate_at)
            for r in s._requests.values()
            if r.status == "open"
            and r.escalate_at is not None
            and r.escalate_at <= now
            and s._pauses[r.pause_id].status == "open"
        ]
        return sorted(due, key=lambda d: d.due_at)[:limit]

    async def _advance_escalation(self, request_id: str, step: int, next_at: float | None) -> bool:
        row = self.s._requests.get(request_id)
        if row is None or row.status != "open" or row.escalations != step:
            return False
        self._set(row, escalations=step + 1, escalate_at=next_at)
        return True

    async def _widen_request(self, request: Request) -> None:
        row = self.s._requests[request.request_id]
        deciders = request.routing.deciders(request.principal) if request.routing is not None else None
        self._set(row, body=REQUEST_ADAPTER.dump_json(request), deciders=deciders)

    # grants and the audit chain

    async def active_grants(self, principal: str | None, now: float) -> list[Grant] | None:
        return self.s._active_grants(principal, now)

    async def _add_grants(self, grants: Sequence[Grant]) -> None:
        for grant in grants:
            self._insert(self.s._grants, grant.grant_id, grant)

    async def _revoke_grant(self, grant_id: str, now: float) -> bool:
        grant = self.s._grants.get(grant_id)
        if grant is None or grant.revoked_at is not None:
            return False
        self._put(self.s._grants, grant_id, replace(grant, revoked_at=now))
        return True

    async def lock_audit(self) -> None:
        return None  # the memory store's transactions run one at a time under its lock

    async def append_audit(self, bodies: Sequence[AuditEvent]) -> None:
        s = self.s
        records, head = seal(bodies, after=s._audit_head, key=s.audit_key)
        if not records:
            return
        for r, body in records:
            self._append(s._audit, _Audit(seq=r.seq, body=body, prev_hash=r.prev_hash, hash=r.hash, mac=r.mac))
        old = s._audit_head
        s._audit_head = self.audit_head = head
        self.undo.append(lambda: setattr(s, "_audit_head", old))

    # the ledger

    async def _execution(self, request_id: str) -> ExecutionRecord | None:
        found = self.s._executions.get(request_id)
        if found is None:
            return None
        return ExecutionRecord(request_id=request_id, status=found.status, result=found.result)

    async def _mark_executing(self, request_ids: Sequence[str], run_id: str, now: float) -> None:
        for request_id in request_ids:
            entry = _Execution(status="executing", result=None, run_id=run_id, started_at=now)
            self._insert(self.s._executions, request_id, entry)

    async def _finish_executions(self, executions: Sequence[ExecutionResult], now: float) -> None:
        for done in executions:
            entry = self.s._executions.get(done.request_id)
            if entry is not None:
                self._set(entry, status=done.status, result=done.result)

    async def _resolve_execution(
        self, request_id: str, result: bytes, now: float, status: Literal["done", "unknown"]
    ) -> bool:
        entry = self.s._executions.get(request_id)
        if entry is None or entry.status != "executing":
            return False
        self._set(entry, status=status, result=result)
        return True

    # the step journal

    async def _add_step(self, key: StepKey, now: float) -> None:
        self._insert(self.s._steps, key, StepRecord(status="started", result=None))

    async def _step_change(self, change: EndStep | ResolveStep | DropStep) -> bool:
        steps = self.s._steps
        found = steps.get(change.key)
        if isinstance(change, EndStep):
            if found is not None:
                self._put(steps, change.key, StepRecord(status=change.status, result=bytes(change.result)))
            return True
        if found is None or found.status != "started":
            return False
        if isinstance(change, ResolveStep):
            self._put(steps, change.key, StepRecord(status="unknown", result=None))
        else:
            self._pop(steps, change.key)
        return True

    # documents

    async def _put_document(self, namespace: str, key: str, body: str, now: float, *, expect: int | None) -> bool:
        found = self.s._documents.get((namespace, key))
        if expect is not None and (found.revision if found else 0) != expect:
            return False
        self._put(self.s._documents, (namespace, key), Document(body=body, revision=found.revision + 1 if found else 1))
        return True


class _MemoryBase(_Tables, TxStore):
    """The tables, and one lock that makes each transaction (so each verb) atomic."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = anyio.Lock()

    async def ping(self) -> None:
        return None

    async def _write(self, work: TxWork[T], *, race: TxWork[T] | None = None, durable: bool = True) -> T:
        async with self._lock:
            try:
                return await self._attempt(work)
            except Duplicate as exc:
                if race is None:
                    raise StoreError(f"store error: {exc}") from exc
            try:
                return await self._attempt(race)
            except Duplicate as exc:
                raise StoreError(f"store error: {exc}") from exc

    async def _read(self, work: TxWork[T]) -> T:
        async with self._lock:
            return await work(MemoryTx(self))

    async def _attempt(self, work: TxWork[T]) -> T:
        tx = MemoryTx(self)
        try:
            result = await work(tx)
        except BaseException:
            tx.rollback()
            raise
        self._announce_head(tx.audit_head)  # only now: a rolled-back head was never the chain's
        return result
