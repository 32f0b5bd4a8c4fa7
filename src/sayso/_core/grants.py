"""Remembered approvals (§3.4): what a grant covers, as pure functions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias

GrantScope: TypeAlias = Literal["thread", "always"]


@dataclass(frozen=True, kw_only=True)
class Grant:
    """A remembered approval: this principal lets this tool act on this subject without asking."""

    grant_id: str
    tool: str
    subject_key: str
    subject_label: str
    scope: GrantScope
    principal: str
    thread_id: str | None
    """The thread a `thread`-scoped grant is limited to; `None` for `always`."""
    created_at: float
    expires_at: float | None = None
    revoked_at: float | None = None

    def covers(self, *, tool: str, subject_key: str, principal: str, thread_id: str, now: float) -> bool:
        """Whether this grant lets a call run without asking; never another subject, thread or principal."""
        if self.revoked_at is not None or (self.expires_at is not None and now >= self.expires_at):
            return False
        if (self.tool, self.subject_key, self.principal) != (tool, subject_key, principal):
            return False
        return self.scope == "always" or self.thread_id == thread_id


def covering_grant(
    grants: Iterable[Grant], *, tool: str, subject_key: str, principal: str, thread_id: str, now: float
) -> Grant | None:
    """The first grant that covers the call, if any."""
    return next(
        (
            g
            for g in grants
            if g.covers(tool=tool, subject_key=subject_key, principal=principal, thread_id=thread_id, now=now)
        ),
        None,
    )
