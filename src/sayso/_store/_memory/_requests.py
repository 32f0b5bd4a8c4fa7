"""In-memory verbs of pauses, requests and decisions, the inbox, and the at-most-once ledger."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from ..._core.audit_events import AuditEvent
from ..._core.decisions import DecisionRecord
from ..._core.grants import Grant
from ..._core.requests import Request
from ...exceptions import PauseConsumed, RunConflict, StoreError
from .._records import (
    Claim,
    Decided,
    ExecutionRecord,
    InboxFilter,
    InboxPage,
    Judge,
    PauseState,
    RequestState,
    RequestWithRun,
    ResumeClaim,
    RunRecord,
    RunRequests,
    StuckExecution,
)
from .._views import decode_cursor, encode_cursor, on_path, rooted_at
from ._base import _Execution, _load, _MemoryBase, _Request


class _Requests(_MemoryBase):
    # pauses, requests and decisions

    async def pause_state(self, pause_id: str) -> PauseState:
        async with self._lock:
            pause = self._pauses.get(pause_id)
            if pause is None:
                raise StoreError(f"no pause has id {pause_id!r}")
            rows = sorted((r for r in self._requests.values() if r.pause_id == pause_id), key=lambda r: r.position)
            return PauseState(
                run_id=pause.run_id,
                status=pause.status,
                requests=[r.load() for r in rows],
                decisions=self._decided(r.request_id for r in rows),
            )

    async def get_request(self, request_id: str) -> RequestState | None:
        async with self._lock:
            row = self._requests.get(request_id)
            if row is None:
                return None
            return RequestState(
                request=row.load(),
                pause_status=self._pauses[row.pause_id].status,
                decision=self._decided([request_id]).get(request_id),
            )

    async def request_with_run(self, request_id: str) -> RequestWithRun | None:
        async with self._lock:
            row = self._requests.get(request_id)
            if row is None or row.run_id not in self._runs:
                return None
            return RequestWithRun(
                request=row.load(),
                pause_status=self._pauses[row.pause_id].status,
                decision=self._decided([request_id]).get(request_id),
                run=self._run(row.run_id),
            )

    async def run_requests(self, run_id: str) -> RunRequests:
        async with self._lock:
            rows = sorted(
                (r for r in self._requests.values() if r.run_id == run_id), key=lambda r: (r.created_at, r.position)
            )
            return RunRequests(requests=[r.load() for r in rows], decisions=self._decided(r.request_id for r in rows))

    async def open_requests(self, *, limit: int = 100) -> list[Request]:
        async with self._lock:
            rows = [r for r in self._requests.values() if self._waits(r) and r.kind != "delegate"]
            rows.sort(key=lambda r: r.created_at)
            return [r.load() for r in rows[:limit]]

    async def inbox(self, query: InboxFilter, *, now: float, limit: int, cursor: str | None = None) -> InboxPage:
        after = decode_cursor(cursor) if cursor is not None else None
        async with self._lock:
            rows = [r for r in self._requests.values() if self._listed(r, query, now)]
        rows.sort(key=lambda r: (r.created_at, r.request_id))
        if after is not None:
            rows = [r for r in rows if (r.created_at, r.request_id) > after]
        page = rows[:limit]
        more = len(rows) > limit
        return InboxPage(
            requests=[r.load() for r in page],
            next_cursor=encode_cursor(page[-1].created_at, page[-1].request_id) if more and page else None,
        )

    async def record_decision(
        self, record: DecisionRecord, *, audit: Sequence[AuditEvent] = (), grant: Grant | None = None
    ) -> DecisionRecord | None:
        async with self._lock:
            earlier = self._decided([record.request_id])
            if earlier:
                return earlier[record.request_id]
            self._check_new_grants([grant] if grant is not None else [])
            self._insert_decisions([record], audit)
            if grant is not None:
                self._grants[grant.grant_id] = grant
            return None

    async def record_decisions(
        self,
        records: Sequence[DecisionRecord],
        *,
        audit: Sequence[AuditEvent] = (),
        grants: Sequence[Grant] = (),
    ) -> list[DecisionRecord]:
        async with self._lock:
            earlier = self._decided(r.request_id for r in records)
            if earlier:
                return [earlier[r.request_id] for r in records if r.request_id in earlier]
            ids = [r.request_id for r in records]
            if len(set(ids)) != len(ids):
                raise StoreError("the same request is decided twice in one batch")
            self._check_new_grants(grants)
            self._insert_decisions(records, audit)
            self._grants.update((g.grant_id, g) for g in grants)
            return []

    async def add_decisions(self, records: Sequence[DecisionRecord], *, audit: Sequence[AuditEvent] = ()) -> None:
        async with self._lock:
            self._insert_decisions([r for r in records if r.request_id not in self._decisions], audit)

    async def consume_pause(
        self,
        run: RunRecord,
        *,
        pause_id: str,
        owner: str,
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
        resume = ResumeClaim(executing=executing, added=added, audit=audit, grants_of=grants_of)
        async with self._lock:
            return self._claim(
                run,
                pause_id,
                resume,
                owner=owner,
                until=until,
                now=now,
                history=load_history,
                workflow_state=load_workflow_state,
            )

    async def decide_request(
        self, request_id: str, judge: Judge, *, owner: str, until: float, now: float
    ) -> Decided | None:
        async with self._lock:
            row = self._requests.get(request_id)
            if row is None or row.run_id not in self._runs:
                return None
            found = RequestWithRun(
                request=row.load(),
                pause_status=self._pauses[row.pause_id].status,
                decision=self._decided([request_id]).get(request_id),
                run=self._run(row.run_id),
            )
            rows = sorted((r for r in self._requests.values() if r.pause_id == row.pause_id), key=lambda r: r.position)
            state = PauseState(
                run_id=row.run_id,
                status=found.pause_status,
                requests=[r.load() for r in rows],
                decisions=self._decided(r.request_id for r in rows),
            )
            verdict = judge(found, state)
            if verdict.resume is not None and not self._is_open(row.pause_id):
                raise PauseConsumed(found.run.run_id, "this pause was already resumed; a pause is consumed once")
            if verdict.record is not None:
                if request_id in self._decisions:
                    raise StoreError(f"request {request_id!r} is decided already")
                grants = [verdict.grant] if verdict.grant is not None else []
                self._check_new_grants(grants)
                if verdict.resume is not None:
                    self._check_claim(found.run.run_id, verdict.resume)
                self._insert_decisions([verdict.record], verdict.audit)
                self._grants.update((g.grant_id, g) for g in grants)
            claim = None
            if verdict.resume is not None:
                claim = self._claim(
                    found.run, row.pause_id, verdict.resume, owner=owner, until=until, now=now, history=True
                )
            return Decided(found=found, state=state, verdict=verdict, claim=claim)

    def _check_claim(self, run_id: str, resume: ResumeClaim) -> None:
        if any(d.request_id in self._decisions for d in resume.added) or any(
            r in self._executions for r in resume.executing
        ):
            raise RunConflict(
                run_id, "a request this resume closes was decided meanwhile; reload the pause and resume again"
            )

    def _claim(
        self,
        run: RunRecord,
        pause_id: str,
        resume: ResumeClaim,
        *,
        owner: str,
        until: float,
        now: float,
        history: bool,
        workflow_state: bool = False,
    ) -> Claim:
        """Consume the pause and take the run; the caller holds the lock."""
        claim: dict[str, Any] = {
            "status": "running",
            "pause_id": None,
            "resume_pause_id": pause_id,
            "lease_owner": owner,
            "lease_expires_at": until,
        }
        if not self._is_open(pause_id):
            raise PauseConsumed(run.run_id, "this pause was already resumed; a pause is consumed once")
        self._check_claim(run.run_id, resume)
        self._pauses[pause_id].status = "consumed"
        self._insert_decisions(resume.added, resume.audit)
        for request_id in resume.executing:
            self._executions[request_id] = _Execution(
                status="executing", result=None, run_id=run.run_id, started_at=now
            )
        self._update_run(run.run_id, now, **claim)
        return Claim(
            run=replace(run, **claim, updated_at=now, revision=run.revision + 1),
            history=_load(self._messages.get(run.thread_id, ())) if history else None,
            grants=self._active_grants(resume.grants_of, now),
            workflow_state=self._workflow_states.get(run.run_id) if workflow_state else None,
        )

    # the at-most-once ledger of approved calls

    async def begin_execution(self, request_id: str, run_id: str, now: float) -> ExecutionRecord | None:
        async with self._lock:
            found = self._executions.get(request_id)
            if found is not None:
                return ExecutionRecord(request_id=request_id, status=found.status, result=found.result)
            self._executions[request_id] = _Execution(status="executing", result=None, run_id=run_id, started_at=now)
            return None

    async def finish_execution(
        self,
        request_id: str,
        result: bytes,
        now: float,
        *,
        audit: Sequence[AuditEvent] = (),
        status: Literal["done", "unknown"] = "done",
    ) -> None:
        async with self._lock:
            entry = self._executions.get(request_id)
            if entry is not None and entry.status == "executing":  # resolved once, however many sweeps race to it
                self._append_audit(audit)
                self._finish(request_id, result, status)

    async def stuck_executions(self, *, run_id: str | None = None, limit: int = 100) -> list[StuckExecution]:
        async with self._lock:
            stuck = [
                StuckExecution(request_id=request_id, run_id=entry.run_id, started_at=entry.started_at)
                for request_id, entry in self._executions.items()
                if entry.status == "executing"
                and (
                    entry.run_id == run_id
                    if run_id is not None
                    else entry.run_id in self._runs and self._runs[entry.run_id].status != "running"
                )
            ]
        return sorted(stuck, key=lambda e: e.started_at)[:limit]

    def _listed(self, row: _Request, query: InboxFilter, now: float) -> bool:
        thread = self._threads.get(row.thread_id)
        if thread is None or not self._waits(row) or row.kind == "delegate":
            return False
        if row.expires_at is not None and row.expires_at <= now:
            return False
        if query.agent is not None and not on_path(row.agent_path, query.agent):
            return False
        if (query.kind is not None and row.kind != query.kind) or query.thread_id not in (None, row.thread_id):
            return False
        if query.older_than is not None and row.created_at > now - query.older_than:
            return False
        if query.newer_than is not None and row.created_at < now - query.newer_than:
            return False
        if query.owner is None and query.approved_agents is None:
            return True
        return (query.owner is not None and thread.owner == query.owner) or any(
            rooted_at(row.agent_path, a) for a in query.approved_agents or ()
        )
