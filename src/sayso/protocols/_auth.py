"""Who calls a protocol endpoint: bearer tokens to principal names, shared by the A2A and AG-UI adapters.

The runtime checks who may decide what (`Sayso.decide`); the adapters only need the caller's
name, and, for threads and tasks, whether that caller owns them or approves for their agent.
With no principals configured (local development mode) the one caller is `local`.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from fnmatch import fnmatchcase

from .._config import Config
from ._common import ProtocolRefusal

LOCAL = "local"


class Unauthenticated(ProtocolRefusal, PermissionError):
    """The call carries no bearer token, or one that names no principal."""


@dataclass(frozen=True, kw_only=True)
class Caller:
    """The authenticated caller of one protocol request."""

    name: str
    approver_for: tuple[str, ...] = ()
    local: bool = False

    def may_act_on(self, *, owner: str, agent: str) -> bool:
        """Whether the caller may read or answer a thread of `owner` with `agent`."""
        return self.local or owner == self.name or any(fnmatchcase(agent, glob) for glob in self.approver_for)


def authenticate(config: Config, authorization: str | None) -> Caller:
    """The caller an `Authorization: Bearer TOKEN` header names.

    Raises:
        Unauthenticated: principals are configured and the token is missing or names none.
    """
    if not config.principals:
        return Caller(name=LOCAL, local=True)
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("a bearer token is required: send 'Authorization: Bearer TOKEN'")
    given = token.strip().encode()
    found: Caller | None = None
    for principal in config.principals:
        expected = principal.bearer_token()
        # Compare against every token so the time taken does not say which one nearly matched.
        if expected and hmac.compare_digest(expected.encode(), given) and found is None:
            found = Caller(name=principal.name, approver_for=tuple(principal.approver_for))
    if found is None:
        raise Unauthenticated("the bearer token names no principal")
    return found
