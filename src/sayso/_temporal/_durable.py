"""An agent's loop on Temporal: the agent under pydantic-ai's `TemporalDurability`, its gate inside the tool activities.

Each agent of a worker's config gets a twin built for Temporal: the same model and tools, with
pydantic-ai's `TemporalDurability` capability, so inside the run's workflow (`_loop`) every model
request is an activity (retried: it has no side effect) and every tool call is an activity. sayso's
gate (policy, grants, the at-most-once ledger, before-call hooks) does I/O, so it cannot run in
workflow code: it sits *inside* the tool activities, as the toolset a `DynamicToolset` builds in
each activity. What crosses the boundary is plain data (`LoopDeps`, sayso's call metadata as JSON);
the activity rebuilds the run's `RunDeps` over the worker's own runtime (`Live`).

A call that must not run twice (an approved call; any call of a tool not declared idempotent or
read-only) is an activity with one attempt. The ledger marked an approved call when its pause was
consumed, before the loop began; a worker that dies mid-call fails the attempt (its heartbeat
stops), as does one stopped gracefully whose grace ends first (`WORKER_SHUTDOWN`), and the workflow
records the call "outcome unknown" (`sayso.unknown`) instead of running it again.
docs/guides/temporal.md#which-activities-retry-and-why says which activities retry and why.

MCP bindings are tools like any other here: each worker opens its own sessions in its runtime's
MCP host, in the activity that lists or calls them. A form a server pushes mid-call parks the call
in that worker's host and names the worker on the request (`ElicitationRequest.holder`); the
resumed call is sent to that worker's own task queue, where it hands the answer back on the live
call. A holder no worker answers for (it died) leaves the call to any worker, which replays it with
the stored answer when that is safe, or tells the model it did not complete.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Annotated, Any, ClassVar

from pydantic import Field, TypeAdapter
from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.durable_exec.temporal import TemporalDurability, TemporalRunContext
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset, DynamicToolset, ToolsetTool, WrapperToolset
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType
from temporalio.workflow import ActivityConfig

from .._config.file import AgentConfig
from .._core.grants import Grant
from .._core.requests import ClientTool, Scope
from .._engine.agents import BuiltAgent
from .._engine.calls import META_KEY, ApprovedCall, Deferral, ElicitationAnswered, approved_call_of
from .._engine.deps import RunDeps
from .._engine.tools import options_of
from .._runtime._kernel import Kernel
from .._runtime._runner import CallOptions, Runs
from .._runtime._step import tool_deps
from ._shapes import own_queue
from ._text import send_text, streaming

UNKNOWN_ACTIVITY = "sayso.unknown"
"""The activity that records a call cut off by a dead worker as "outcome unknown" (`Activities.unknown`)."""

TOOLSET_ID = "sayso"
"""The id of every agent's one toolset on Temporal: it names the tool activities (`…__dynamic_toolset__sayso__…`)."""

WORKER_SHUTDOWN = "WorkerShutdown"
"""The failure type Temporal's SDK gives an activity its stopping worker cancelled when its grace ran out."""

_STOPPED_IS_UNKNOWN = "sayso-stopped-call-unknown"
"""The patch under which a call cut off by its worker's graceful stop is "outcome unknown" (`workflow.patched`)."""

ONCE = RetryPolicy(maximum_attempts=1)
"""A call that must not run twice: never retried once started."""

RETRIED = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=1.5)
"""Model requests and calls that may run again: retried until a worker finishes them."""

_ATTACHED: TypeAdapter[Any] = TypeAdapter(Annotated[Deferral | ApprovedCall, Field(discriminator="kind")])
"""sayso's value in a call's metadata (the eight kinds are told apart by `kind`), to and from JSON."""


@dataclass(frozen=True, kw_only=True)
class LoopDeps:
    """What a run's tools need of it, as plain data: it crosses from the workflow into every tool activity."""

    run_id: str
    thread_id: str
    agent_path: str
    principal: str | None
    grants: tuple[Grant, ...] | None
    widest: Scope | None
    stored_grants: tuple[Grant, ...] | None
    marked: tuple[str, ...]
    client_tools: tuple[ClientTool, ...]
    chat_thread_id: str | None

    @classmethod
    def of(cls, deps: RunDeps) -> LoopDeps:
        """The plain data of a segment's `RunDeps`."""
        return cls(
            run_id=deps.run_id,
            thread_id=deps.thread_id,
            agent_path=deps.agent_path,
            principal=deps.principal,
            grants=None if deps.grants is None else tuple(deps.grants),
            widest=deps.widest_scope,
            stored_grants=None if deps.stored_grants is None else tuple(deps.stored_grants),
            marked=tuple(sorted(deps.marked)),
            client_tools=tuple(deps.client_tools),
            chat_thread_id=deps.chat_thread_id,
        )


LOOP_DEPS: TypeAdapter[LoopDeps] = TypeAdapter(LoopDeps)


def attached_json(metadata: Mapping[str, Any] | None) -> dict[str, object] | None:
    """A call's metadata as JSON (sayso's value dumped by kind)."""
    if metadata is None:
        return None
    return {k: _ATTACHED.dump_python(v, mode="json") if k == META_KEY else v for k, v in metadata.items()}


