"""`WholeCall`: an approved call a cancellation cannot stop is waited out, so its result is recorded, not lost.

pydantic-ai runs each tool call in a task of its own and cancels that task natively when its run is
cancelled (Ctrl-C, a client gone, a server stopping). On asyncio a native cancellation goes through
anyio's shields, so the wait for a sync tool's thread ended at once while the thread ran the call to
its end: the result was dropped, and carried on later the call read "outcome unknown" although it had
run. A `WholeCall` runs the call in a task of its own and passes a cancellation on as a cancellation
of that task's anyio scope: an async call is still cut off where it waits (its outcome unknown, as it
should be), and a sync call's thread is waited for, its result handed back to be recorded before the
cancellation goes on. Nothing is run again: only a call that returned has a result to record.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Generic, TypeVar

import anyio

T = TypeVar("T")


class WholeCall(Generic[T]):
    """One call, awaited as a plain `await` would, but waited out when the awaiter is cancelled."""

    def __init__(self, call: Coroutine[Any, Any, T]) -> None:
        self._scope = scope = anyio.CancelScope()

        async def run() -> T:
            with scope:
                return await call
            raise asyncio.CancelledError  # cut off where it waited: it has no result

        self._task = asyncio.get_running_loop().create_task(run())

    async def result(self) -> T:
        """What the call returns (or raises), as `await call` gives it.

        Raises:
            asyncio.CancelledError: the awaiter was cancelled; `ended` then says how the call ended.
        """
        return await asyncio.shield(self._task)

    async def ended(self) -> asyncio.Task[T]:
        """After `result` was cancelled: the call, stopped if it can be and else waited for, once it has ended.

        The task holds its result, its error, or (cut off where it waited) its cancellation. A second
        native cancellation of the awaiter ends the wait (the call is then left to finish unseen).
        """
        self._scope.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait((self._task,))
        return self._task
