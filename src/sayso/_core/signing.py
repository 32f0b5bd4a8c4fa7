"""The one way sayso signs what it sends: `webhooks:` events, services' decision webhooks and A2A push alike.

Every delivery is signed in the Standard Webhooks format (https://www.standardwebhooks.com), by
the `standardwebhooks` library, so a receiver checks it with any stock verifier:

```text
webhook-id: dlv_…                  (the same on every retry and from every replica: drop duplicates by it)
webhook-timestamp: 1767225600      (seconds since the epoch, when this attempt was signed)
webhook-signature: v1,<base64 HMAC-SHA256 over "{id}.{timestamp}.{body}">
Sayso-Event: request.decided       (the body's `type`, for routing without parsing)
```

The key is the secret as Standard Webhooks defines it when it is one (`whsec_` and base64, what
`Webhook(secret)` reads); any other secret (an A2A push config's `token`, a passphrase) keys the
HMAC with its UTF-8 bytes, what `Webhook(secret.encode())` reads.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from standardwebhooks import Webhook

EVENT_HEADER = "Sayso-Event"
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"

SECRET_PREFIX = "whsec_"
"""How a Standard Webhooks secret starts: the rest is the base64 of the key."""


def webhook(secret: str) -> Webhook:
    """The library's signer and verifier for `secret` (see the module docstring for how it becomes a key).

    The library is imported here, on first signing: a command that sends nothing does not load it.
    """
    from standardwebhooks import Webhook

    return Webhook(secret) if secret.startswith(SECRET_PREFIX) else Webhook(secret.encode())


def secret_problem(secret: str) -> str | None:
    """Why `secret` cannot key a signature, or `None` when it can.

    A secret that starts with `whsec_` is a Standard Webhooks key, the rest its base64: one whose rest does not
    decode (or decodes to nothing) would fail every delivery signed with it, so it is refused where it is given.
    """
    if not secret.startswith(SECRET_PREFIX):
        return None if secret else "the secret is empty"
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :])
    except ValueError:
        key = b""
    if not key:
        return f"a secret starting with {SECRET_PREFIX!r} is a Standard Webhooks key, and what follows is not base64"
    return None


def delivery_body(*, delivery_id: str, event: str, created_at: float, data: Any) -> bytes:
    """The JSON body of one delivery (the same bytes on every attempt)."""
    body = {"id": delivery_id, "type": event, "created_at": created_at, "data": data}
    return json.dumps(body, separators=(",", ":")).encode()


def signature_headers(secret: str, body: bytes, *, message_id: str, now: float) -> dict[str, str]:
    """The three Standard Webhooks headers of one attempt at sending `body` under `message_id`."""
    timestamp = int(now)
    signature = webhook(secret).sign(
        msg_id=message_id, timestamp=datetime.fromtimestamp(timestamp, tz=UTC), data=body.decode()
    )
    return {ID_HEADER: message_id, TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: signature}


def signed_headers(secret: str, body: bytes, *, event: str, delivery_id: str, now: float) -> dict[str, str]:
    """Every header of one signed attempt at a sayso delivery."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "sayso-webhooks",
        EVENT_HEADER: event,
        **signature_headers(secret, body, message_id=delivery_id, now=now),
    }


def verify_headers(secret: str, headers: Mapping[str, str], body: bytes) -> bool:
    """Whether a delivery is genuine and recent (five minutes either way), for receivers that have sayso at hand."""
    from standardwebhooks import WebhookVerificationError

    try:
        webhook(secret).verify(body, dict(headers), json_parse=False)
    except (WebhookVerificationError, ValueError):  # ValueError: a malformed signature header
        return False
    return True