def attached_of(metadata: Mapping[str, Any] | None) -> dict[str, object] | None:
    """A call's metadata from JSON, sayso's value typed again (as the gate, the bodies and the engine read it)."""
    if metadata is None:
        return None
    found = dict(metadata)
    if isinstance(found.get(META_KEY), dict):
        found[META_KEY] = _ATTACHED.validate_python(found[META_KEY])
    return found


class Live:
    """The worker's runtime, which every tool activity of this process runs its calls over."""

    k: ClassVar[Kernel | None] = None
    runs: ClassVar[Runs | None] = None

    @classmethod
    def deps_of(cls, wire: LoopDeps) -> RunDeps:
        """The run's `RunDeps` over this worker's store and runtime."""
        assert cls.k is not None and cls.runs is not None, "a sayso worker sets its runtime before it polls"
        return tool_deps(
            cls.k,
            cls.runs,
            run_id=wire.run_id,
            thread_id=wire.thread_id,
            agent_path=wire.agent_path,
            principal=wire.principal,
            options=CallOptions(grants=wire.grants, widest=wire.widest),
            stored_grants=wire.stored_grants,
            marked=frozenset(wire.marked),
            client_tools=wire.client_tools,
            chat_thread_id=wire.chat_thread_id,
        )


class SaysoRunContext(TemporalRunContext[Any]):
    """The run context inside a tool activity: the run's live `RunDeps`, and sayso's call metadata typed again."""

    @classmethod
    def deserialize_run_context(cls, ctx: dict[str, object], deps: Any) -> TemporalRunContext[Any]:
        metadata = ctx.get("tool_call_metadata")
        found = {**ctx, "tool_call_metadata": attached_of(metadata) if isinstance(metadata, dict) else metadata}
        live = Live.deps_of(deps if isinstance(deps, LoopDeps) else LOOP_DEPS.validate_python(deps))
        return cls(**found, deps=live)


