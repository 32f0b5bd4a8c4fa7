"""What a failed run says went wrong: the real cause, never a wrapper.

pydantic-ai runs tools and streams inside anyio task groups, so an error raised by a model
provider or a tool often arrives wrapped in an `ExceptionGroup` ("unhandled errors in a
TaskGroup"), which tells the person nothing. The run's `error` names the first real exception.
"""

from __future__ import annotations


def root_cause(exc: BaseException) -> BaseException:
    """The first exception inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe_failure(exc: BaseException) -> str:
    """`Type: message` of the real cause of a run's failure."""
    cause = root_cause(exc)
    text = str(cause).strip()
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__
