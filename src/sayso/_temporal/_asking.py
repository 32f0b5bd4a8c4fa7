"""Waiting on a run's workflow from outside it: an Update asked again while the cluster is out of reach for a while.

A front reading its call's text (`_text.listen`) and a segment's activity waiting for its loop
(`_loop.TemporalLoop`) both wait on an Update of the run's workflow, under an Update id that
names what they ask: asked again under it, the workflow answers what it answered before, never
runs it a second time. So a wait that fails because the cluster restarts or the network drops for
a moment (`transient`) is asked again rather than failing the call or the run; a wait cancelled
stays a cancellation (`cancelled_as_cancelled`). The rule for which failures pass lives here, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError, RPCStatusCode

_T = TypeVar("_T")

_FIRST_PAUSE, _LAST_PAUSE = 0.2, 5.0  # seconds between two failed asks: doubled each time, up to the last

PASSING = frozenset(
    {
        RPCStatusCode.UNAVAILABLE,
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.RESOURCE_EXHAUSTED,
        RPCStatusCode.ABORTED,
        RPCStatusCode.INTERNAL,
        RPCStatusCode.UNKNOWN,
        RPCStatusCode.DATA_LOSS,
        RPCStatusCode.OUT_OF_RANGE,
    }
)
"""The statuses the client retries itself (sdk-core's retryable codes), and a call that ran out of time."""


@contextlib.contextmanager
def cancelled_as_cancelled() -> Iterator[None]:
    """Keep a cancelled wait on a workflow's Update a cancellation, in a front and in a worker.

    temporalio turns the `asyncio.CancelledError` of a task cancelled while it waits on an Update
    into `WorkflowUpdateRPCTimeoutOrCancelledError`, an ordinary exception. A segment's activity
    cancelled so (its worker stopping past its grace) would then record its run failed, where a
    cancelled segment leaves the run to the activity's retry on another worker; a front's call
    cancelled by its caller would fail instead of ending cancelled.
    """
    try:
        yield
    except WorkflowUpdateRPCTimeoutOrCancelledError as exc:
        if isinstance(exc.__cause__, asyncio.CancelledError):
            raise exc.__cause__ from None
        raise


def transient(exc: Exception) -> bool:
    """Whether a failed wait may succeed when asked again: the cluster's trouble, not the workflow's answer.

    Not found (the workflow ended or is gone), a refused Update (`WorkflowUpdateFailedError`) and
    anything else are final.
    """
    if isinstance(exc, WorkflowUpdateRPCTimeoutOrCancelledError):
        return True  # the call ran out of time (or the server cancelled it): the Update did not end
    return isinstance(exc, RPCError) and exc.status in PASSING


async def asked_again(ask: Callable[[], Awaitable[_T]], *, patience: float | None = None) -> _T:
    """`ask()`'s answer, asked again with a growing pause while it fails for a reason that passes.

    The client retries such a call itself for some ten seconds (`temporalio.service.RetryConfig`,
    the same for every call of the process); a cluster restarting takes longer.

    Args:
        ask: one wait on an Update, under an id that names what it asks (the same answer each time).
        patience: how long (seconds) to go on while every ask fails; `None`: for as long as the
            caller waits (a segment's activity: until Temporal times it out or cancels it).

    Raises:
        Exception: what the last ask raised, once it is final or `patience` ran out.
        asyncio.CancelledError: the wait was cancelled (it is not asked again).
    """
    pause, failing_since = _FIRST_PAUSE, None
    while True:
        try:
            with cancelled_as_cancelled():
                return await ask()
        except Exception as exc:
            failing_since = time.monotonic() if failing_since is None else failing_since
            if not transient(exc) or (patience is not None and time.monotonic() - failing_since > patience):
                raise
        await asyncio.sleep(pause)
        pause = min(pause * 2, _LAST_PAUSE)
