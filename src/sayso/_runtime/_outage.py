"""`Outage`: what a server's background loop logs while the store (or anything it polls) keeps failing.

A loop that polls every second (the outbox senders, A2A pushes, the sweeps) and logged each
failure with its traceback filled the log with the same traceback every second for as long as the
database was away, burying what the operator needs: when it started, that it is still failing, and
when it ended. An `Outage` logs the first failure with its traceback, then one line a minute while
it lasts (how many attempts failed since), and one line when the loop's work succeeds again. A
failure that reads differently from the last one logged is logged in full: it is news.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable

REMIND_SECONDS = 60.0
"""How often a failure that goes on is logged again (one line, no traceback)."""


class Outage:
    """One loop's failures of one kind of work, logged once as they start, then sparingly, then as they end."""

    def __init__(
        self,
        log: logging.Logger,
        work: str,
        *,
        remind_seconds: float = REMIND_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self._work = work
        self._remind = remind_seconds
        self._clock = clock
        self._failures = 0
        self._since = 0.0
        self._told = 0.0
        self._last = ""

    def failed(self, retry_seconds: float) -> None:
        """The work just failed (call it from the `except` block: the first failure logs its traceback)."""
        now = self._clock()
        error = sys.exc_info()[1]
        said = f"{type(error).__name__}: {error}"
        self._failures += 1
        if self._failures == 1:
            self._since = now
        if self._failures == 1 or said != self._last:
            self._told, self._last = now, said
            self._log.exception("%s failed; retrying every %ss", self._work, retry_seconds)
        elif now - self._told >= self._remind:
            self._told = now
            self._log.error(
                "%s still failing: %d attempts in %.0fs; retrying every %ss",
                self._work,
                self._failures,
                now - self._since,
                retry_seconds,
            )

    def succeeded(self) -> None:
        """The work went through: an outage that was logged is logged as over."""
        if self._failures:
            self._log.warning(
                "%s works again, after %d failed attempts in %.0fs",
                self._work,
                self._failures,
                self._clock() - self._since,
            )
            self._failures, self._last = 0, ""
