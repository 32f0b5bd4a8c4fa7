"""One-click links mailed to approvers: signed, expiring, bound to one request, one principal and its arguments.

A link's token carries its claims in the clear (base64url JSON) and an HMAC-SHA256 over them with
the channels' link key, so any replica checks it without a lookup. Whether it was used is the
store's to say (the runtime records it); what is pure is here: signing, reading and the digest.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .audit import canonical_json
from .requests import Request
from .votes import Vote

_DOMAIN = b"sayso-link/1."


@dataclass(frozen=True, kw_only=True)
class LinkClaims:
    """What a link says: which request, who decides through it, what they were shown, and until when."""

    request_id: str
    principal: str
    """The principal the link was mailed to: a decision through it is theirs, checked by the one access rule."""
    digest: str
    """`args_digest` of the arguments the mail showed: a request whose arguments changed refuses the link."""
    expires_at: float
    """Seconds since the epoch after which the link is refused."""


def args_digest(args: Any) -> str:
    """A digest of a call's arguments, the same for the same JSON whatever its key order."""
    return hashlib.sha256(canonical_json(args).encode()).hexdigest()[:32]


def args_with_digest(request: Request, votes: Sequence[Vote], digest: str) -> Mapping[str, Any] | None:
    """Which of the arguments `request` was shown with (the proposed ones, or an edit vote's) have `digest`.

    A message that carries the digest of the arguments it showed approves those, whatever an edit made of them
    since; `None`: none of them (the message is not about this request).
    """
    shown = [request.args, *(v.edited_args for v in votes if v.edited_args is not None)]
    return next((args for args in shown if args_digest(args) == digest), None)


def sign_link(key: bytes, claims: LinkClaims) -> str:
    """The token of a link: its claims and their MAC, URL-safe."""
    body = _b64(json.dumps(asdict(claims), separators=(",", ":"), sort_keys=True).encode())
    return f"{body}.{_b64(_mac(key, body))}"


def read_link(key: bytes, token: str) -> LinkClaims | None:
    """The claims of a token this key signed, or `None` for anything else (forged, cut, not a token)."""
    body, sep, mac = token.partition(".")
    if not sep or len(token) > 2_000:
        return None
    try:
        given = _unb64(mac)
        if not hmac.compare_digest(given, _mac(key, body)):
            return None
        raw = json.loads(_unb64(body))
        return LinkClaims(
            request_id=str(raw["request_id"]),
            principal=str(raw["principal"]),
            digest=str(raw["digest"]),
            expires_at=float(raw["expires_at"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


def token_id(token: str) -> str:
    """A short stable name of a token, under which its use is recorded."""
    return hashlib.sha256(token.encode()).hexdigest()[:40]


def _mac(key: bytes, body: str) -> bytes:
    return hmac.new(key, _DOMAIN + body.encode(), hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
