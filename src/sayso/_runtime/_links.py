"""Mailed links: made for one request and one principal, opened (never deciding), and decided through once.

A link is signed with the channels' link key (`_core/links.py`), expires with its request or
sooner, and is bound to the arguments the mail showed. Opening it checks all of that, and that its
principal may decide the request (the one access rule, before anything of the request is shown), and
says plainly why a link no longer works (decided, expired, changed, used); deciding through it checks
the same, records its use (one use, across replicas) and decides as the principal it was sent to,
through the one decide verb.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .._core.deciding import check_allowed, check_feedback, check_same_subject, keep_secrets, needs_votes
from .._core.decisions import Approve, Decision, check_decision, expiry_said
from .._core.limits import check_decision as check_size
from .._core.links import LinkClaims, args_digest, read_link, sign_link, token_id
from .._core.requests import Request
from .._core.votes import Vote, same_as_shown, standing_args
from .._store import RequestState
from ..exceptions import AlreadyDecided, LinkRefused, RequestExpired
from ._cycle import Cycle
from ._kernel import Kernel
from ._results import DecideResult, request_json
from ._runner import DEFAULTS
from ._verbs import decide as _decide
from ._verbs.rules import approval_facts

USED_LINKS = "channels.links.used"
"""The marks' namespace of links decided through: a token's id, once."""

_CLOSED = "this request is closed: its run went on without it"
"""What a link to a request closed unanswered says (a forced resume, a new message, a cancel)."""


@dataclass(frozen=True, kw_only=True)
class LinkView:
    """What an opened link shows: the request as it stands, and whom the link decides as."""

    state: RequestState
    principal: str
    expires_at: float


@dataclass(frozen=True, kw_only=True)
class MailedLink:
    """A link's token and the request as its mail shows it, read together: the link approves what is shown."""

    token: str
    request: Mapping[str, Any]
    """The request as every interface shows it, with its quorum: the arguments the token's digest is of."""


def mail_link(k: Kernel, state: RequestState, principal: str) -> MailedLink:
    """The link for `principal` and the request its mail shows, from the one `state` (see `MailedLink`).

    A mail built from an older read (its notice waited while an edit vote landed) would show arguments
    other than the ones its link approves.
    """
    token = make_link(k, state.request, principal, state.votes)
    return MailedLink(token=token, request=request_json(state.request, votes=state.votes))


def make_link(k: Kernel, request: Request, principal: str, votes: tuple[Vote, ...] = ()) -> str:
    """The token of a link that lets `principal` decide `request`, until it or the link's time runs out.

    Bound to the arguments the `votes` are about now (an edit vote restarted the quorum on its own).

    Raises:
        ConfigError: no link key is configured.
    """
    ttl = k.config.channels.email.link_ttl_seconds if k.config.channels.email else 7 * 86_400
    until = k.clock() + ttl if request.expires_at is None else min(request.expires_at, k.clock() + ttl)
    claims = LinkClaims(
        request_id=request.request_id,
        principal=principal,
        digest=args_digest(standing_args(request, votes)),
        expires_at=until,
    )
    return sign_link(_key(k), claims)


async def open_link(k: Kernel, token: str) -> LinkView:
    """The request a link is for, once the link is checked; decides nothing.

    Raises:
        LinkRefused: the link is forged or cut, expired, used, changed, or its request is decided.
        RequestNotFound, NotAllowed: the principal it was mailed to may not decide the request (`check_allowed`).
    """
    claims = read_link(_key(k), token)
    if claims is None:
        raise LinkRefused("invalid", "this link is not one sayso sent, or it was cut short; open the whole link")
    state = await k.store.get_request(claims.request_id)
    if state is None:
        raise LinkRefused("invalid", "the request this link was for no longer exists")
    # The access rule of deciding, before anything of the request is said: a link mailed to someone who may not
    # see the request shows no page to decide on, nor who decided it.
    check_allowed(state.request, k.principal(claims.principal))
    record = state.decision
    if record is not None and record.by == "expiry":  # as before the sweep recorded what its timeout does
        raise LinkRefused("expired", expiry_said(state.request))
    if record is not None and record.closed:  # a skip recorded as its run went on without it: no one decided it
        raise LinkRefused("decided", _CLOSED)
    if record is not None:
        who = f" by {record.principal}" if record.principal else ""
        raise LinkRefused("decided", f"this request was already decided ({record.decision.kind}{who})")
    if await k.store.get_mark(USED_LINKS, token_id(token)) is not None:
        raise LinkRefused("used", "this link was already used; each link decides once")
    now = k.clock()
    if state.request.expires_at is not None and now >= state.request.expires_at:  # what its timeout does, too
        raise LinkRefused("expired", expiry_said(state.request))
    if now >= claims.expires_at:
        raise LinkRefused("expired", "this link has expired, and with it the chance to decide from this mail")
    if state.pause_status != "open":
        raise LinkRefused("decided", _CLOSED)
    if args_digest(standing_args(state.request, state.votes)) != claims.digest:  # an edit vote voids older links
        raise LinkRefused("changed", "this request changed since the mail was sent; decide it where it is shown now")
    return LinkView(state=state, principal=claims.principal, expires_at=claims.expires_at)


async def decide_by_link(c: Cycle, token: str, decision: Decision) -> DecideResult:
    """Decide a link's request as the principal it was mailed to (`via="email"`), using the link up.

    The decision is checked against the request before the link is used, so a wrong answer (an edit
    the tool's schema refuses, one that changes what the approval covers, a reason over the size limit)
    leaves both the request and the link open.

    Raises:
        LinkRefused: as `open_link`, or the link was used meanwhile by another click.
        DecisionRefused: the decision does not fit the request, or is not the principal's to take.
    """
    k = c.k
    view = await open_link(k, token)
    request = view.state.request  # `open_link` checked that its principal may decide it
    if needs_votes(request) and isinstance(decision, Approve) and decision.edited_args is None:
        # The arguments the mail showed (`open_link` checked they stand): an edit vote landing before this one is
        # recorded is never approved unseen; the vote starts a round on these instead, as Slack's Approve does.
        decision = replace(decision, edited_args=dict(standing_args(request, view.state.votes)))
    check_size(request.request_id, decision, k.limits)  # the answer's text as the decide verb measures it
    check_decision(request, keep_secrets(request, decision), existing=view.state.decision, now=k.clock())
    shown = decision  # as the judge reads it: in a quorum, the arguments as they stand are no edit
    if needs_votes(request) and isinstance(decision, Approve):
        shown = same_as_shown(request, view.state.votes, decision)
    subject, feedback = await approval_facts(c, request.request_id, shown)
    check_feedback(request, shown, feedback)  # the rest of what the decide verb refuses, before the one use
    check_same_subject(request, shown, subject)
    if not await k.store.claim_mark(USED_LINKS, token_id(token), view.principal):
        raise LinkRefused("used", "this link was already used; each link decides once")
    try:
        return await _decide.decide(
            c,
            request.request_id,
            decision,
            principal=k.principal(view.principal),
            resume=True,
            via="email",
            options=DEFAULTS,
        )
    except RequestExpired as exc:
        raise LinkRefused("expired", exc.problem) from exc
    except AlreadyDecided as exc:
        raise LinkRefused("decided", "this request was decided meanwhile; the first decision wins") from exc


def _key(k: Kernel) -> bytes:
    return k.config.channels.link_key(k.config.audit.key())
