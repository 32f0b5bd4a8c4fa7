"""A fork waits until no thread of the SQLite store is inside SQLite, and a child opens connections of its own.

SQLite takes process-wide mutexes (its allocator's, its file-locking table's) for moments inside most
calls. A child forked while a thread of the parent's holds one inherits it held by a thread it does not
have, and its first SQLite call waits forever (seen once: a child forked mid-checkpoint hung on its first
write). And SQLite forbids using, in a child, a connection opened before the fork: its locks are the
parent's. So the store's threads (the writer, the checkpointer, SQLAlchemy's) say when they enter and
leave SQLite here, a fork (`os.register_at_fork`) waits for the last to leave and lets none in until it
is done, and `generation` changes in the child, which tells the store to forget the parent's connections.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Guard:
    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.inside = 0
        self.forking = False


_guard = _Guard()

generation = 0
"""How many forks this process is from the one that imported the store: a connection opened under another
generation belongs to a parent process."""

_abandoned: list[object] = []
"""The parent's connections a child stopped using. Kept, never closed: closing one in the child would act on
locks and files the parent still holds."""


@contextmanager
def in_sqlite() -> Iterator[None]:
    """Wrap a thread's stretch of SQLite calls: a fork waits for it to end, and none starts while one forks."""
    guard = _guard
    with guard.cond:
        while guard.forking:
            guard.cond.wait()
        guard.inside += 1
    try:
        yield
    finally:
        with guard.cond:
            guard.inside -= 1
            if not guard.inside:
                guard.cond.notify_all()


def abandon(*conns: object) -> None:
    """Keep a parent's connections from being closed (or used) in this child."""
    _abandoned.extend(c for c in conns if c is not None)


def _before() -> None:
    guard = _guard
    guard.cond.acquire()
    guard.forking = True
    while guard.inside:
        guard.cond.wait()
    # The lock is held through the fork: no thread enters SQLite until it is released on both sides.


def _after_in_parent() -> None:
    _guard.forking = False
    _guard.cond.notify_all()
    _guard.cond.release()


def _after_in_child() -> None:
    global _guard, generation
    _guard = _Guard()  # the threads counted before the fork are not in this process
    generation += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before, after_in_parent=_after_in_parent, after_in_child=_after_in_child)
