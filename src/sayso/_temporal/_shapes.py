"""What crosses Temporal between a front, the run's workflow and the workers' activities: plain data.

Requests, decisions, principals and call options travel as sayso's own JSON (the core's type
adapters), so the workflow and the activities read exactly what the runtime would. A sayso error
raised in a worker crosses as a failure carrying the error as JSON, which the front raises again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import TypeAdapter
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from .. import exceptions
from .._core.access import Principal
from .._core.grants import Grant
from .._core.requests import Scope
from .._core.resume import Closer
from .._runtime._runner import CallOptions
from .._store import RunRecord
from ..exceptions import CallerError, DecisionRefused, SaysoError
from ._text import TextTo

RUN_WORKFLOW = "sayso.run"
"""The workflow type of a sayso run."""

_GRANTS: TypeAdapter[tuple[Grant, ...] | None] = TypeAdapter(tuple[Grant, ...] | None)
_SCOPE: TypeAdapter[Scope | None] = TypeAdapter(Scope | None)
_CLOSER: TypeAdapter[Closer | None] = TypeAdapter(Closer | None)


def workflow_id(run: RunRecord) -> str:
    """The id a run's workflow has in the Temporal UI: `sayso-<agent>-<run id>`."""
    return f"sayso-{run.agent}-{run.run_id}"


def own_queue(task_queue: str, holder: str) -> str:
    """The task queue only the worker `holder` polls (beside the config's): its steps, the calls it holds."""
    return f"{task_queue}@{holder}"


@dataclass
class RunInput:
    """What a run's workflow starts with."""

    run_id: str
    handed_by: str | None
    """The front whose lease on the just-started run the first segment takes over."""
    options: str
    heartbeat_seconds: float


@dataclass
class SegmentInput:
    """A segment of a run's work: its start (handed over by a front) or a carry-on."""

    run_id: str
    handed_by: str | None
    options: str


@dataclass
class AdvanceInput:
    """Carry a paused run on (`force`: its open requests count as skipped)."""

    run_id: str
    force: bool
    options: str


@dataclass
class DecideInput:
    """One decision, as a front delivers it to the run's workflow."""

    run_id: str
    request_id: str
    decision: str
    principal: str
    via: str | None
    resume: bool
    options: str


@dataclass
class Recorded:
    """What recording a decision did: whether it was new, and whether the run now waits on nothing."""

    recorded: bool
    ready: bool
    owner: str | None = None
    """The child workflow whose run raised the request (a delegate's), which resumes it; `None`: this one."""


@dataclass
class BelowNote:
    """What a delegate's (child) workflow tells its parent's: its run settled, after these decisions."""

    run_id: str
    decisions: list[str]
    """The requests whose decisions it carried the run on after (a parent's `decide` Update waits for its own)."""


@dataclass
class Below:
    """A delegate's run its parent's pause waits on that is to run as a child workflow of the parent's."""

    run_id: str
    workflow_id: str
    handed_by: str | None
    """The worker whose lease the child's first segment takes over (the one that started the run)."""


@dataclass
class Standing:
    """Where a run stands, as its workflow keeps it: status, the open requests, when they all expire."""

    status: str
    open: list[str]
    """The open requests at the leaves of the run's tree, each as sayso's request JSON."""
    expires_at: float | None
    """When every open request has expired (each has an expiry), else `None`."""
    steps: list[float] = field(default_factory=list)
    """When the escalation steps of the open requests are due (those before each one's timeout), soonest first."""
    swept_at: float | None = None
    below: list[Below] = field(default_factory=list)
    """The delegates' runs to start as child workflows (started in the store, not yet run)."""
    """The worker's clock when it fired the steps due (set by the activities that fire them): those up to it fired."""

    @property
    def waiting(self) -> bool:
        """Whether the run still has work ahead of it (a pause to decide, a segment to finish)."""
        return self.status in ("paused", "running")


