"""The SQLite store's threads for writes: jobs one after another, off the event loop.

A durable commit waits for its fsync, so it must leave the event loop. A store has two such threads:
its committer, which commits what the loop's connection wrote (one call into SQLite, which releases
the interpreter's lock for the whole write and fsync), and its writer, which runs whole write
transactions that found SQLite's lock held by another process and must wait for it. anyio's
`to_thread` did this before, through its worker pool, a capacity limiter of one and a cancel scope
per call: ~2.5× the CPU per hop of a queue and a future (bench/ANALYSIS.md), and a SQLite store
makes three hops per approve cycle.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from . import _fork

T = TypeVar("T")

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", contextvars.Context, Callable[[], Any]]


class WriterThread:
    """One thread that runs the jobs handed to it in order, each in its caller's context."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] | None = None
        self._generation = -1
        """The process (`_fork.generation`) the thread runs in: a child forked from it has no such thread, and starts
        its own."""

    async def run(self, job: Callable[[], T]) -> T:
        """What `job` returns (or raises), once it ran on the thread after every job handed in before it."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        if self._jobs is None or self._generation != _fork.generation:
            self._jobs, self._generation = queue.SimpleQueue(), _fork.generation
            threading.Thread(target=_serve, args=(self._jobs,), name=self._name, daemon=True).start()
        self._jobs.put((loop, done, contextvars.copy_context(), job))
        return await done

    def stop(self) -> None:
        """Let the thread end once the jobs handed in before have run; a later `run` starts a new one.

        Each thread has its own queue, so a new thread never takes a job while the old one still runs one.
        """
        if self._jobs is not None:
            self._jobs.put(None)
            self._jobs = None


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while (item := jobs.get()) is not None:
        loop, done, context, job = item
        try:
            result, error = context.run(job), None
        except BaseException as exc:  # handed back to the caller, as if the job had run on its own task
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(_settle, done, result, error)
        except RuntimeError:
            pass  # the caller's event loop is closed: nobody waits for this outcome


def _settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.cancelled():
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)