@dataclass
class _Recording(WrapperToolset[Any]):
    """The gate's toolset in a tool activity: approved calls' results go to the ledger as the activity ends.

    In one process a segment keeps them (`RunDeps.executed`) for its next save; here the activity
    is all the call has, so its result is written before the activity answers.
    """

    async def call_tool(
        self, name: str, tool_args: dict[str, object], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        deps = ctx.deps
        try:
            return await super().call_tool(name, tool_args, ctx, tool)
        finally:
            if isinstance(deps, RunDeps):
                for done in deps.executed:
                    await deps.ledger.finish_execution(done.request_id, done.result, deps.clock(), audit=[done.audit])
                deps.executed.clear()


@dataclass
class _OnceOrRetried(WrapperToolset[Any]):
    """Workflow side of the tool activities: how often each call may be tried, and what a cut-off call returns."""

    retried: frozenset[str] = frozenset()
    """Tools whose calls may run again: `ask_user` and the delegates (a delegate's run is carried on from the store)."""
    heartbeat: timedelta = timedelta(seconds=10)

    async def call_tool(
        self, name: str, tool_args: dict[str, object], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if not workflow.in_workflow():
            return await super().call_tool(name, tool_args, ctx, tool)
        once = self._once(name, ctx, tool)
        holder = _holder_of(ctx)
        if holder is not None:
            # The person answered a form a worker's live call asked: the call goes on there, on its own queue.
            routed = ActivityConfig(
                task_queue=own_queue(workflow.info().task_queue, holder),
                schedule_to_start_timeout=self.heartbeat * 3,
            )
            try:
                return await self._attempt(name, tool_args, ctx, tool, routed, once=once)
            except ActivityError as exc:
                if not _never_started(exc):
                    raise
                # Its holder is gone (no worker took the call there): any worker replays it with the
                # stored answer when that is safe, or tells the model the call did not complete.
        if not once:
            return await super().call_tool(name, tool_args, ctx, tool)
        return await self._attempt(name, tool_args, ctx, tool, ActivityConfig(), once=True)

    async def _attempt(
        self,
        name: str,
        tool_args: dict[str, object],
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
        config: ActivityConfig,
        *,
        once: bool,
    ) -> Any:
        """The call as an activity under `config` (one attempt if `once`), a cut-off one-attempt call outcome unknown.

        Raises:
            ActivityError: the call raised, or (routed to a worker's own queue) no worker took it.
        """
        if once:
            config = ActivityConfig(**config, retry_policy=ONCE)
        metadata = {**(tool.tool_def.metadata or {}), "temporal": config}
        configured = replace(tool, tool_def=replace(tool.tool_def, metadata=metadata))
        try:
            return await super().call_tool(name, tool_args, ctx, configured)
        except ActivityError as exc:
            if not once or not _cut_off(exc):
                raise  # the call raised (a mismatch with what was approved): the run fails and says so
            approved = approved_call_of(ctx.tool_call_metadata) if ctx.tool_call_approved else None
            return await workflow.execute_activity(
                UNKNOWN_ACTIVITY,
                UnknownCall(
                    run_id=ctx.deps.run_id,
                    request_id=approved.request_id if approved is not None else None,
                    tool_call_id=ctx.tool_call_id or "",
                    tool_name=name,
                ),
                result_type=str,
                start_to_close_timeout=timedelta(minutes=2),
                heartbeat_timeout=self.heartbeat,
                retry_policy=RETRIED,
            )

    def _once(self, name: str, ctx: RunContext[Any], tool: ToolsetTool[Any]) -> bool:
        if ctx.tool_call_approved:
            return True
        deps = ctx.deps
        client = {t.name for t in deps.client_tools} if isinstance(deps, LoopDeps) else set[str]()
        if name in self.retried or name in client:
            return False
        options = options_of(tool.tool_def)
        return not (options.idempotent or options.read_only)


def _holder_of(ctx: RunContext[Any]) -> str | None:
    """The worker holding the live call a person's answer goes back on, when the call is resumed with one."""
    approved = approved_call_of(ctx.tool_call_metadata)
    if isinstance(approved, ElicitationAnswered) and approved.elicitation.delivery == "live":
        return approved.elicitation.holder
    return None


def _cut_off(exc: ActivityError) -> bool:
    """Whether the call started and its worker went before it ended: died (its heartbeat stopped) or stopped.

    A worker stopped gracefully (SIGTERM) cancels the calls still running when its grace ends, and
    Temporal's SDK reports each as failed with `WORKER_SHUTDOWN` (not as timed out, so nobody waits
    for a heartbeat to lapse): the call's outcome is as unknown as after kill -9, never the run's failure.
    """
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type == WORKER_SHUTDOWN:
        # A history an older worker recorded failed the loop here: its replay still does.
        return workflow.patched(_STOPPED_IS_UNKNOWN)
    return isinstance(cause, TimeoutError) and not _never_started(exc)


def _never_started(exc: ActivityError) -> bool:
    """Whether the activity timed out before any worker took it (so the call never ran)."""
    return isinstance(exc.cause, TimeoutError) and exc.cause.type == TimeoutType.SCHEDULE_TO_START


@dataclass
class UnknownCall:
    """A call cut off by a dead worker: which run, which approval (`None` for a call nobody approved), which call."""

    run_id: str
    request_id: str | None
    tool_call_id: str
    tool_name: str


class _Durability(TemporalDurability[LoopDeps]):
    """pydantic-ai's Temporal durability, its model requests streamed when a front listens to the loop's text.

    Only then (`_text.streaming`, set per loop from its input, so a replay decides alike): a loop
    nobody listens to asks the model as before, in one non-streamed activity per request, and adds
    nothing to the history. A streamed request's activity signals the text to the loop's workflow
    (`_text.send_text`); no other event leaves the activity, and none costs an activity of its own.
    """

    @property
    def has_wrap_run_event_stream(self) -> bool:
        return super().has_wrap_run_event_stream or (self.in_durable_context and streaming())

    def _model_stream_event_handler(self) -> Any:
        return send_text


def durable_agent(
    built: BuiltAgent, spec: AgentConfig, *, heartbeat: timedelta
) -> Agent[LoopDeps, str | DeferredToolRequests]:
    """`built`'s twin for Temporal: model requests and tool calls as activities, the gate inside the tool activities.

    Built outside any workflow (pydantic-ai registers the activities as it binds the capability).
    """

    def gated(ctx: RunContext[Any]) -> AbstractToolset[Any]:
        # Resolved inside each tool activity, over the built agent's own tools (and MCP bindings).
        whole: AbstractToolset[Any] = CombinedToolset(list(built.agent.toolsets))
        return _Recording(built.gate.wrap(whole))

    retried = built.gate.ungated | {d.tool_name for d in spec.delegates}
    toolset = _OnceOrRetried(
        DynamicToolset(gated, per_run_step=True, id=TOOLSET_ID), retried=retried, heartbeat=heartbeat
    )
    durability = _Durability(
        name=built.name,
        deps_type=LoopDeps,
        run_context_type=SaysoRunContext,
        # A call may take long (a delegate runs a whole run below it); a silent worker is noticed by its heartbeat.
        activity_config=ActivityConfig(
            start_to_close_timeout=timedelta(hours=6), heartbeat_timeout=heartbeat, retry_policy=RETRIED
        ),
        model_activity_config=ActivityConfig(heartbeat_timeout=heartbeat, retry_policy=RETRIED),
    )
    return Agent(
        built.model,
        output_type=[str, DeferredToolRequests],
        instructions=spec.instructions or None,
        deps_type=LoopDeps,
        name=built.name,
        toolsets=[toolset],
        capabilities=[durability],
    )


def durable_agents(
    agents: Mapping[str, BuiltAgent], specs: Mapping[str, AgentConfig], *, heartbeat: timedelta
) -> dict[str, Agent[LoopDeps, str | DeferredToolRequests]]:
    """Every agent's twin for Temporal, by name: their loops all run in their runs' workflows."""
    return {name: durable_agent(built, specs[name], heartbeat=heartbeat) for name, built in agents.items()}
