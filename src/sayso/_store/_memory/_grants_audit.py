"""In-memory reads of grants and the hash-chained audit log."""

from __future__ import annotations

from ..._core.audit import AuditHead, AuditRecord
from ..._core.grants import Grant
from .._records import AuditPage, GrantPage
from .._views import decode_cursor, encode_cursor
from ._base import _audit_record
from ._tx import _MemoryBase


class _GrantsAudit(_MemoryBase):
    # grants

    async def list_grants(self, *, principal: str | None = None, active_only: bool = True) -> list[Grant]:
        async with self._lock:
            found = [
                g
                for g in self._grants.values()
                if principal in (None, g.principal) and not (active_only and g.revoked_at is not None)
            ]
        return sorted(found, key=lambda g: g.created_at, reverse=True)

    async def grant_page(self, *, seen_by: str | None, limit: int, cursor: str | None = None) -> GrantPage:
        after = decode_cursor("grants", cursor) if cursor is not None else None
        async with self._lock:
            found = [
                g
                for g in self._grants.values()
                if g.revoked_at is None
                and seen_by in (None, g.principal, g.granted_by)
                and (after is None or (g.created_at, g.grant_id) < after)
            ]
        found.sort(key=lambda g: (g.created_at, g.grant_id), reverse=True)
        last = found[limit - 1] if len(found) > limit else None
        after_last = encode_cursor("grants", last.created_at, last.grant_id) if last else None
        return GrantPage(grants=found[:limit], next_cursor=after_last)

    async def grants_for(self, *, principal: str, tool: str, subject_key: str) -> list[Grant]:
        async with self._lock:
            return [
                g
                for g in self._grants.values()
                if (g.principal, g.tool, g.subject_key) == (principal, tool, subject_key) and g.revoked_at is None
            ]

    # the audit log

    async def audit_records(self) -> list[AuditRecord]:
        async with self._lock:
            return [_audit_record(a) for a in self._audit]

    async def audit_head(self) -> AuditHead | None:
        async with self._lock:
            return self._audit_head

    async def audit_page(self, *, newest_first: bool, limit: int, cursor: int | None) -> AuditPage:
        async with self._lock:
            rows = list(reversed(self._audit)) if newest_first else list(self._audit)
            total = len(self._audit)
        if cursor is not None:
            rows = [a for a in rows if (a.seq < cursor if newest_first else a.seq > cursor)]
        records = [_audit_record(a) for a in rows[:limit]]
        more = len(rows) > limit
        return AuditPage(records=records, next_cursor=records[-1].seq if more and records else None, total=total)

    async def count_audit(self) -> int:
        async with self._lock:
            return len(self._audit)
