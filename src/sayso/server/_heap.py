"""The served process's heap: long-lived objects frozen out of its full collections, and few malloc arenas.

A `sayso serve` process holds a few hundred thousand long-lived objects: modules, pydantic
schemas, and what pydantic-ai and the protocol libraries load on the first runs. CPython's full
collection walks every one of them, and under load it runs about once a second (the runs in
flight keep promoting objects into the oldest generation): on the bench machine each took
~190 ms, stalling every request in flight — that was the server's p99. `gc.freeze()` moves the
objects alive at that moment out of the collector's sight; objects made afterwards are collected
as before, and frozen ones are still freed when their last reference goes.

Freezing is done only by the process's owner (`sayso serve`), never by the library, and only a
few times: a reference cycle frozen while alive is never collected once it dies, so each freeze
may keep a little of what was in flight at that moment (the runs then being served).

Its C heap is the other half (`limit_malloc_arenas`): glibc gives each thread that allocates its
own arena, up to eight per core, and a served process runs a few dozen short-lived worker threads
(anyio's, for SQLite's writes and the like). Each arena keeps the memory its thread freed, in pieces
the next thread does not reuse, so under steady load the resident size kept growing (the soak:
~8 MB/min, from ~210 to ~275 MB in six minutes) while Python's own objects stayed flat. Two arenas
hold it level; threads contend little on them, as most of their work holds the GIL.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import os

logger = logging.getLogger("sayso.server")

UNFROZEN_LIMIT = 50_000
"""Objects in the oldest generation, outside the frozen ones, that make the next check freeze them."""

MAX_FREEZES = 4
"""Freezes in a process's life: at start-up, then as lazily loaded code and caches settle."""


MALLOC_ARENAS = 2
"""How many malloc arenas a served process's threads share (glibc's `M_ARENA_MAX`)."""

_M_ARENA_MAX = -8
"""glibc's `mallopt` parameter for the arena limit (malloc.h)."""


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Let the process's threads share `arenas` malloc arenas (glibc only; the `MALLOC_ARENA_MAX` variable wins).

    Called before the server starts its threads; whether the limit was set.
    """
    if "MALLOC_ARENA_MAX" in os.environ:
        return False  # the operator chose
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False  # not glibc (musl, macOS): nothing to limit
    return bool(mallopt(_M_ARENA_MAX, arenas))


class HeapSettler:
    """Freezes the oldest generation when it has grown past `unfrozen_limit` objects, at most `max_freezes` times."""

    def __init__(self, *, unfrozen_limit: int = UNFROZEN_LIMIT, max_freezes: int = MAX_FREEZES) -> None:
        self.unfrozen_limit = unfrozen_limit
        self.max_freezes = max_freezes
        self.freezes = 0

    def check(self) -> bool:
        """Freeze what the oldest generation holds if it is past the limit; whether this call froze it.

        Counting the generation is a walk of its list (milliseconds); the freeze is preceded by a
        full collection, so garbage already there is freed rather than frozen.
        """
        if self.freezes >= self.max_freezes or len(gc.get_objects(generation=2)) < self.unfrozen_limit:
            return False
        gc.collect()
        gc.freeze()
        self.freezes += 1
        logger.debug("froze %d long-lived objects out of full collections", gc.get_freeze_count())
        return True
