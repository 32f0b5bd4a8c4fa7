"""In-memory verbs of grants, the hash-chained audit log, and adapters' marks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..._core.audit import AuditHead, AuditRecord
from ..._core.audit_events import AuditEvent
from ..._core.grants import Grant
from .._records import (
    AuditPage,
)
from ._base import _audit_record, _MemoryBase


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

    async def grants_for(self, *, principal: str, tool: str, subject_key: str) -> list[Grant]:
        async with self._lock:
            return [
                g
                for g in self._grants.values()
                if (g.principal, g.tool, g.subject_key) == (principal, tool, subject_key) and g.revoked_at is None
            ]

    async def revoke_grant(self, grant_id: str, *, now: float, audit: Sequence[AuditEvent] = ()) -> Grant | None:
        async with self._lock:
            grant = self._grants.get(grant_id)
            if grant is None or grant.revoked_at is not None:
                return None
            self._append_audit(audit)
            self._grants[grant_id] = revoked = replace(grant, revoked_at=now)
            return revoked

    # the audit log

    async def append_audit(self, bodies: Sequence[AuditEvent]) -> None:
        async with self._lock:
            self._append_audit(bodies)

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

    # adapters' own state

    async def set_mark(self, namespace: str, key: str, value: str) -> None:
        async with self._lock:
            self._marks[namespace, key] = value

    async def get_mark(self, namespace: str, key: str) -> str | None:
        async with self._lock:
            return self._marks.get((namespace, key))
