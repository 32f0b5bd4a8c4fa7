"""What a failed run reports: its real cause, never the task group that carried it.

pydantic-ai and sayso run model calls and tools inside anyio task groups, so an error raised
there reaches the run's boundary wrapped in an `ExceptionGroup` ("unhandled errors in a
TaskGroup (1 sub-exception)"), which names nothing a person can act on. The run's error is
the first exception inside, and the full traceback goes to the log.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("sayso.runs")


def root_exception(exc: BaseException) -> BaseException:
    """The first exception that is not a group, looking inside nested exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe_failure(exc: BaseException) -> str:
    """A failed run's error as people read it: `TypeName: message` of its real cause."""
    cause = root_exception(exc)
    message = str(cause)
    return f"{type(cause).__name__}: {message}" if message else type(cause).__name__


def report_failure(run_id: str, exc: BaseException) -> str:
    """Log a run's failure with its traceback (the server log shows it) and return its error for the run record."""
    error = describe_failure(exc)
    logger.error("run %s failed: %s", run_id, error, exc_info=root_exception(exc))
    return error
