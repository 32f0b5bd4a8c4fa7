"""`Heartbeat`: one timer per runtime that keeps the lease of every run it works on alive.

A running run is held by one runtime (its lease holder) until a deadline the holder keeps moving;
the heartbeat moves it for every run this runtime works on at once. What a lease is, and taking
over a run whose holder died, is `_leases`'.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

Renew = Callable[[list[str]], Coroutine[Any, Any, None]]
"""Moves the lease deadline of the given runs on (the kernel's store write)."""


class Heartbeat:
    """One timer per runtime that keeps the lease of every run the runtime works on alive.

    A run segment only registers while it works (`_leases.holding`); the timer runs while at least
    one is registered, and each beat renews all of them, so a segment costs two dictionary updates
    instead of a task of its own.
    """

    def __init__(self, renew: Renew, every: Callable[[], float]) -> None:
        self.held: dict[str, int] = {}
        """Runs being worked on, with how many segments of this runtime hold each."""
        self._renew = renew
        self._every = every
        self._timer: asyncio.TimerHandle | None = None
        self._beats: set[asyncio.Task[None]] = set()

    def hold(self, run_id: str) -> None:
        self.held[run_id] = self.held.get(run_id, 0) + 1
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._every(), self._beat)

    def release(self, run_id: str) -> None:
        left = self.held.pop(run_id) - 1
        if left:
            self.held[run_id] = left
        elif not self.held and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _beat(self) -> None:
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._renew(list(self.held)))
        self._beats.add(task)
        task.add_done_callback(self._beats.discard)
        self._timer = loop.call_later(self._every(), self._beat)
