"""In-memory reads of pauses, requests and decisions, the inbox, and the ledger's stuck entries."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..._core.requests import Request
from ..._core.votes import Vote
from ...exceptions import StoreError
from .._records import (
    InboxFilter,
    InboxPage,
    PauseState,
    RequestFact,
    RequestState,
    RequestWithRun,
    RunRequests,
    StuckExecution,
)
from .._views import decode_cursor, encode_cursor, fact_of, on_path, rooted_at
from ._base import _Request
from ._tx import _MemoryBase


class _Requests(_MemoryBase):
    # statistics

    async def request_facts(self, *, since: float, until: float) -> list[RequestFact]:
        async with self._lock:
            rows = sorted(
                (r for r in self._requests.values() if r.kind == "approval" and since <= r.created_at < until),
                key=lambda r: (r.created_at, r.request_id),
            )
            facts: list[RequestFact] = []
            for row in rows:
                stored = self._decisions.get(row.request_id)
                facts.append(
                    fact_of(
                        row.request_id,
                        row.created_at,
                        row.escalations,
                        row.body,
                        kind=str(json.loads(stored.body)["kind"]) if stored is not None else None,
                        by=stored.by if stored is not None else None,
                        principal=stored.principal if stored is not None else None,
                        decided_at=stored.decided_at if stored is not None else None,
                        closed=stored is not None and stored.closed,
                    )
                )
            return facts

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
                votes=self._votes_of(request_id),
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
                votes=self._votes_of(request_id),
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
        after = decode_cursor("requests", cursor) if cursor is not None else None
        async with self._lock:
            rows = [r for r in self._requests.values() if self._listed(r, query, now)]
        rows.sort(key=lambda r: (r.created_at, r.request_id))
        total = len(rows)
        if after is not None:
            rows = [r for r in rows if (r.created_at, r.request_id) > after]
        page = rows[:limit]
        more = len(rows) > limit
        return InboxPage(
            requests=[r.load() for r in page],
            next_cursor=encode_cursor("requests", page[-1].created_at, page[-1].request_id) if more and page else None,
            total=total,
        )

    async def votes(self, request_ids: Sequence[str]) -> dict[str, tuple[Vote, ...]]:
        async with self._lock:
            return {r: v for r in dict.fromkeys(request_ids) if (v := self._votes_of(r))}

    # the at-most-once ledger of approved calls

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
        if query.request_ids is not None and row.request_id not in query.request_ids:
            return False
        if query.owner is None and query.approved_agents is None and not query.every_agent:
            return True
        if row.deciders is not None:  # routed: listed for its deciders only
            return query.decider is not None and query.decider in row.deciders
        return (
            query.every_agent
            or (query.owner is not None and thread.owner == query.owner)
            or any(rooted_at(row.agent_path, a) for a in query.approved_agents or ())
        )
