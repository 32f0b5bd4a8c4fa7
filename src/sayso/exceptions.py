"""Errors raised by sayso, grouped by who must act.

```text
SaysoError
├── ConfigError (ValueError)          the configuration or a Python spec is wrong: fix it
├── InvalidInput (ValueError)         a value does not fit a response schema (names each field and why)
├── NotFound (LookupError)            no such thread, run or request
│   ├── RunNotFound
│   └── RequestNotFound
├── DecisionRefused (ValueError)      a decision was not taken; the pause stays open
│   ├── InvalidDecision               the answer does not fit the request (names the problem)
│   ├── AlreadyDecided                a different decision was taken first: the first wins
│   ├── RequestExpired                the request's TTL passed before the decision
│   └── NotAllowed (PermissionError)  this principal may not decide this request
├── RunConflict                       the run is not in a state that allows this step
│   ├── PauseConsumed                 another process resumed this pause first
│   ├── NotReady                      requests are still open and the resume was not forced
│   └── ThreadBusy                    the thread already has a run in progress
└── StoreError                        the database failed; the message says how
```

Every error carries the ids it is about, so callers never parse messages.
"""

from __future__ import annotations

__all__ = [
    "AlreadyDecided",
    "ConfigError",
    "DecisionRefused",
    "InvalidDecision",
    "InvalidInput",
    "NotAllowed",
    "NotFound",
    "NotReady",
    "PauseConsumed",
    "RequestExpired",
    "RequestNotFound",
    "RunConflict",
    "RunNotFound",
    "SaysoError",
    "StoreError",
    "ThreadBusy",
]


class SaysoError(Exception):
    """Root of every error sayso raises on purpose."""


class ConfigError(SaysoError, ValueError):
    """The configuration, an import spec or an agent definition is wrong."""


class InvalidInput(SaysoError, ValueError):
    """A value does not fit the response schema a person was asked to answer; `problems` says where and why.

    Each problem reads `field.path: why` (`city: field required`), so every interface can show it
    next to the field it is about.
    """

    def __init__(self, problems: tuple[str, ...]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))

    def __reduce__(self) -> tuple[type, tuple[tuple[str, ...]]]:
        return self.__class__, (self.problems,)


class NotFound(SaysoError, LookupError):
    """No thread, run or request has the given id."""


class RunNotFound(NotFound):
    """No run has the given id."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run has id {run_id!r}")

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return self.__class__, (self.run_id,)


class RequestNotFound(NotFound):
    """No request has the given id (or it belongs to someone else, which looks the same)."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        super().__init__(f"no open or decided request has id {request_id!r}")

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return self.__class__, (self.request_id,)


class DecisionRefused(SaysoError, ValueError):
    """A decision was refused; nothing changed and the request is still open (unless decided before)."""

    def __init__(self, request_id: str, problem: str) -> None:
        self.request_id = request_id
        self.problem = problem
        super().__init__(f"request {request_id!r}: {problem}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return self.__class__, (self.request_id, self.problem)


class InvalidDecision(DecisionRefused):
    """The answer does not fit the request: wrong kind, wrong count, arguments that fail the schema."""


class AlreadyDecided(DecisionRefused):
    """A different decision was already recorded for this request; the first decision wins."""


class RequestExpired(DecisionRefused):
    """The request expired before this decision arrived; the call will not run."""


class NotAllowed(DecisionRefused, PermissionError):
    """The principal may not decide this request."""


class RunConflict(SaysoError):
    """The run is not in a state that allows the step asked for."""

    def __init__(self, run_id: str, problem: str) -> None:
        self.run_id = run_id
        self.problem = problem
        super().__init__(f"run {run_id!r}: {problem}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return self.__class__, (self.run_id, self.problem)


class PauseConsumed(RunConflict):
    """The pause was already resumed (by this or another process); a pause is consumed once."""


class NotReady(RunConflict):
    """Some requests of the pause are still open; decide them or force the resume."""


class ThreadBusy(RunConflict):
    """The thread already has a run in progress; wait for it to pause or finish."""


class StoreError(SaysoError):
    """The database failed underneath sayso; the original error is chained as `__cause__`."""
