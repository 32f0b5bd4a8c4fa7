"""HMAC-SHA256 signatures for the webhooks sayso sends, so a receiver can tell them from forgeries.

The signature covers the timestamp and the exact body: `sha256=HEX(HMAC(secret, f"{ts}." + body))`,
sent as `X-Sayso-Signature` beside `X-Sayso-Timestamp`; receivers refuse stale timestamps.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

SIGNATURE_HEADER = "X-Sayso-Signature"
TIMESTAMP_HEADER = "X-Sayso-Timestamp"


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature of `body` sent at `timestamp`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def signature_headers(secret: str, body: bytes, *, now: float) -> dict[str, str]:
    """The headers that sign one delivery."""
    timestamp = int(now)
    return {TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: sign(secret, timestamp, body)}


def verify_signature(
    secret: str, headers: Mapping[str, str], body: bytes, *, now: float, tolerance: float = 300
) -> bool:
    """Whether a delivery is authentic and fresh (what a receiver should check)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ts = lowered.get(TIMESTAMP_HEADER.lower(), "")
    if not raw_ts.isdigit() or abs(now - int(raw_ts)) > tolerance:
        return False
    return hmac.compare_digest(lowered.get(SIGNATURE_HEADER.lower(), ""), sign(secret, int(raw_ts), body))
