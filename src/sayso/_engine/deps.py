"""`RunDeps`: what every sayso tool sees as `ctx.deps` — the run it serves, and the runtime's services to it.

The gate, the before-call hooks, the delegate tools and MCP calls all read the run from here; they
reach back into the runtime only through `RunServices`, a port the runtime implements for each run,
so the engine seam never imports the runtime and no call into it hides in a closure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import anyio.to_thread
from pydantic_ai.exceptions import UserError

from .._core.audit_events import AuditEvent
from .._core.grants import Grant
from .._core.requests import ClientTool, Scope
from .._core.steps import StepJournal, StepScope, memory_journal
from .._store import ExecutionRecord, ExecutionResult
from .replies import Replies


class Ledger(Protocol):
    """The part of the store a run's tools need: the execution ledger, grants and the audit log."""

    async def begin_execution(self, request_id: str, run_id: str, now: float) -> ExecutionRecord | None: ...

    async def finish_execution(
        self,
        request_id: str,
        result: bytes,
        now: float,
        *,
        audit: Sequence[AuditEvent] = (),
        status: Literal["done", "unknown"] = "done",
    ) -> None: ...

    async def grants_for(self, *, principal: str, tool: str, subject_key: str) -> list[Grant]: ...

    async def append_audit(self, bodies: Sequence[AuditEvent]) -> None: ...


class RunServices(Protocol):
    """What the runtime does for one run's tools: hand work to a delegate, and vouch for a grant's giver."""

    async def delegate(self, target: str, task: str, call_id: str, *, run_step: int) -> str:
        """Run the delegate `target` for the call `call_id`, once however often the call runs; its answer.

        `run_step`: the segment's model request whose reply holds the call (`RunContext.run_step`). Raises
        `CallDeferred` while the delegate's run pauses.
        """
        ...

    def giver_may_decide(self, grant: Grant) -> bool:
        """Whether whoever gave `grant` may (still) decide for its principal and agent; a grant reaches no further."""
        ...


class NoServices:
    """The services of a run no runtime serves (deps built by hand): no delegates, and no grant is honoured."""

    async def delegate(self, target: str, task: str, call_id: str, *, run_step: int) -> str:
        raise UserError(f"the delegate {target!r} needs a sayso runtime to run it")

    def giver_may_decide(self, grant: Grant) -> bool:
        return False


@dataclass(kw_only=True)
class RunDeps:
    """What every sayso tool sees as `ctx.deps`: which run, thread and agent it serves."""

    run_id: str
    thread_id: str
    agent_path: str
    principal: str | None
    ledger: Ledger
    clock: Callable[[], float]
    """Seconds since the epoch as the runtime reads them (a test's fake clock moves it)."""
    grants: Sequence[Grant] | None = None
    """Grants an external host passed for this run; when set, stored grants are not consulted."""
    stored_grants: Sequence[Grant] | None = None
    """The principal's active stored grants, read with the segment's first read; `None`: look them up per call."""
    widest_scope: Scope | None = None
    """The widest scope a request may offer in this run (`once` when the host remembers nothing)."""
    services: RunServices = field(default_factory=NoServices)
    """The runtime's services to this run: delegates, and whether a grant's giver may still decide."""
    marked: frozenset[str] = frozenset()
    """Approved requests whose ledger mark this segment wrote when it consumed the pause."""
    executed: list[ExecutionResult] = field(default_factory=list[ExecutionResult])
    """Results of marked calls, committed with the run's next save."""
    chat_thread_id: str | None = None
    """The person's chat (the top-level run's thread) for a delegate's run; `thread` grants are bound to it."""
    client_tools: Sequence[ClientTool] = ()
    """The client's tools this run offers the model (those the agent allows)."""
    journal: StepJournal = field(default_factory=memory_journal)
    """Where the steps its tools take (`sayso.step`) are recorded: the runtime's store, for its runs."""
    replies: Replies | None = None
    """The segment's model replies its tools' steps depend on, kept in the journal before the first step runs."""
    step_scopes: dict[str, StepScope] = field(default_factory=dict[str, StepScope])
    """The steps each tool call of this segment has taken so far, by tool call id."""

    def steps_of(self, tool_call_id: str) -> StepScope:
        """The steps of one tool call's body in this segment (a body that runs again gets a new segment)."""
        scope = self.step_scopes.get(tool_call_id)
        if scope is None:
            scope = self.step_scopes[tool_call_id] = StepScope(
                run_id=self.run_id, scope=tool_call_id, journal=self.journal, offload=anyio.to_thread.run_sync
            )
        return scope
