"""The SQLite store's checkpointer: the write-ahead log copied into the database file off the writers' path.

SQLite's own checkpoint runs inside the commit that takes the log past 1,000 pages: that commit
copies ~4 MB into the database file and fsyncs it before it returns, and every write queued behind
it waits too. An approve cycle writes tens of pages, so one decision in a few
dozen paid that (bench/ANALYSIS.md, "SQLite's checkpoint off the commit"). Here the writers'
connections never checkpoint; a thread of the store's does, with a connection of its own, a little
after writes happened: a PASSIVE checkpoint waits for no writer or reader (SQLite releases the GIL
while it copies and syncs), and a commit goes on appending to the log meanwhile.
"""

from __future__ import annotations

import sqlite3
import threading

from . import _fork

PAUSE = 0.25
"""Seconds between two checkpoints while writes go on: a few of SQLite's 1,000-page checkpoints' worth per second
at the store's busiest, and the log stays small."""


class Checkpointer:
    """Checkpoints one SQLite database's log in a thread of its own, after writes and never while idle."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._wrote = threading.Event()
        self._stopped = threading.Event()
        self._generation = -1
        """The process (`_fork.generation`) the thread runs in: a child forked from it has no such thread, and starts
        its own."""

    def wrote(self) -> None:
        """Say that a commit added to the log (cheap: called after each write)."""
        if self._generation != _fork.generation:
            # New events too: a child must not wait on a lock the parent's thread held when it forked.
            self._generation, self._wrote, self._stopped = _fork.generation, threading.Event(), threading.Event()
            thread = threading.Thread(
                target=_serve, args=(self._path, self._wrote, self._stopped), name="sayso-sqlite-checkpoint"
            )
            thread.daemon = True
            thread.start()
        self._wrote.set()

    def stop(self) -> None:
        """Let the thread end after the checkpoint it runs, if any: closing the last connection checkpoints the rest."""
        self._stopped.set()
        self._wrote.set()
        self._generation = -1


def _serve(path: str, wrote: threading.Event, stopped: threading.Event) -> None:
    with _fork.in_sqlite():
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=0")  # a checkpoint already running elsewhere: the next pass does it
    try:
        while True:
            wrote.wait()
            if stopped.wait(PAUSE):  # gather a few commits' pages into one pass
                return
            wrote.clear()
            with _fork.in_sqlite():
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error:
                    pass  # the log stays as it is until the next pass; a write never depends on this one
    finally:
        with _fork.in_sqlite():
            conn.close()
