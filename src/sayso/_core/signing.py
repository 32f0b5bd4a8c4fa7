"""The one way sayso signs what it sends: `webhooks:` events and services' decision webhooks alike.

Every delivery is a JSON POST `{"id", "type", "created_at", "data"}` with these headers, the
signature an HMAC-SHA256 over `"{timestamp}.{body}"` with the receiver's secret:

```text
Sayso-Event: request.decided
Sayso-Delivery: dlv_…              (the same on every retry and from every replica: drop duplicates by it)
Sayso-Timestamp: 1767225600        (seconds since the epoch, when this attempt was signed)
Sayso-Signature: sha256=<hex>
```

Receivers check the signature with `verify_signature` (or `verify_headers`) and refuse stale
timestamps.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

EVENT_HEADER = "Sayso-Event"
DELIVERY_HEADER = "Sayso-Delivery"
TIMESTAMP_HEADER = "Sayso-Timestamp"
SIGNATURE_HEADER = "Sayso-Signature"


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The `Sayso-Signature` value for `body` sent at `timestamp`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"


def delivery_body(*, delivery_id: str, event: str, created_at: float, data: Any) -> bytes:
    """The JSON body of one delivery (the same bytes on every attempt)."""
    body = {"id": delivery_id, "type": event, "created_at": created_at, "data": data}
    return json.dumps(body, separators=(",", ":")).encode()


def signed_headers(secret: str, body: bytes, *, event: str, delivery_id: str, now: float) -> dict[str, str]:
    """Every header of one signed attempt."""
    timestamp = int(now)
    return {
        "Content-Type": "application/json",
        "User-Agent": "sayso-webhooks",
        EVENT_HEADER: event,
        DELIVERY_HEADER: delivery_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(secret, timestamp, body),
    }


def signature_headers(secret: str, body: bytes, *, now: float) -> dict[str, str]:
    """Just the timestamp and signature headers, for a payload whose other headers its protocol sets (A2A push)."""
    timestamp = int(now)
    return {TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: sign(secret, timestamp, body)}


def verify_signature(
    secret: str,
    body: bytes,
    *,
    timestamp: str,
    signature: str,
    tolerance_seconds: float = 300,
    now: float | None = None,
) -> bool:
    """Whether a delivery is genuine and recent: for receivers of sayso's webhooks."""
    if not timestamp.isdigit():
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance_seconds:
        return False
    return hmac.compare_digest(sign(secret, int(timestamp), body), signature)


def verify_headers(
    secret: str, headers: Mapping[str, str], body: bytes, *, tolerance_seconds: float = 300, now: float | None = None
) -> bool:
    """`verify_signature` reading the timestamp and signature from a delivery's headers (any case)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    return verify_signature(
        secret,
        body,
        timestamp=lowered.get(TIMESTAMP_HEADER.lower(), ""),
        signature=lowered.get(SIGNATURE_HEADER.lower(), ""),
        tolerance_seconds=tolerance_seconds,
        now=now,
    )
