"""`TrustPort`: the store verbs of what people entrusted and what was done — grants and the audit log.

A part of the `RunStore` port (which inherits it), kept in its own module because it is its own
concept: grants are written by the decision verbs (a remembered approval) and read by the gate;
audit records are appended by every verb that changes something in the same transaction, and
read back to be verified against the anchored head.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from .._core.audit import AuditRecord
from .._core.audit_events import AuditEvent
from .._core.grants import Grant
from ._records import AuditPage, GrantPage


class TrustPort(ABC):
    """The grant and audit verbs every store implements (see `RunStore`)."""

    # grants

    @abstractmethod
    async def list_grants(self, *, principal: str | None = None, active_only: bool = True) -> list[Grant]:
        """Grants, newest first; by default only those not revoked."""

    @abstractmethod
    async def grant_page(self, *, seen_by: str | None, limit: int, cursor: str | None = None) -> GrantPage:
        """Active grants, newest first, a page at a time: those whose principal or giver is `seen_by` (`None`: all).

        `seen_by` is `access.grant_sight` of the caller, so the page holds what `access.sees_grant` lets it see.

        Raises:
            InvalidCursor: `cursor` is not one a grant page handed out.
        """

    @abstractmethod
    async def grants_for(self, *, principal: str, tool: str, subject_key: str) -> list[Grant]:
        """The active grants that could cover a call (scope, thread and expiry are checked by the caller)."""

    @abstractmethod
    async def revoke_grant(self, grant_id: str, *, now: float, audit: Sequence[AuditEvent] = ()) -> Grant | None:
        """Revoke a grant (appending `audit`); returns it, or `None` when no active grant has this id."""

    # the audit log

    @abstractmethod
    async def append_audit(self, bodies: Sequence[AuditEvent]) -> None:
        """Append records to the hash-chained audit log (signed with the audit key, if any), moving its head."""

    @abstractmethod
    async def audit_records(self) -> list[AuditRecord]:
        """The whole audit log in order."""

    @abstractmethod
    async def audit_page(self, *, newest_first: bool, limit: int, cursor: int | None) -> AuditPage:
        """A page of audit records in `seq` order (or reversed), continuing after the `seq` `cursor`."""

    @abstractmethod
    async def count_audit(self) -> int:
        """How many records the audit log holds."""
