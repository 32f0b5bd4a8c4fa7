"""In-memory reads of runs: the sweeps' queries (lapsed, stalled, expired runs), the message log, thread listings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._messages import decode_messages
from .._records import RunRecord, ThreadPage, ThreadSummary, TranscriptEntry, TranscriptPage
from .._views import (
    decode_cursor,
    decode_position,
    encode_cursor,
    placed,
    thread_transcript,
    title,
    transcript_page,
)
from ._base import _load
from ._tx import _MemoryBase

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage


class _Runs(_MemoryBase):
    async def lapsed_runs(self, *, now: float, host: str | None = None, limit: int = 100) -> list[RunRecord]:
        async with self._lock:
            found = [
                self._run(run.run_id)
                for run in self._runs.values()
                if run.status in ("running", "paused")  # a paused run has a lease only while held
                and run.lease_holder is not None
                and (
                    (run.lease_expires_at is not None and run.lease_expires_at < now)
                    or (host is not None and (run.lease_holder or "").startswith(f"{host}:"))
                )
            ]
        return sorted(found, key=lambda r: r.lease_expires_at or 0.0)[:limit]

    async def stalled_runs(self, *, before: float, limit: int = 100) -> list[str]:
        async with self._lock:
            found: list[tuple[float, str]] = []
            for pause_id, pause in self._pauses.items():
                run = self._runs.get(pause.run_id)
                if pause.status != "open" or run is None or run.status != "paused" or run.pause_id != pause_id:
                    continue
                rows = [row for row in self._requests.values() if row.pause_id == pause_id]
                if any(row.status == "open" and row.kind != "delegate" for row in rows):
                    continue
                decided = [self._decisions[r.request_id].decided_at for r in rows if r.request_id in self._decisions]
                if pause.created_at < before and all(at < before for at in decided):
                    found.append((pause.created_at, pause.run_id))
        return [run_id for _, run_id in sorted(found)[:limit]]

    async def expired_runs(self, now: float) -> list[str]:
        async with self._lock:
            waiting: dict[str, bool] = {}
            for r in self._requests.values():
                if r.status == "open" and self._pauses[r.pause_id].status == "open":
                    expired = r.expires_at is not None and r.expires_at <= now
                    waiting[r.run_id] = waiting.get(r.run_id, True) and expired
            return [run_id for run_id, all_expired in waiting.items() if all_expired]

    # the message log

    async def run_messages(self, run_id: str) -> list[ModelMessage]:
        async with self._lock:
            run = self._runs.get(run_id)
            batches = self._messages.get(run.thread_id, []) if run is not None else []
            return _load(b for b in batches if b.run_id == run_id)

    async def transcript(self, thread_id: str, *, after_seq: int = 0) -> list[TranscriptEntry]:
        async with self._lock:
            batches = [
                (b.seq, b.run_id, decode_messages(b.body))
                for b in self._messages.get(thread_id, ())
                if b.seq > after_seq
            ]
            runs = [r for r in self._runs.values() if r.thread_id == thread_id]
            return thread_transcript(batches, runs, after_seq=after_seq)

    async def transcript_page(self, thread_id: str, *, limit: int, cursor: str | None = None) -> TranscriptPage:
        before = decode_position(thread_id, cursor) if cursor is not None else None
        whole = await self.transcript(thread_id)  # in memory, the whole history is at hand anyway
        entries, after = transcript_page(thread_id, placed(whole, before=before), limit=limit, complete=True)
        async with self._lock:
            runs = sorted((r for r in self._runs.values() if r.thread_id == thread_id), key=lambda r: r.created_at)
        return TranscriptPage(entries=entries, next_cursor=after, title=title(runs[0].prompt) if runs else None)

    async def last_seq(self, thread_id: str) -> int:
        async with self._lock:
            batches = self._messages.get(thread_id)
            return batches[-1].seq if batches else 0

    async def threads(self, *, owner: str | None, limit: int, cursor: str | None = None) -> ThreadPage:
        after = decode_cursor("threads", cursor) if cursor is not None else None
        async with self._lock:
            first: dict[str, RunRecord] = {}
            delegated: set[str] = set()
            for run in self._runs.values():
                if run.parent_run_id is not None:
                    delegated.add(run.thread_id)
                if run.thread_id not in first or run.created_at < first[run.thread_id].created_at:
                    first[run.thread_id] = run
            shown = [th for th in self._threads.values() if th.thread_id not in delegated and owner in (None, th.owner)]
            shown.sort(key=lambda th: (th.created_at, th.thread_id), reverse=True)
            if after is not None:
                shown = [th for th in shown if (th.created_at, th.thread_id) < after]
            listed = [
                ThreadSummary(
                    thread_id=th.thread_id,
                    agent=th.agent,
                    owner=th.owner,
                    active_run_id=th.active_run_id,
                    created_at=th.created_at,
                    title=title(first[th.thread_id].prompt) if th.thread_id in first else None,
                )
                for th in shown[:limit]
            ]
        more = len(shown) > limit
        last = listed[-1] if more and listed else None
        return ThreadPage(
            threads=listed, next_cursor=encode_cursor("threads", last.created_at, last.thread_id) if last else None
        )
