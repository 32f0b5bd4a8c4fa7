"""Errors raised by sayso, grouped by who must act.

```text
SaysoError
├── ConfigError (ValueError)          the operator: the configuration or an import spec is wrong
├── UsageError (RuntimeError)         the programmer: the Python API was used the wrong way
├── CallerError                       the client calling an interface: fix the call
│   ├── Unauthenticated (PermissionError)  no bearer token, or one that names no principal
│   ├── InvalidInput (ValueError)     a body, cursor or argument the interface cannot take
│   │   ├── TooLarge                  over a configured size limit
│   │   ├── InvalidCursor             a paging cursor sayso did not hand out
│   │   └── AgentNotFound             no agent, orchestration or workflow has the name the caller gave
│   ├── NotFound (LookupError)        no such thread, run, request or grant (or not visible to the caller)
│   │   ├── ThreadNotFound
│   │   ├── RunNotFound
│   │   ├── RequestNotFound
│   │   └── GrantNotFound
│   ├── NotAllowed (PermissionError)  the caller may not do this here (read, message, decide)
│   └── LinkRefused (PermissionError) a mailed link that no longer decides: forged, expired, used, changed
├── SchemaMismatch (ValueError)      a value does not fit a response schema (names each field and why)
├── DecisionRefused (ValueError)      the person answering: the decision was not taken, the pause stays open
│   ├── InvalidDecision               the answer does not fit the request (names the problem)
│   ├── AlreadyDecided                a different decision was taken first: the first wins
│   ├── RequestExpired                the request's TTL passed before the decision
│   └── CallEnded                     the MCP call that asked stopped with its process: closed as cancelled
├── StepOutcomeUnknown (RuntimeError) a tool's or node's step was cut off mid-way: it may have done its work
├── RunConflict                       the run is not in a state that allows this step: reload and retry
│   ├── PauseConsumed                 another process resumed this pause first
│   ├── NotReady                      requests are still open and the resume was not forced
│   └── ThreadBusy                    the thread already has a run in progress
└── StoreError                        the store or the Temporal cluster failed or is out of reach; the message says how
```

Every error carries the ids it is about, so callers never parse messages. Each interface maps
this tree to its wire once (REST problems, A2A errors, AG-UI run errors, CLI exit codes).
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

NotAllowedSubject: TypeAlias = Literal["request", "thread", "run", "grant", "approver"]
"""What a `NotAllowed` refused."""

LinkProblem: TypeAlias = Literal["invalid", "expired", "used", "decided", "changed"]
"""Why a mailed link no longer decides."""


__all__ = [
    "AgentNotFound",
    "AlreadyDecided",
    "CallEnded",
    "CallerError",
    "ConfigError",
    "DecisionRefused",
    "GrantNotFound",
    "InvalidCursor",
    "InvalidDecision",
    "InvalidInput",
    "LinkRefused",
    "NotAllowed",
    "NotFound",
    "NotReady",
    "PauseConsumed",
    "RequestExpired",
    "RequestNotFound",
    "RunConflict",
    "RunNotFound",
    "SaysoError",
    "SchemaMismatch",
    "StepOutcomeUnknown",
    "SchemaTooNew",
    "StoreError",
    "ThreadBusy",
    "ThreadNotFound",
    "TooLarge",
    "Unauthenticated",
    "UsageError",
]


class SaysoError(Exception):
    """Root of every error sayso raises on purpose."""


class ConfigError(SaysoError, ValueError):
    """The configuration, an import spec or an agent definition is wrong."""


class UsageError(SaysoError, RuntimeError):
    """The Python API was used the wrong way (say, a runtime used outside `async with`)."""


class CallerError(SaysoError):
    """A caller of an interface sent something sayso will not act on; the message says what to fix."""


class Unauthenticated(CallerError, PermissionError):
    """The call carries no bearer token, or one that names no principal."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(problem)

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return self.__class__, (self.problem,)


class InvalidInput(CallerError, ValueError):
    """A body, cursor, filter or argument the interface cannot take; `field` names where, when known."""

    def __init__(self, problem: str, *, field: str | None = None) -> None:
        self.problem = problem
        self.field = field
        super().__init__(f"{field}: {problem}" if field else problem)

    def __reduce__(self) -> tuple[type, tuple[str], dict[str, str | None]]:
        return self.__class__, (self.problem,), {"field": self.field}


