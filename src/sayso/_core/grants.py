"""Remembered approvals: what a grant covers, as pure functions.

See docs/concepts/decisions.md#scopes-remembering-an-approval.

A grant is given on one request, so it reaches no further than that request did: the same
principal's calls of the same tool on the same subject, by the same agent (its path: a grant
given on `coordinator/analyst`'s request covers neither `coordinator`'s own calls nor a sibling
delegate's), and for a `thread` grant the same thread. A grant that names no agent (one migrated
from before grants recorded it, whose agent could not be traced) covers nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias

GrantScope: TypeAlias = Literal["thread", "always"]


@dataclass(frozen=True, kw_only=True)
class Grant:
    """A remembered approval: this principal lets this tool act on this subject, through this agent, without asking."""

    grant_id: str
    tool: str
    subject_key: str
    subject_label: str
    scope: GrantScope
    principal: str
    """Whose calls it lets through: the owner of the thread the request was raised on."""
    agent: str | None
    """The agent path it was given for (`coordinator/analyst` for a request of that delegate); it applies only
    to calls by that agent there. A host's grants (and grants migrated from before paths were recorded) name a
    root agent. `None` only for a grant migrated from before this was recorded whose agent could not be traced:
    such a grant covers nothing."""
    thread_id: str | None
    """The thread a `thread`-scoped grant is limited to; `None` for `always`."""
    created_at: float
    granted_by: str | None = None
    """Who gave it (the person who approved with a wider scope); `None` means the principal itself."""
    expires_at: float | None = None
    revoked_at: float | None = None

    @property
    def giver(self) -> str:
        """The principal whose decision this grant remembers."""
        return self.granted_by or self.principal

    def covers(
        self, *, tool: str, subject_key: str, principal: str, thread_id: str, agent_path: str, now: float
    ) -> bool:
        """Whether this grant lets a call run without asking; never another subject, thread, principal or agent."""
        if self.revoked_at is not None or (self.expires_at is not None and now >= self.expires_at):
            return False
        if (self.tool, self.subject_key, self.principal) != (tool, subject_key, principal):
            return False
        if self.agent is None or self.agent != agent_path:
            return False
        return self.scope == "always" or self.thread_id == thread_id


def covering_grant(
    grants: Iterable[Grant],
    *,
    tool: str,
    subject_key: str,
    principal: str,
    thread_id: str,
    agent_path: str,
    now: float,
) -> Grant | None:
    """The first grant that covers the call, if any."""
    return next(
        (
            g
            for g in grants
            if g.covers(
                tool=tool,
                subject_key=subject_key,
                principal=principal,
                thread_id=thread_id,
                agent_path=agent_path,
                now=now,
            )
        ),
        None,
    )
