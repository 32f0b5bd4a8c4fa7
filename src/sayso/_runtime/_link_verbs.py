"""`LinkVerbs`: the facade's verbs of mailed links, mixed into `Sayso`; their work is `_links`'.

Apart from `_links` so that a process that never mails or opens a link (`sayso decide`, `sayso run`) does
not load it nor the link tokens beneath it (`_core/links.py`): each verb imports `_links` when first called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .._core.decisions import Decision
from ..exceptions import RequestNotFound
from ._cycle import Cycle
from ._kernel import Kernel
from ._results import DecideResult

if TYPE_CHECKING:
    from ._links import LinkView, MailedLink


class LinkVerbs:
    """The facade's verbs of mailed links (mixed into `Sayso`)."""

    _k: Kernel
    _cycle: Cycle
    _check_open: Callable[[], None]
    """`Reading`'s: the runtime must be open."""

    async def mail_link(self, request_id: str, *, principal: str) -> MailedLink:
        """A link token that lets `principal` decide the request once, and the request as its mail shows it.

        The two are read together: the token (`/v1/links/{token}`) is bound to the arguments the mail shows.

        It expires with the request, or after `channels.email.link_ttl_seconds` if sooner, and stops
        working once the request is decided or its arguments change.

        Raises:
            RequestNotFound: no request has this id.
            ConfigError: no link key is configured (`channels.link_key_env`, or the audit key).
        """
        from . import _links

        state = await self._k.store.get_request(request_id)
        if state is None:
            raise RequestNotFound(request_id)
        return _links.mail_link(self._k, state, principal)

    async def open_link(self, token: str) -> LinkView:
        """The request a mailed link is for, with whom it decides as; opening a link never decides.

        Raises:
            LinkRefused: forged, expired, used, changed, or its request was decided (`problem` says which).
            RequestNotFound, NotAllowed: the principal it was mailed to may not see, or may not decide, the request.
        """
        self._check_open()
        from . import _links

        return await _links.open_link(self._k, token)

    async def decide_by_link(self, token: str, decision: Decision) -> DecideResult:
        """Decide through a mailed link: as the principal it was sent to, `via="email"`, once.

        Raises:
            LinkRefused: as `open_link`, or the link was used meanwhile.
            InvalidDecision: the decision does not fit the request; the request and the link stay open.
            NotAllowed: the principal the link was mailed to may not decide this request.
        """
        self._check_open()
        from . import _links

        return await _links.decide_by_link(self._cycle, token, decision)