class TooLarge(InvalidInput):
    """A message, arguments, answer or body over its configured size limit (`limits:` in the config)."""

    def __init__(
        self, problem: str, *, field: str | None = None, limit: int | None = None, request_id: str | None = None
    ) -> None:
        super().__init__(problem, field=field)
        self.limit = limit
        """The configured limit that was exceeded (characters or bytes, as the problem says)."""
        self.request_id = request_id
        """The request whose answer or edit is too large, so an interface that asks it can ask it again."""

    def __reduce__(self) -> tuple[type, tuple[str], dict[str, str | int | None]]:  # type: ignore[override]  # adds `limit`
        return (
            self.__class__,
            (self.problem,),
            {"field": self.field, "limit": self.limit, "request_id": self.request_id},
        )


class InvalidCursor(InvalidInput):
    """A paging cursor that sayso did not hand out; pass back the `next_cursor` of a page."""

    def __init__(self, cursor: str, reason: str = "is not a cursor sayso handed out") -> None:
        self.cursor = cursor
        self.reason = reason
        super().__init__(f"{cursor!r} {reason}; pass back the next_cursor of a page", field="cursor")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # type: ignore[override]  # its own arguments
        return self.__class__, (self.cursor, self.reason)


class AgentNotFound(InvalidInput):
    """No agent, orchestration or workflow of the config has the name a caller gave (`field`: where it gave it).

    The runtime raises it wherever a name comes in, before anything is written; the interfaces that
    take a name in a body (REST, the CLI, Python) name the field, those that serve each agent at its
    own address (A2A, AG-UI, MCP) answer that nothing is there.
    """

    def __init__(self, agent: str, *, known: tuple[str, ...] = (), field: str | None = "agent") -> None:
        self.agent = agent
        self.known = known
        """The names that are configured, so the message can say what would have worked."""
        configured = f"; configured: {', '.join(known)}" if known else ""
        super().__init__(f"no agent or workflow named {agent!r}{configured}", field=field)

    def __reduce__(self) -> tuple[Any, ...]:
        return _agent_not_found, (self.agent, self.known, self.field)


def _agent_not_found(agent: str, known: tuple[str, ...], field: str | None) -> AgentNotFound:
    return AgentNotFound(agent, known=known, field=field)


class SchemaMismatch(SaysoError, ValueError):
    """A value does not fit the response schema a person was asked to answer; `problems` says where and why.

    Each problem reads `field.path: why` (`city: field required`), so every interface can show it
    next to the field it is about.
    """

    def __init__(self, problems: tuple[str, ...]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))

    def __reduce__(self) -> tuple[type, tuple[tuple[str, ...]]]:
        return self.__class__, (self.problems,)


class NotFound(CallerError, LookupError):
    """No thread, run or request has the given id."""


