"""When a delivery that failed (a webhook, a notice, an A2A push) is tried again.

Waits double from a destination's `backoff_seconds` and stop growing at an hour, so a receiver or
an SMTP server down for an afternoon still gets what was kept for it, and is tried every hour
until its attempts run out (the default ones span about half a day).
"""

from __future__ import annotations

MAX_WAIT_SECONDS = 3600.0
"""The longest wait between two attempts at one delivery."""

DEFAULT_ATTEMPTS = 24
"""Attempts per delivery unless configured: the doubling waits, then hourly ones, for about half a day."""


def retry_wait(backoff_seconds: float, attempt: int) -> float:
    """The wait after failed attempt number `attempt`: `backoff_seconds`, doubled each time, at most an hour."""
    return min(MAX_WAIT_SECONDS, backoff_seconds * 2.0 ** min(attempt - 1, 64))
