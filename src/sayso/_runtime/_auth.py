"""Who calls an HTTP interface: a bearer token becomes a `Principal` here, once, for REST, A2A and AG-UI.

The server's REST dependency and the A2A and AG-UI endpoints all call `authenticate`; nothing
else reads the `Authorization` header. A token names a principal; what that principal may do
is the runtime's business (`sayso._core.access`, applied inside its verbs), so edges pass the
principal on and never check access themselves. With no principals configured (local
development mode) every caller is `local`.

It lives in the runtime (and `sayso._runtime` exports it) because every edge needs it and no edge
may import another: REST, A2A and AG-UI each import it from the runtime's public names.
"""

from __future__ import annotations

import hmac
import logging
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from .._config.file import shared_token_message, shared_tokens
from .._core.access import LOCAL_NAME, Principal
from ..exceptions import Unauthenticated

if TYPE_CHECKING:
    from ._facade import Sayso

logger = logging.getLogger("sayso.server")

BEARER = "bearer"


class Authenticator:
    """Maps bearer tokens to principals of one runtime; with no principals configured, everyone is `local`.

    Tokens are read once, when the authenticator is built (from `token` or `token_env`); a token two
    principals share names neither.
    """

    def __init__(self, sayso: Sayso) -> None:
        self._sayso = sayso
        self.local_mode = not sayso.config.principals
        """True when no principals are configured: every caller is `local` and may do everything."""
        self._by_token: list[tuple[bytes, str]] = []
        shared = shared_tokens(sayso.config.principals)
        # Loading refuses a shared token; read again here (the environment may have changed since), one
        # still shared signs in as nobody rather than as whichever principal comes first.
        unusable = {sayso.config.principals[index].bearer_token() for index, _, _ in shared}
        for _, name, earlier in shared:
            logger.error("%s; neither signs in with it", shared_token_message(name, earlier))
        for config in sayso.config.principals:
            token = config.bearer_token()
            if not token:
                # `sayso check` and `sayso serve`'s start already warn of it, naming the file and line.
                logger.debug("principal %r has no token (token_env unset?); it cannot sign in", config.name)
                continue
            if token in unusable:
                continue
            self._by_token.append((token.encode(), config.name))

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal an `Authorization: Bearer TOKEN` header names.

        Raises:
            Unauthenticated: principals are configured and the token is missing or names none.
        """
        if self.local_mode:
            return self._sayso.principal(LOCAL_NAME)
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != BEARER or not token.strip():
            raise Unauthenticated("a bearer token is required: send 'Authorization: Bearer TOKEN'")
        given = token.strip().encode()
        found: str | None = None
        for expected, name in self._by_token:
            # Compare against every token so the time taken does not say which one nearly matched.
            if hmac.compare_digest(expected, given) and found is None:
                found = name
        if found is None:
            raise Unauthenticated("the bearer token names no principal")
        return self._sayso.principal(found)


_AUTHENTICATORS: WeakKeyDictionary[Sayso, Authenticator] = WeakKeyDictionary()


def authenticator(sayso: Sayso) -> Authenticator:
    """The one authenticator of a runtime, shared by every interface that serves it."""
    found = _AUTHENTICATORS.get(sayso)
    if found is None:
        found = _AUTHENTICATORS[sayso] = Authenticator(sayso)
    return found


def authenticate(sayso: Sayso, authorization: str | None) -> Principal:
    """The caller of one HTTP request to `sayso`, from its `Authorization` header.

    Raises:
        Unauthenticated: principals are configured and the token is missing or names none.
    """
    return authenticator(sayso).authenticate(authorization)
