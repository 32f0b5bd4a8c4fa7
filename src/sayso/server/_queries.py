"""Read-only queries the server needs and the store does not offer yet.

The inbox (open requests across threads, filtered and paged), a principal's threads, a
thread's transcript, a page of the audit log and the requests an expiry sweep closed read
the store's tables directly through its SQLAlchemy engine. They
belong in `RunStore` and live here only until it grows them; nothing here writes.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from .._core.audit import AuditRecord
from .._core.requests import REQUEST_ADAPTER, Request, RequestKind
from .._store import _tables as t


class InvalidCursor(ValueError):
    """A paging cursor that this server did not hand out."""


@dataclass(frozen=True, kw_only=True)
class InboxFilter:
    """Which open requests to list."""

    agent: str | None = None
    """Only requests asked by this agent or on its behalf (any agent on the request's path)."""
    kind: RequestKind | None = None
    thread_id: str | None = None
    older_than: float | None = None
    """Only requests opened at least this many seconds ago."""
    newer_than: float | None = None
    """Only requests opened at most this many seconds ago."""
    owner: str | None = None
    """Visibility: requests on threads of this owner ..."""
    approved_agents: Sequence[str] | None = None
    """... or on threads whose root agent is one of these; both `None` means every request is visible."""


@dataclass(frozen=True, kw_only=True)
class InboxPage:
    """One page of open requests, oldest first, and the cursor of the next page."""

    requests: list[Request]
    next_cursor: str | None


def encode_cursor(created_at: float, request_id: str) -> str:
    """An opaque cursor pointing after the request (`created_at`, `request_id`)."""
    return base64.urlsafe_b64encode(json.dumps([created_at, request_id]).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """The position a cursor points after.

    Raises:
        InvalidCursor: the cursor is not one this server made.
    """
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidCursor(f"cursor {cursor!r} is not valid; pass back the next_cursor of a page") from exc
    if (
        not isinstance(raw, list)
        or len(raw) != 2
        or not isinstance(raw[0], int | float)
        or isinstance(raw[0], bool)
        or not isinstance(raw[1], str)
    ):
        raise InvalidCursor(f"cursor {cursor!r} is not valid; pass back the next_cursor of a page")
    return float(raw[0]), raw[1]


def _escape(agent: str) -> str:
    return agent.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _rooted_at(column: Any, agent: str) -> Any:
    """SQL: `agent` is the root (first) agent of the path in `column`."""
    return sa.or_(column == agent, column.like(f"{_escape(agent)}/%", escape="\\"))


def _on_path(column: Any, agent: str) -> Any:
    """SQL: `agent` is one of the `/`-separated agents of the path in `column`."""
    escaped = _escape(agent)
    return sa.or_(
        column == agent,
        column.like(f"{escaped}/%", escape="\\"),
        column.like(f"%/{escaped}", escape="\\"),
        column.like(f"%/{escaped}/%", escape="\\"),
    )


async def list_open_requests(
    engine: AsyncEngine, query: InboxFilter, *, now: float, limit: int, cursor: str | None = None
) -> InboxPage:
    """Open, unexpired requests of open pauses across threads, oldest first, one page at a time.

    Raises:
        InvalidCursor: `cursor` is not one this function handed out.
    """
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
        stmt = stmt.where(sa.or_(sa.false(), *visible))
    if cursor is not None:
        after_at, after_id = decode_cursor(cursor)
        stmt = stmt.where(
            sa.or_(r.c.created_at > after_at, sa.and_(r.c.created_at == after_at, r.c.request_id > after_id))
        )
    stmt = stmt.order_by(r.c.created_at, r.c.request_id).limit(limit + 1)
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(rows[-1].created_at, rows[-1].request_id) if more and rows else None
    return InboxPage(requests=[REQUEST_ADAPTER.validate_json(row.body) for row in rows], next_cursor=next_cursor)


@dataclass(frozen=True, kw_only=True)
class ThreadSummary:
    """A thread as listed for its owner."""

    thread_id: str
    agent: str
    owner: str
    active_run_id: str | None
    created_at: float
    title: str | None
    """The first user message, shortened."""


async def list_threads(engine: AsyncEngine, *, owner: str | None, limit: int) -> list[ThreadSummary]:
    """Threads, newest first; only those of `owner` unless it is `None`."""
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
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    return [
        ThreadSummary(
            thread_id=row.thread_id,
            agent=row.agent,
            owner=row.owner,
            active_run_id=row.active_run_id,
            created_at=row.created_at,
            title=row.title[:80] if row.title else None,
        )
        for row in rows
    ]


EntryRole = Literal["user", "assistant", "tool_call", "tool_result"]


@dataclass(frozen=True, kw_only=True)
class TranscriptEntry:
    """One line of a thread as a person reads it."""

    seq: int
    """Position of the stored batch this entry came from; later batches have larger numbers."""
    run_id: str
    role: EntryRole
    text: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    args: Any = None


async def last_seq(engine: AsyncEngine, thread_id: str) -> int:
    """The position of the latest stored batch of a thread's history, 0 when it has none."""
    stmt = sa.select(sa.func.coalesce(sa.func.max(t.messages.c.seq), 0)).where(t.messages.c.thread_id == thread_id)
    async with engine.connect() as conn:
        return int((await conn.execute(stmt)).scalar_one())


async def transcript(engine: AsyncEngine, thread_id: str, *, after_seq: int = 0) -> list[TranscriptEntry]:
    """A thread's history as plain entries: user and assistant text, tool calls and their results."""
    m = t.messages
    stmt = sa.select(m.c.seq, m.c.run_id, m.c.body).where(m.c.thread_id == thread_id, m.c.seq > after_seq)
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt.order_by(m.c.seq))).all()
    entries: list[TranscriptEntry] = []
    for row in rows:
        for message in ModelMessagesTypeAdapter.validate_json(row.body):
            base = {"seq": row.seq, "run_id": row.run_id}
            if isinstance(message, ModelRequest):
                for part in message.parts:
                    if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                        entries.append(TranscriptEntry(**base, role="user", text=part.content))
                    elif isinstance(part, ToolReturnPart):
                        entries.append(
                            TranscriptEntry(
                                **base,
                                role="tool_result",
                                tool_name=part.tool_name,
                                tool_call_id=part.tool_call_id,
                                text=part.model_response_str(),
                            )
                        )
            elif isinstance(message, ModelResponse):
                for rpart in message.parts:
                    if isinstance(rpart, TextPart):
                        entries.append(TranscriptEntry(**base, role="assistant", text=rpart.content))
                    elif isinstance(rpart, ToolCallPart):
                        entries.append(
                            TranscriptEntry(
                                **base,
                                role="tool_call",
                                tool_name=rpart.tool_name,
                                tool_call_id=rpart.tool_call_id,
                                args=rpart.args_as_dict(),
                            )
                        )
    return entries