class ThreadNotFound(NotFound):
    """No thread has the given id (or the caller may not see it, which looks the same)."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(f"no thread has id {thread_id!r}")

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return self.__class__, (self.thread_id,)


class GrantNotFound(NotFound):
    """No active grant has the given id (or the caller may not see it, which looks the same)."""

    def __init__(self, grant_id: str) -> None:
        self.grant_id = grant_id
        super().__init__(f"no active grant has id {grant_id!r}")

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return self.__class__, (self.grant_id,)


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

    def __init__(
        self, request_id: str, problem: str, *, fields: dict[str, str] | None = None, under: str | None = None
    ) -> None:
        super().__init__(request_id, problem)
        self.fields = dict(fields or {})
        """The problem per field, for answers with fields (a form's content); `""` is the whole answer."""
        self.under = under
        """The part of the decision the fields sit in (`content` for a form's content), `None` for the whole."""

    def __reduce__(self) -> tuple[Any, ...]:
        return _invalid_decision, (self.request_id, self.problem, self.fields, self.under)


def _invalid_decision(
    request_id: str, problem: str, fields: dict[str, str], under: str | None = None
) -> InvalidDecision:
    return InvalidDecision(request_id, problem, fields=fields, under=under)


class AlreadyDecided(DecisionRefused):
    """A different decision was already recorded for this request; the first decision wins."""


class RequestExpired(DecisionRefused):
    """The request expired before this decision arrived; the message says what its timeout does with the call.

    The call runs only when the rule's `on_timeout` approves it (at the next expiry sweep).
    """


class CallEnded(DecisionRefused):
    """The live MCP call that asked this ended (its process stopped, or its server ended it): no answer can reach it.

    A server's form pushed on a live call (a tool that may not be called again) is answered only on
    that call, by the process holding it. Once that process stopped (it exited, or its lease lapsed),
    or the server ended the call while the form waited, the request is closed as cancelled and the
    model reads that the call did not complete; nothing of the answer is taken. `holder` names the
    process that held the call, when known.
    """

    def __init__(self, request_id: str, problem: str, *, holder: str | None = None) -> None:
        super().__init__(request_id, problem)
        self.holder = holder

    def __reduce__(self) -> tuple[Any, ...]:
        return _call_ended, (self.request_id, self.problem, self.holder)


def _call_ended(request_id: str, problem: str, holder: str | None) -> CallEnded:
    return CallEnded(request_id, problem, holder=holder)


class NotAllowed(CallerError, PermissionError):
    """The principal may not do this here: read a thread, send into it, decide its requests, read the audit."""

    def __init__(self, subject_id: str, problem: str, *, subject: NotAllowedSubject = "request") -> None:
        self.subject_id = subject_id
        self.problem = problem
        self.subject: NotAllowedSubject = subject
        """What was refused: deciding a request, messaging a thread, a run, a grant, or an approver-only verb."""
        super().__init__(f"{subject_id!r}: {problem}")

    @property
    def request_id(self) -> str:
        """The id refused (kept for callers of the decision API, where it is a request id)."""
        return self.subject_id

    def __reduce__(self) -> tuple[type, tuple[str, str], dict[str, str]]:
        return self.__class__, (self.subject_id, self.problem), {"subject": self.subject}


class LinkRefused(CallerError, PermissionError):
    """A mailed link that no longer decides (docs/guides/channels.md): `problem` says why, `detail` in words."""

    def __init__(self, problem: LinkProblem, detail: str) -> None:
        self.problem: LinkProblem = problem
        self.detail = detail
        super().__init__(detail)

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return self.__class__, (self.problem, self.detail)


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


class StepOutcomeUnknown(SaysoError, RuntimeError):
    """A step (`sayso.step`) was cut off mid-way, its process gone: it may or may not have done its work.

    It is not run again (a step marked `idempotent=True` is): the tool or node that took it reads
    this instead, and decides; uncaught in a tool, the model reads it as the call's error.
    """

    def __init__(self, run_id: str, name: str, occurrence: int = 1) -> None:
        self.run_id = run_id
        self.name = name
        self.occurrence = occurrence
        nth = f" (number {occurrence} of that name in its body)" if occurrence > 1 else ""
        super().__init__(
            f"step {name!r}{nth} of run {run_id!r}: outcome unknown: the process stopped while it was running, "
            "so it was not run again. Check its effect before trying again."
        )

    def __reduce__(self) -> tuple[type, tuple[str, str, int]]:
        return self.__class__, (self.run_id, self.name, self.occurrence)


class StoreError(SaysoError):
    """What sayso keeps its work in failed or did not answer; the original error is chained as `__cause__`.

    `service` says which: sayso's store (its database), or the Temporal cluster a config's
    `engine: temporal` hands runs and decisions to. Either way nothing is wrong with the call: try
    again once it answers (the message says what was done before it failed).
    """

    def __init__(self, problem: str, *, service: str = "store") -> None:
        self.service = service
        """What failed: `store` (sayso's database) or `Temporal` (the cluster of an `engine: temporal` config)."""
        super().__init__(problem)

    @property
    def said(self) -> str:
        """What a client of sayso's interfaces is told (REST, A2A): the store's own message stays in the server's log.

        That message is its driver's (a host, a database's name), for the operator; the client learns what to
        do. Temporal's is sayso's own account of where the run or decision stands (sent or not), which the
        client needs before trying again.
        """
        if self.service == "store":
            return "sayso's store did not answer; try again once it does"
        return str(self)

    def __reduce__(self) -> tuple[type, tuple[str], dict[str, str]]:
        return self.__class__, (str(self),), {"service": self.service}


class SchemaTooNew(StoreError):
    """The store's schema is at a revision this sayso does not know: a newer sayso migrated it (a downgrade).

    Nothing is migrated or written; run the newer sayso again. Nothing to retry, unlike the store not answering.
    """
