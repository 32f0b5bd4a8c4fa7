"""SQL listings for people and interfaces: the inbox (filtered, keyset-paged), threads, transcripts, statistics."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..._core.requests import REQUEST_ADAPTER
from ..._core.votes import VOTE_ADAPTER, Vote
from .._messages import decode_messages
from .._records import InboxFilter, InboxPage, RequestFact, ThreadPage, ThreadSummary, TranscriptEntry, TranscriptPage
from .._views import (
    decode_cursor,
    decode_position,
    encode_cursor,
    fact_of,
    placed,
    thread_transcript,
    title,
    transcript_page,
)
from ._conn import _SqlConn
from ._rows import run_record
from ._tx import Sql, Tx

if TYPE_CHECKING:
    from sqlalchemy import Connection


class _Listings(_SqlConn):
    async def inbox(self, query: InboxFilter, *, now: float, limit: int, cursor: str | None = None) -> InboxPage:
        # Plain SQL through the driver (no SQLAlchemy): the first page is what `sayso inbox` and the
        # web UI read most, and the filters are a few fixed clauses with parameters.
        where = [
            "r.status = 'open'",
            "p.status = 'open'",
            "r.kind != 'delegate'",
            "(r.expires_at IS NULL OR r.expires_at > :now)",
        ]
        params: dict[str, object] = {"now": now, "limit": limit + 1}
        if query.agent is not None:
            where.append(_on_path("r.agent_path", "agent", query.agent, params))
        if query.kind is not None:
            where.append("r.kind = :kind")
            params["kind"] = query.kind
        if query.thread_id is not None:
            where.append("r.thread_id = :thread_id")
            params["thread_id"] = query.thread_id
        if query.older_than is not None:
            where.append("r.created_at <= :oldest")
            params["oldest"] = now - query.older_than
        if query.newer_than is not None:
            where.append("r.created_at >= :newest")
            params["newest"] = now - query.newer_than
        if query.request_ids is not None:
            ids = {f"id{i}": request_id for i, request_id in enumerate(query.request_ids)}
            where.append(f"r.request_id IN ({', '.join(f':{name}' for name in ids)})" if ids else "1 = 0")
            params.update(ids)
        if query.owner is not None or query.approved_agents is not None or query.every_agent:
            visible = ["1 = 1" if query.every_agent else "1 = 0"]
            if query.owner is not None:
                visible.append("th.owner = :owner")
                params["owner"] = query.owner
            visible += [
                _rooted_at("r.agent_path", f"root{i}", a, params) for i, a in enumerate(query.approved_agents or ())
            ]
            # A routed request is listed for its deciders only (docs/guides/routing.md).
            params["decider"] = query.decider
            decides = (
                "EXISTS (SELECT 1 FROM request_deciders d WHERE d.request_id = r.request_id AND d.principal = :decider)"
            )
            where.append(f"((NOT r.routed AND ({' OR '.join(visible)})) OR (r.routed AND {decides}))")
        tables = (
            " FROM requests r JOIN pauses p ON p.pause_id = r.pause_id JOIN threads th ON th.thread_id = r.thread_id"
        )
        # Every page counts what the same clauses list across all pages (the cursor's aside): one rule, no second.
        count = Sql(f"SELECT COUNT(*) AS n{tables} WHERE {' AND '.join(where)}")
        if cursor is not None:
            params["after_at"], params["after_id"] = decode_cursor("requests", cursor)
            where.append("(r.created_at > :after_at OR (r.created_at = :after_at AND r.request_id > :after_id))")
        sql = Sql(
            f"SELECT r.body, r.created_at, r.request_id{tables}"
            f" WHERE {' AND '.join(where)} ORDER BY r.created_at, r.request_id LIMIT :limit"
        )

        async def work(tx: Tx) -> InboxPage:
            rows = await tx.all(sql, params)
            counted = await tx.one(count, {name: params[name] for name in count.names})
            more = len(rows) > limit
            rows = rows[:limit]
            return InboxPage(
                requests=[REQUEST_ADAPTER.validate_json(row["body"]) for row in rows],
                next_cursor=encode_cursor("requests", rows[-1]["created_at"], rows[-1]["request_id"])
                if more and rows
                else None,
                total=int(counted["n"]) if counted is not None else 0,
            )

        return await self._raw_read(work)

    async def votes(self, request_ids: Sequence[str]) -> dict[str, tuple[Vote, ...]]:
        ids = list(dict.fromkeys(request_ids))
        if not ids:
            return {}
        params: dict[str, object] = {f"v{i}": request_id for i, request_id in enumerate(ids)}
        sql = Sql(
            "SELECT request_id, body FROM votes WHERE request_id IN ("
            + ", ".join(f":{name}" for name in params)
            + ") ORDER BY request_id, seq"
        )

        async def work(tx: Tx) -> dict[str, tuple[Vote, ...]]:
            found: dict[str, list[Vote]] = {}
            for row in await tx.all(sql, params):
                found.setdefault(row["request_id"], []).append(VOTE_ADAPTER.validate_json(row["body"]))
            return {request_id: tuple(cast) for request_id, cast in found.items()}

        return await self._raw_read(work)

    async def request_facts(self, *, since: float, until: float) -> list[RequestFact]:
        import sqlalchemy as sa

        from .. import _tables as t

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
                d.c.closed,
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
                    closed=bool(row.closed),
                )
                for row in conn.execute(stmt)
            ]

        return await self._sa_read(work)

    async def threads(self, *, owner: str | None, limit: int, cursor: str | None = None) -> ThreadPage:
        # Plain SQL, as the inbox: the web UI's thread list reads it whenever a thread changes.
        params: dict[str, object] = {"owner": owner, "limit": limit + 1}
        if cursor is not None:
            params["after_at"], params["after_id"] = decode_cursor("threads", cursor)
        sql = thread_listing(owner=owner is not None, after=cursor is not None)

        async def work(tx: Tx) -> ThreadPage:
            rows = await tx.all(sql, {name: params[name] for name in sql.names})
            listed = [
                ThreadSummary(
                    thread_id=row["thread_id"],
                    agent=row["agent"],
                    owner=row["owner"],
                    active_run_id=row["active_run_id"],
                    created_at=row["created_at"],
                    title=title(row["title"]),
                )
                for row in rows[:limit]
            ]
            last = listed[-1] if len(rows) > limit and listed else None
            after = encode_cursor("threads", last.created_at, last.thread_id) if last else None
            return ThreadPage(threads=listed, next_cursor=after)

        return await self._raw_read(work)

    async def transcript(self, thread_id: str, *, after_seq: int = 0) -> list[TranscriptEntry]:
        import sqlalchemy as sa

        from .. import _tables as t

        m = t.messages
        stmt = sa.select(m.c.seq, m.c.run_id, m.c.body).where(m.c.thread_id == thread_id, m.c.seq > after_seq)

        def work(conn: Connection) -> list[TranscriptEntry]:
            batches = [
                (row.seq, row.run_id, decode_messages(row.body)) for row in conn.execute(stmt.order_by(m.c.seq)).all()
            ]
            runs = [
                run_record(dict(row._mapping))
                for row in conn.execute(sa.select(t.runs).where(t.runs.c.thread_id == thread_id)).all()
            ]
            return thread_transcript(batches, runs, after_seq=after_seq)

        return await self._sa_read(work)

    async def transcript_page(self, thread_id: str, *, limit: int, cursor: str | None = None) -> TranscriptPage:
        import sqlalchemy as sa

        from .. import _tables as t

        before = decode_position(thread_id, cursor) if cursor is not None else None
        m, ru = t.messages, t.runs
        batch = sa.select(m.c.seq, m.c.run_id, m.c.body).where(m.c.thread_id == thread_id)
        chunk = limit // 2 + 1  # a batch holds a message and its answer at least

        def work(conn: Connection) -> TranscriptPage:
            # Back from the cursor's batch a chunk of batches at a time, until the lines read reach past the page or
            # the thread's start. Each chunk's lines are told as the whole history tells them: with the batch after
            # it (where its failures end) and the runs that failed between its batches, read by time through an index.
            upper = before[0] if before is not None else None
            after = None
            if upper is not None:
                after = conn.execute(batch.where(m.c.seq > upper).order_by(m.c.seq).limit(1)).first()
            lines: list[tuple[tuple[int, int], TranscriptEntry]] = []
            while True:
                below = batch if upper is None else batch.where(m.c.seq <= upper)
                rows = list(reversed(conn.execute(below.order_by(m.c.seq.desc()).limit(chunk)).all()))
                complete = len(rows) < chunk
                read = [*rows, after] if after is not None else rows
                runs = [
                    run_record(dict(row._mapping))
                    for row in conn.execute(sa.select(ru).where(ru.c.run_id.in_({r.run_id for r in read}))).all()
                ]
                started = {r.run_id: r.created_at for r in runs}
                failed = sa.select(ru).where(ru.c.thread_id == thread_id, ru.c.status == "failed")
                if not complete and rows[0].run_id in started:
                    failed = failed.where(ru.c.created_at >= started[rows[0].run_id])
                if after is not None and after.run_id in started:
                    failed = failed.where(ru.c.created_at <= started[after.run_id])
                runs += [run_record(dict(row._mapping)) for row in conn.execute(failed).all()]
                lo = 0 if complete else rows[0].seq - 1
                batches = [(row.seq, row.run_id, decode_messages(row.body)) for row in read]
                entries = [
                    e
                    for e in thread_transcript(batches, runs, after_seq=lo)
                    if (complete or e.seq > lo) and (upper is None or e.seq <= upper)
                ]
                lines = placed(entries, before=before) + lines
                if complete or len(lines) > limit:
                    break
                after, upper = rows[0], rows[0].seq - 1
            first = sa.select(ru.c.prompt).where(ru.c.thread_id == thread_id).order_by(ru.c.created_at).limit(1)
            entries, older = transcript_page(thread_id, lines, limit=limit, complete=complete)
            return TranscriptPage(entries=entries, next_cursor=older, title=title(conn.execute(first).scalar()))

        return await self._sa_read(work)

    async def last_seq(self, thread_id: str) -> int:
        import sqlalchemy as sa

        from .. import _tables as t

        stmt = sa.select(sa.func.coalesce(sa.func.max(t.messages.c.seq), 0)).where(t.messages.c.thread_id == thread_id)

        def work(conn: Connection) -> int:
            return int(conn.execute(stmt).scalar_one())

        return await self._sa_read(work)


@functools.cache
def thread_listing(*, owner: bool, after: bool) -> Sql:
    """The thread list's statement: a page of threads, newest first by (created_at, id).

    It reads backwards through an index of threads by owner (or of every thread, in local mode),
    from the cursor's thread when there is one, so no page sorts the whole table.
    """
    where = ["NOT EXISTS (SELECT 1 FROM runs d WHERE d.thread_id = th.thread_id AND d.parent_run_id IS NOT NULL)"]
    if owner:
        where.append("th.owner = :owner")
    if after:  # the range first, so the index is entered at the cursor rather than read from the newest thread
        where.append("th.created_at <= :after_at AND (th.created_at < :after_at OR th.thread_id < :after_id)")
    return Sql(
        "SELECT th.thread_id, th.agent, th.owner, th.active_run_id, th.created_at,"
        " (SELECT ru.prompt FROM runs ru WHERE ru.thread_id = th.thread_id ORDER BY ru.created_at LIMIT 1) AS title"
        # a delegate's own thread is shown through its parent's pause
        f" FROM threads th WHERE {' AND '.join(where)} ORDER BY th.created_at DESC, th.thread_id DESC LIMIT :limit"
    )


def _escape(agent: str) -> str:
    """`agent` as a `LIKE` pattern's literal text (`!` escapes: it needs no quoting in either dialect)."""
    return agent.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def _rooted_at(column: str, name: str, agent: str, params: dict[str, object]) -> str:
    """SQL for `_views.rooted_at`: `agent` is the root (first) agent of the path in `column`."""
    params[name], params[f"{name}_below"] = agent, f"{_escape(agent)}/%"
    return f"({column} = :{name} OR {column} LIKE :{name}_below ESCAPE '!')"


def _on_path(column: str, name: str, agent: str, params: dict[str, object]) -> str:
    """SQL for `_views.on_path`: `agent` is one of the `/`-separated agents of the path in `column`."""
    escaped = _escape(agent)
    params[name] = agent
    params[f"{name}_first"], params[f"{name}_last"] = f"{escaped}/%", f"%/{escaped}"
    params[f"{name}_inner"] = f"%/{escaped}/%"
    return (
        f"({column} = :{name} OR {column} LIKE :{name}_first ESCAPE '!' OR {column} LIKE :{name}_last ESCAPE '!'"
        f" OR {column} LIKE :{name}_inner ESCAPE '!')"
    )