def options_json(options: CallOptions, *, text: str | None = None) -> str:
    """`CallOptions` as JSON; a text sink stays behind, named by the token `text` its front listens under (`_text`)."""
    raw: dict[str, object] = {"grants": _GRANTS.dump_python(options.grants, mode="json"), "widest": options.widest}
    if options.closer is not None:
        raw["closer"] = _CLOSER.dump_python(options.closer, mode="json")
    if text is not None:
        raw["text"] = text
    return json_of(raw)


def options_of(text: str) -> CallOptions:
    """`CallOptions` from `options_json`: a listened-to call's sink is its token (`TextTo`), for its loop."""
    raw = json_loads(text)
    token = raw.get("text")
    return CallOptions(
        grants=_GRANTS.validate_python(raw["grants"]),
        widest=_SCOPE.validate_python(raw["widest"]),
        on_text=TextTo(token) if isinstance(token, str) else None,
        closer=_CLOSER.validate_python(raw.get("closer")),
    )


def text_of(options: str) -> tuple[str | None, str]:
    """The token a call's front listens to its text under (`None`: it does not), and the options without it."""
    raw = json_loads(options)
    token = raw.pop("text", None)
    return (token if isinstance(token, str) else None), json_of(raw)


def principal_json(principal: Principal) -> str:
    """A principal as JSON."""
    return json_of(asdict(principal))


def principal_of(text: str) -> Principal:
    """A principal from `principal_json`."""
    raw = json_loads(text)
    return Principal(name=raw["name"], approver_for=tuple(raw["approver_for"]), local=bool(raw["local"]))


def failure(exc: SaysoError) -> ApplicationError:
    """A sayso error as a Temporal failure a front turns back into the same error (never retried).

    It travels as JSON (what its `__reduce__` rebuilds it from), never as a pickle: a front only ever
    rebuilds a class or helper of `sayso.exceptions`.
    """
    reduced = exc.__reduce__()
    assert isinstance(reduced, tuple)
    rebuild, args = reduced[0], reduced[1]
    state = reduced[2] if len(reduced) > 2 else None
    carried = {"rebuild": getattr(rebuild, "__name__", ""), "args": list(args), "state": state}
    try:
        detail = json.dumps(carried)
    except TypeError:
        detail = json.dumps({"rebuild": type(exc).__name__, "args": [str(exc)], "state": None})
    # A refusal (who may not, already decided, a wrong answer) is an answer, not a fault: the worker logs it at
    # debug level, without the traceback and the failure metric Temporal's SDK gives a failed activity.
    refusal = isinstance(exc, CallerError | DecisionRefused)
    category = ApplicationErrorCategory.BENIGN if refusal else ApplicationErrorCategory.UNSPECIFIED
    return ApplicationError(str(exc), detail, type=type(exc).__name__, non_retryable=True, category=category)


def error_in(failure_: BaseException | None) -> SaysoError | None:
    """The sayso error a failure chain carries (`failure`'s), or `None`."""
    while failure_ is not None:
        if isinstance(failure_, ApplicationError) and failure_.details and isinstance(failure_.details[0], str):
            found = _rebuilt(failure_.details[0])
            if found is not None:
                return found
        failure_ = failure_.__cause__
    return None


def _rebuilt(detail: str) -> SaysoError | None:
    try:
        carried = json.loads(detail)
        rebuild = getattr(exceptions, carried["rebuild"], None)
        if rebuild is None or getattr(rebuild, "__module__", None) != exceptions.__name__:
            return None
        state = carried["state"] if isinstance(carried["state"], dict) else {}
        try:
            found = rebuild(*carried["args"], **state)  # the state of sayso's errors is their keywords
        except TypeError:
            found = rebuild(*carried["args"])
            if isinstance(found, SaysoError):
                found.__dict__.update(state)
    except (ValueError, TypeError, KeyError):
        return None
    return found if isinstance(found, SaysoError) else None


def json_of(value: Any) -> str:
    """Compact JSON."""
    return json.dumps(value, separators=(",", ":"))


def json_loads(text: str) -> Any:
    """JSON read back."""
    return json.loads(text)
