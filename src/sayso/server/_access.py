"""Who is calling (bearer tokens → principals) and what they may touch (§7).

The runtime refuses a decision from anyone but the thread's owner or an approver for the
thread's root agent (`NotAllowed`); the server applies the same rule, as a pure check over
plain data, to what it lists and shows: threads, runs and requests. Grants are their
principal's own; an admin (approver for `*`) sees and revokes every grant, and approvers
read the audit log. In local development mode (no principals configured) the one caller is
`local` and may do everything.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from .._config import PrincipalConfig
from ..exceptions import SaysoError

logger = logging.getLogger("sayso.server")

LOCAL_PRINCIPAL = "local"
"""The principal name used in local development mode."""


class Unauthorized(SaysoError, PermissionError):
    """The request carries no bearer token, or one that names no principal."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(problem)

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return self.__class__, (self.problem,)


class AccessDenied(SaysoError, PermissionError):
    """The principal is known but may not act on this thread or run."""

    def __init__(self, subject_id: str, problem: str) -> None:
        self.subject_id = subject_id
        self.problem = problem
        super().__init__(f"{subject_id!r}: {problem}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return self.__class__, (self.subject_id, self.problem)


@dataclass(frozen=True, kw_only=True)
class Principal:
    """The authenticated caller of one HTTP request."""

    name: str
    approver_for: tuple[str, ...] = ()
    """Agent names or globs whose requests this principal may decide on any thread."""
    local: bool = False
    """True in local development mode, where the one caller may do everything."""

    @property
    def is_admin(self) -> bool:
        """Whether this principal approves for every agent (`approver_for: ['*']`): it sees every grant."""
        return self.local or "*" in self.approver_for

    @property
    def is_approver(self) -> bool:
        """Whether this principal approves for some agent: it may read the audit log and run expiry."""
        return self.local or bool(self.approver_for)

    def approves(self, agent_path: str) -> bool:
        """Whether this principal has the approver role for the root agent of `agent_path` (as the runtime checks)."""
        if self.local:
            return True
        root = agent_path.split("/")[0]
        return any(fnmatchcase(root, glob) for glob in self.approver_for)

    def may_act_on(self, *, owner: str, agent_path: str) -> bool:
        """Whether this principal may see a thread of `owner` and what it asks through `agent_path`.

        The same rule the runtime applies to decisions, so what is listed is what may be decided.
        """
        return self.local or owner == self.name or self.approves(agent_path)

    def approved_agents(self, agents: Iterable[str]) -> list[str] | None:
        """The configured agents this principal approves for; `None` means every agent."""
        if self.local or "*" in self.approver_for:
            return None
        return [a for a in agents if self.approves(a)]


LOCAL = Principal(name=LOCAL_PRINCIPAL, local=True)


class Authenticator:
    """Maps bearer tokens to principals; with no principals configured, everyone is `local`."""

    def __init__(self, principals: Sequence[PrincipalConfig]) -> None:
        self.local_mode = not principals
        self._by_token: list[tuple[bytes, Principal]] = []
        for config in principals:
            token = config.bearer_token()
            if not token:
                logger.warning("principal %r has no token (token_env unset?); it cannot sign in", config.name)
                continue
            principal = Principal(name=config.name, approver_for=tuple(config.approver_for))
            self._by_token.append((token.encode(), principal))

    def authenticate(self, token: str | None) -> Principal:
        """The principal a bearer token names.

        Raises:
            Unauthorized: principals are configured and the token is missing or unknown.
        """
        if self.local_mode:
            return LOCAL
        if not token:
            raise Unauthorized("a bearer token is required: send 'Authorization: Bearer TOKEN'")
        given = token.encode()
        found: Principal | None = None
        for expected, principal in self._by_token:
            # Compare against every token so the time taken does not say which one nearly matched.
            if hmac.compare_digest(expected, given) and found is None:
                found = principal
        if found is None:
            raise Unauthorized("the bearer token names no principal")
        return found
