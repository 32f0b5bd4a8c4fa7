"""SQL reads of remembered approvals (grants) and the hash-chained audit log."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._core.audit import AuditRecord
from ..._core.grants import Grant
from .._records import AuditPage, GrantPage
from .._views import decode_cursor, encode_cursor
from . import _chain, _rows
from ._base import _SqlBase
from ._tx import Tx

if TYPE_CHECKING:
    from sqlalchemy import Connection


class _GrantsAudit(_SqlBase):
    async def list_grants(self, *, principal: str | None = None, active_only: bool = True) -> list[Grant]:
        import sqlalchemy as sa

        from .. import _tables as t

        query = sa.select(t.grants).order_by(t.grants.c.created_at.desc())
        if principal is not None:
            query = query.where(t.grants.c.principal == principal)
        if active_only:
            query = query.where(t.grants.c.revoked_at.is_(None))

        def work(conn: Connection) -> list[Grant]:
            return [Grant(**row._mapping) for row in conn.execute(query).all()]

        return await self._sa_read(work)

    async def grant_page(self, *, seen_by: str | None, limit: int, cursor: str | None = None) -> GrantPage:
        import sqlalchemy as sa

        from .. import _tables as t

        g = t.grants
        query = sa.select(g).where(g.c.revoked_at.is_(None))
        if seen_by is not None:  # `access.sees_grant`: whose calls it lets through, or who gave it
            query = query.where(sa.or_(g.c.principal == seen_by, g.c.granted_by == seen_by))
        if cursor is not None:
            at, grant_id = decode_cursor("grants", cursor)
            query = query.where(sa.or_(g.c.created_at < at, sa.and_(g.c.created_at == at, g.c.grant_id < grant_id)))
        query = query.order_by(g.c.created_at.desc(), g.c.grant_id.desc()).limit(limit + 1)

        def work(conn: Connection) -> GrantPage:
            rows = [Grant(**row._mapping) for row in conn.execute(query).all()]
            last = rows[limit - 1] if len(rows) > limit else None
            after = encode_cursor("grants", last.created_at, last.grant_id) if last else None
            return GrantPage(grants=rows[:limit], next_cursor=after)

        return await self._sa_read(work)

    async def grants_for(self, *, principal: str, tool: str, subject_key: str) -> list[Grant]:
        async def work(tx: Tx) -> list[Grant]:
            params = {"principal": principal, "tool": tool, "subject_key": subject_key}
            return [_rows.grant_record(row) for row in await tx.all(_rows.GRANTS_FOR, params)]

        return await self._raw_read(work)

    async def audit_records(self) -> list[AuditRecord]:
        import sqlalchemy as sa

        from .. import _tables as t

        def work(conn: Connection) -> list[AuditRecord]:
            return [_chain.audit_record(r) for r in conn.execute(sa.select(t.audit).order_by(t.audit.c.seq)).all()]

        return await self._sa_read(work)

    async def audit_page(self, *, newest_first: bool, limit: int, cursor: int | None) -> AuditPage:
        import sqlalchemy as sa

        from .. import _tables as t

        a = t.audit
        query = sa.select(a)
        if cursor is not None:
            query = query.where(a.c.seq < cursor if newest_first else a.c.seq > cursor)
        query = query.order_by(a.c.seq.desc() if newest_first else a.c.seq).limit(limit + 1)

        def work(conn: Connection) -> AuditPage:
            rows = conn.execute(query).all()
            total = int(conn.execute(sa.select(sa.func.count()).select_from(a)).scalar_one())
            records = [_chain.audit_record(row) for row in rows[:limit]]
            more = len(rows) > limit
            return AuditPage(records=records, next_cursor=records[-1].seq if more and records else None, total=total)

        return await self._sa_read(work)

    async def count_audit(self) -> int:
        import sqlalchemy as sa

        from .. import _tables as t

        def work(conn: Connection) -> int:
            return int(conn.execute(sa.select(sa.func.count()).select_from(t.audit)).scalar_one())

        return await self._sa_read(work)