# audit


@dataclass(frozen=True, kw_only=True)
class AuditPage:
    """One page of the audit log and the cursor of the next page."""

    records: list[AuditRecord]
    next_cursor: int | None
    """The `seq` to continue after; `None` on the last page."""
    total: int
    """How many records the whole log holds."""


async def list_audit(engine: AsyncEngine, *, newest_first: bool, limit: int, cursor: int | None) -> AuditPage:
    """A page of audit records in `seq` order (or reversed), continuing after `cursor`."""
    a = t.audit
    stmt = sa.select(a)
    if cursor is not None:
        stmt = stmt.where(a.c.seq < cursor if newest_first else a.c.seq > cursor)
    stmt = stmt.order_by(a.c.seq.desc() if newest_first else a.c.seq).limit(limit + 1)
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
        total = int((await conn.execute(sa.select(sa.func.count()).select_from(a))).scalar_one())
    more = len(rows) > limit
    records = [
        AuditRecord(seq=row.seq, body=json.loads(row.body), prev_hash=row.prev_hash, hash=row.hash)
        for row in rows[:limit]
    ]
    return AuditPage(records=records, next_cursor=records[-1].seq if more and records else None, total=total)


async def count_audit(engine: AsyncEngine) -> int:
    """How many records the audit log holds."""
    async with engine.connect() as conn:
        return int((await conn.execute(sa.select(sa.func.count()).select_from(t.audit))).scalar_one())
