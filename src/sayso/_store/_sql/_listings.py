"""SQL listings for people and interfaces: the inbox (filtered, keyset-paged), threads, transcripts, statistics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from pydantic_ai.messages import ModelMessagesTypeAdapter
from sqlalchemy import Connection

from ..._core.requests import REQUEST_ADAPTER
from ..._core.votes import VOTE_ADAPTER, Vote
from .. import _tables as t
from .._records import InboxFilter, InboxPage, RequestFact, ThreadSummary, TranscriptEntry
from .._views import decode_cursor, encode_cursor, fact_of, thread_transcript, title
from ._base import _SqlBase
from ._rows import run_record


class _Listings(_SqlBase):
    async def inbox(self, query: InboxFilter, *, now: float, limit: int, cursor: str | None = None) -> InboxPage:
        r, p, th = t.requests, t.pauses, t.threads
        stmt = (
            sa.select(r.c.body, r.c.created_at, r.c.request_id)
            .join(p, p.c.pause_id == r.c.pause_id)
            .join(th, th.c.thread_id == r.c.thread_id)
            .where(r.c.status == "open", p.c.status == "open", r.c.kind != "delegate")
            .where(sa.or_(r.c.expires_at.is_(None), r.c.expires_at > now))
        )
        if query.agent is not None:
            stmt = stmt.where(_on_path(r.c.agent_path, query.agent))
        if query.kind is not None:
            stmt = stmt.where(r.c.kind == query.kind)
        if query.thread_id is not None:
            stmt = stmt.where(r.c.thread_id == query.thread_id)
        if query.older_than is not None:
            stmt = stmt.where(r.c.created_at <= now - query.older_than)
        if query.newer_than is not None:
            stmt = stmt.where(r.c.created_at >= now - query.newer_than)
        if query.owner is not None or query.approved_agents is not None:
            visible = [th.c.owner == query.owner] if query.owner is not None else []
            visible += [_rooted_at(r.c.agent_path, a) for a in query.approved_agents or ()]
            # A routed request is listed for its deciders only (docs/guides/routing.md).
            decides = sa.exists().where(
                t.request_deciders.c.request_id == r.c.request_id, t.request_deciders.c.principal == query.decider
            )
            stmt = stmt.where(sa.or_(sa.and_(~r.c.routed, sa.or_(sa.false(), *visible)), sa.and_(r.c.routed, decides)))
        if cursor is not None:
            after_at, after_id = decode_cursor(cursor)
            stmt = stmt.where(
                sa.or_(r.c.created_at > after_at, sa.and_(r.c.created_at == after_at, r.c.request_id > after_id))
            )
        stmt = stmt.order_by(r.c.created_at, r.c.request_id).limit(limit + 1)

        def work(conn: Connection) -> InboxPage:
            rows = conn.execute(stmt).all()
            more = len(rows) > limit
            rows = rows[:limit]
            return InboxPage(
                requests=[REQUEST_ADAPTER.validate_json(row.body) for row in rows],
                next_cursor=encode_cursor(rows[-1].created_at, rows[-1].request_id) if more and rows else None,
            )

        return await self._sa_read(work)

    async def votes(self, request_ids: Sequence[str]) -> dict[str, tuple[Vote, ...]]:
        ids = list(dict.fromkeys(request_ids))
        v = t.votes
        stmt = sa.select(v.c.request_id, v.c.body).where(v.c.request_id.in_(ids)).order_by(v.c.request_id, v.c.seq)

        def work(conn: Connection) -> dict[str, tuple[Vote, ...]]:
            found: dict[str, list[Vote]] = {}
            for row in conn.execute(stmt).all() if ids else ():
                found.setdefault(row.request_id, []).append(VOTE_ADAPTER.validate_json(row.body))
            return {request_id: tuple(cast) for request_id, cast in found.items()}

        return await self._sa_read(work)

    async def request_facts(self, *, since: float, until: float) -> list[RequestFact]:
        r, d = t.requests, t.decisions
        stmt = (
            sa.select(
                r.c.request_id,
                r.c.created_at,
                r.c.escalations,
                r.c.body,
                d.c.kind.label("decision_kind"),
                d.c.by,
                d.c.principal,
                d.c.decided_at,
            )
            .select_from(r.outerjoin(d, d.c.request_id == r.c.request_id))
            .where(r.c.kind == "approval", r.c.created_at >= since, r.c.created_at < until)
            .order_by(r.c.created_at, r.c.request_id)
        )

        def work(conn: Connection) -> list[RequestFact]:
            return [
                fact_of(
                    row.request_id,
                    row.created_at,
                    row.escalations,
                    row.body,
                    kind=row.decision_kind,
                    by=row.by,
                    principal=row.principal,
                    decided_at=row.decided_at,
                )
                for row in conn.execute(stmt)
            ]

        return await self._sa_read(work)

    async def threads(self, *, owner: str | None, limit: int) -> list[ThreadSummary]:
        th, ru = t.threads, t.runs
        first_prompt = (
            sa.select(ru.c.prompt)
            .where(ru.c.thread_id == th.c.thread_id)
            .order_by(ru.c.created_at)
            .limit(1)
            .scalar_subquery()
        )
        delegate_thread = sa.exists().where(ru.c.thread_id == th.c.thread_id, ru.c.parent_run_id.is_not(None))
        stmt = (
            sa.select(th, first_prompt.label("title"))
            .where(~delegate_thread)  # a delegate's own thread is shown through its parent's pause
            .order_by(th.c.created_at.desc())
            .limit(limit)
        )
        if owner is not None:
            stmt = stmt.where(th.c.owner == owner)

        def work(conn: Connection) -> list[ThreadSummary]:
            return [
                ThreadSummary(
                    thread_id=row.thread_id,
                    agent=row.agent,
                    owner=row.owner,
                    active_run_id=row.active_run_id,
                    created_at=row.created_at,
                    title=title(row.title),
                )
                for row in conn.execute(stmt).all()
            ]

        return await self._sa_read(work)

    async def transcript(self, thread_id: str, *, after_seq: int = 0) -> list[TranscriptEntry]:
        m = t.messages
        stmt = sa.select(m.c.seq, m.c.run_id, m.c.body).where(m.c.thread_id == thread_id, m.c.seq > after_seq)

        def work(conn: Connection) -> list[TranscriptEntry]:
            batches = [
                (row.seq, row.run_id, ModelMessagesTypeAdapter.validate_json(row.body))
                for row in conn.execute(stmt.order_by(m.c.seq)).all()
            ]
            runs = [
                run_record(dict(row._mapping))
                for row in conn.execute(sa.select(t.runs).where(t.runs.c.thread_id == thread_id)).all()
            ]
            return thread_transcript(batches, runs, after_seq=after_seq)

        return await self._sa_read(work)

    async def last_seq(self, thread_id: str) -> int:
        stmt = sa.select(sa.func.coalesce(sa.func.max(t.messages.c.seq), 0)).where(t.messages.c.thread_id == thread_id)

        def work(conn: Connection) -> int:
            return int(conn.execute(stmt).scalar_one())

        return await self._sa_read(work)


def _escape(agent: str) -> str:
    return agent.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _rooted_at(column: Any, agent: str) -> Any:
    """SQL for `_views.rooted_at`: `agent` is the root (first) agent of the path in `column`."""
    return sa.or_(column == agent, column.like(f"{_escape(agent)}/%", escape="\\"))


def _on_path(column: Any, agent: str) -> Any:
    """SQL for `_views.on_path`: `agent` is one of the `/`-separated agents of the path in `column`."""
    escaped = _escape(agent)
    return sa.or_(
        column == agent,
        column.like(f"{escaped}/%", escape="\\"),
        column.like(f"%/{escaped}", escape="\\"),
        column.like(f"%/{escaped}/%", escape="\\"),
    )
