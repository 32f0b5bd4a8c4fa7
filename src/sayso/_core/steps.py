"""The step journal's rule: a side effect inside a tool or a workflow node, recorded with its run so it runs once.

A tool body that asked for approval, or a node that asked for input, runs again from the top when
the run resumes (in any process, after a restart or a crash). What it wrapped in a step
(`sayso.step(ctx, "charge", charge, order)`) is not done again: the step's first run records its
result, and every later run of the same body returns that record instead of calling the function.

- A step is keyed by its run, its scope (the tool call's id, or the workflow node and its pass)
  and its name with how many steps of that name the body took before it (`StepKey`), so two steps
  of one name in one body are two steps, and a body must take its steps in the same order each time.
- A step is marked `started` (on disk, unless it is idempotent) before its function runs, and
  `done` with its result once it returned. A mark found `started` was cut off mid-way (the
  process died): its outcome is
  unknown, and it raises `StepOutcomeUnknown` instead of running again, unless it is `idempotent`;
  the first run to find it so marks it `unknown`, with an audit record.
- A function that raises leaves no record: it did not do its work, and the next run tries again.
- A result is stored as JSON through a pydantic `TypeAdapter` of the function's return
  annotation, and every run (the first one too) returns it as stored, validated back into that
  type; one that cannot be stored is a `UsageError`, recorded as such (the work was done).

This module holds the rule, the key, the `StepJournal` port that records steps, `MarkedJournal`
(the one way a step is marked, run and recorded, over marks: the store's step verbs for the
runtime, `_runtime/_journal.py`; memory for an engine on its own; another executor may back the
port with durable steps of its own) and `StepScope`, which counts a body's steps and runs them
through a journal. It does no I/O of its own.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, get_type_hints

from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError

from ..exceptions import StepOutcomeUnknown, UsageError
from .audit_events import AuditEvent, StepUnknownEvent

MAX_NAME = 200
"""The longest step name (what the store's key column holds)."""

StepStatus: TypeAlias = Literal["started", "done", "unrecorded", "unknown"]
"""Where a step stands: running (or cut off, not found yet), finished with its result, finished with a result
not JSON, or found cut off (its outcome unknown, audited once)."""

Ending: TypeAlias = Literal["done", "unrecorded", "unknown"]
"""How a started step's mark ends."""


@dataclass(frozen=True, slots=True)
class StepKey:
    """Which step: the run, the scope within it (a tool call's id, a node's pass), and its name's occurrence."""

    run_id: str
    scope: str
    name: str
    occurrence: int
    """1 for the first step of this name in the body, 2 for the second, and so on."""


@dataclass(frozen=True, slots=True)
class StepRecord:
    """What the journal holds about a step."""

    status: StepStatus
    result: bytes | None
    """`done`: the result as JSON; `unrecorded`: why it could not be stored; `started`: nothing."""


Offload: TypeAlias = Callable[[Callable[[], Any]], Awaitable[Any]]
"""Runs a plain function somewhere else (a worker thread) and awaits its result."""

StepCall: TypeAlias = Callable[[], Awaitable[bytes]]
"""A step's function bound to its arguments, returning its result as JSON (raising `NotJson` when it is not)."""


class NotJson(Exception):
    """A step's function returned something that cannot be stored as JSON; its work was done."""


class StepJournal(Protocol):
    """Where steps are recorded: the runtime's store, memory for an engine on its own, or another executor."""

    async def run(self, key: StepKey, call: StepCall, *, idempotent: bool) -> bytes:
        """The step's recorded result, or else `call`'s, recorded before it is returned.

        A journal follows `recorded_outcome` for what it finds, marks the step `started` durably
        before `call` runs, records its result (or, on `NotJson`, that it could not) once it
        returned, and forgets the mark when `call` raises anything else.
        """
        ...


def recorded_outcome(found: StepRecord | None, key: StepKey, *, idempotent: bool) -> bytes | None:
    """What a step found in the journal means: its recorded result, or `None` when its function must run.

    Raises:
        StepOutcomeUnknown: it was cut off mid-way and is not `idempotent`.
        UsageError: its result could not be stored when it ran.
    """
    if found is None:
        return None
    match found.status:
        case "done":
            assert found.result is not None
            return found.result
        case "unrecorded":
            raise UsageError((found.result or b"").decode())
        case "started" | "unknown":
            if idempotent:
                return None
            raise StepOutcomeUnknown(key.run_id, key.name, key.occurrence)


class StepMarks(Protocol):
    """Where a journal keeps its marks: the store's step verbs (`RunStore` is one), or memory."""

    async def begin_step(self, key: StepKey, now: float, *, durable: bool = True) -> StepRecord | None:
        """Mark the step started unless it has a record (on disk unless not `durable`); the earlier record, if any."""
        ...

    async def finish_step(
        self, key: StepKey, result: bytes, now: float, *, status: Ending = "done", audit: Sequence[AuditEvent] = ()
    ) -> None:
        """Record the step's result, or why it could not be stored; or (`unknown`, with `audit`) that it was cut off.

        `unknown` ends only a mark still `started`, and appends `audit` only then: once, however many find it.
        """
        ...

    async def forget_step(self, key: StepKey) -> None:
        """Drop the started step's mark."""
        ...


class MarkedJournal:
    """A `StepJournal` over marks: the one way a step is marked, run, and recorded or forgotten."""

    def __init__(self, marks: StepMarks, clock: Callable[[], float]) -> None:
        self.marks = marks
        self._clock = clock

    async def run(self, key: StepKey, call: StepCall, *, idempotent: bool) -> bytes:
        marks = self.marks
        # Only a mark that keeps a step from running twice must be on disk before it runs.
        found = await marks.begin_step(key, self._clock(), durable=not idempotent)
        try:
            recorded = recorded_outcome(found, key, idempotent=idempotent)
        except StepOutcomeUnknown:
            if found is not None and found.status == "started":  # found cut off: said once, in the audit log
                now = self._clock()
                await marks.finish_step(key, b"", now, status="unknown", audit=[step_unknown(key, now)])
            raise
        if recorded is not None:
            return recorded
        try:
            result = await call()
        except NotJson as exc:
            # The work was done: every later run of the body reads why it has no result, not a fresh run.
            await marks.finish_step(key, str(exc).encode(), self._clock(), status="unrecorded")
            raise UsageError(str(exc)) from None
        except Exception:
            await marks.forget_step(key)  # it raised: it did not do its work, and runs again next time
            raise
        await marks.finish_step(key, result, self._clock())
        return result


class MemoryStepMarks:
    """Step marks in process memory, as long as the object lives."""

    def __init__(self) -> None:
        self.steps: dict[StepKey, StepRecord] = {}

    async def begin_step(self, key: StepKey, now: float, *, durable: bool = True) -> StepRecord | None:
        found = self.steps.get(key)
        if found is None:
            self.steps[key] = StepRecord(status="started", result=None)
        return found

    async def finish_step(
        self, key: StepKey, result: bytes, now: float, *, status: Ending = "done", audit: Sequence[AuditEvent] = ()
    ) -> None:
        found = self.steps.get(key)
        if status == "unknown" and (found is None or found.status != "started"):
            return
        self.steps[key] = StepRecord(status=status, result=result)

    async def forget_step(self, key: StepKey) -> None:
        if key in self.steps and self.steps[key].status == "started":
            del self.steps[key]


def step_unknown(key: StepKey, at: float) -> StepUnknownEvent:
    """The audit record of a step found cut off: it may or may not have done its work, and is not run again."""
    return StepUnknownEvent(
        event="step_unknown", run_id=key.run_id, scope=key.scope, step=key.name, occurrence=key.occurrence, at=at
    )


def memory_journal() -> MarkedJournal:
    """A journal in process memory: for a workflow engine used on its own, and deps built by hand.

    Its steps last as long as the object, so a body that runs again in this process finds them.
    """
    return MarkedJournal(MemoryStepMarks(), clock=lambda: 0.0)


@dataclass(kw_only=True)
class StepScope:
    """The steps of one body (a tool call, a node's pass): counts their names and runs them through the journal."""

    run_id: str
    scope: str
    journal: StepJournal
    offload: Offload | None = None
    """How a plain (not `async`) function runs: in a worker thread, as pydantic-ai runs plain tools, so
    a slow one does not stop the event loop (and the run's lease with it); `None`: called directly."""
    taken: dict[str, int] = field(default_factory=dict[str, int])
    """How many steps of each name this run of the body has taken."""

    def next_key(self, name: str) -> StepKey:
        """The key of the body's next step named `name`."""
        if not isinstance(name, str) or not name or len(name) > MAX_NAME:
            raise UsageError(f"a step needs a name (a string of 1 to {MAX_NAME} characters), not {name!r}")
        occurrence = self.taken.get(name, 0) + 1
        self.taken[name] = occurrence
        return StepKey(run_id=self.run_id, scope=self.scope, name=name, occurrence=occurrence)

    async def run(
        self, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, idempotent: bool
    ) -> Any:
        """Run `fn(*args, **kwargs)` as the step `name` once for the run; its result, as recorded."""
        if not callable(fn):
            raise UsageError(f"step {name!r}: {fn!r} is not a function")
        adapter = result_adapter(name, fn)  # before anything runs: a result it could never record is refused first
        key = self.next_key(name)

        offload = self.offload

        async def call() -> bytes:
            if offload is not None and not inspect.iscoroutinefunction(fn):
                result = await offload(functools.partial(fn, *args, **kwargs))
            else:
                result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            try:
                return adapter.dump_json(result)
            except PydanticSerializationError as exc:
                raise NotJson(
                    f"step {name!r} returned {type(result).__name__}, which cannot be stored as JSON "
                    f"(return a JSON value, a pydantic model or a dataclass, and annotate it): {exc}"
                ) from None

        return adapter.validate_json(await self.journal.run(key, call, idempotent=idempotent))


def result_adapter(name: str, fn: Callable[..., Any]) -> TypeAdapter[Any]:
    """The adapter of a step's result: its function's return annotation, or any JSON value when it has none.

    Raises:
        UsageError: pydantic cannot store the annotated type as JSON.
    """
    try:
        returns = get_type_hints(fn).get("return", Any)
    except Exception:  # a callable whose hints cannot be read (a partial, a builtin): its result is plain JSON
        returns = Any
    if returns is None:
        returns = type(None)
    try:
        try:
            return _adapter(returns)
        except TypeError:  # an annotation that cannot be a cache key: built each time
            return TypeAdapter(returns)
    except Exception as exc:  # pydantic cannot build a schema of the annotation: say which step and why
        what = getattr(returns, "__name__", repr(returns))
        raise UsageError(
            f"step {name!r}: {getattr(fn, '__name__', repr(fn))} returns {what}, which cannot be stored as JSON "
            f"(return a JSON value, a pydantic model or a dataclass): {exc}"
        ) from None


@functools.lru_cache(maxsize=256)
def _adapter(returns: Any) -> TypeAdapter[Any]:
    """One adapter per return type: a body's steps do not build their schema again each time they run."""
    return TypeAdapter(returns)


class SteppingContext(Protocol):
    """A context whose body can take steps itself (a workflow node's `WorkflowContext`)."""

    async def step(
        self, name: str, fn: Callable[..., Any], /, *args: Any, idempotent: bool = False, **kwargs: Any
    ) -> Any:
        """Run `fn(*args, **kwargs)` once for the run as the step `name`; its recorded result."""
        ...
