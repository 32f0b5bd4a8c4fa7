"""`Gate` and `GateToolset`: what makes an agent's tools wait for approval and run approved calls once.

It is the one place where policy meets the engine: before a call it asks the pure policy
whether a person must approve; after approval it consults the execution ledger so a call
that already started (in this or a crashed process) is never started again.

An agent has one toolset: its own tools, `ask_user` and its delegates sit in the agent's
function toolset (MCP bindings beside it), and `Gate`, a pydantic-ai capability, wraps the
whole assembled toolset in a `GateToolset` for each run, which also offers the run's client
tools. Tools sayso provides itself (`ask_user`) and client tools pass the gate without a
policy check. Fewer toolsets spare pydantic-ai a task group per toolset step.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Protocol

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed, UserError
from pydantic_ai.messages import ToolReturn
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import to_json

from .._core.grants import Grant, covering_grant
from .._core.policy import Gate as PolicyGate
from .._core.policy import InterruptPolicy, call_binding, gate_for, subject_from, whole_tool_subject
from .._core.requests import SCOPES_BY_WIDTH, ClientTool, Scope, Subject, ToolInfo, default_hint
from .._core.service import STILL_NEEDS_APPROVAL, ServiceAsk, parse_service_ask
from .._store import ExecutionResult
from ..exceptions import SaysoError
from .calls import META_KEY, ApprovedCall, Deferral, approved_call_of, deferral_of
from .hooks import BeforeToolCall, HookToolset
from .tools import client_tool, defer_client_call, options_of, tool_info_of

UNKNOWN_OUTCOME = (
    "Outcome unknown: the process stopped while this call was running, so it was not run again. "
    "Check its effect before trying again."
)


NO_MATCH = "the call no longer matches what was approved, so it was not run"


class ApprovalMismatch(Exception):
    """An approved call about to run is not the call the person approved: the run stops and says so.

    Never read by the model as the call's result and carried on from: a run that ends
    `completed` would hide that what the person approved did not happen.
    """


logger = logging.getLogger("sayso.tools")

PASSES_THROUGH = (ApprovalRequired, CallDeferred, ModelRetry, ToolFailed, UserError, SaysoError)
"""What a tool raises that is not its failure: pydantic-ai's control flow (a pause, a retry, a reported
failure), a programming error, and sayso's own errors (its store, its API), which end the run."""


def tool_error(name: str, exc: Exception) -> str:
    """What the model reads when a call raised: the error, as the call's result (kagent does the same)."""
    cause: BaseException = exc
    while isinstance(cause, BaseExceptionGroup) and cause.exceptions:
        cause = cause.exceptions[0]
    message = str(cause)
    return f"Error: the tool {name} failed: {type(cause).__name__}{': ' + message if message else ''}"


def outcome_unknown(*, request_id: str, run_id: str, tool_name: str | None, at: float) -> dict[str, Any]:
    """The audit record of an approved call cut off by a crash: it may or may not have run, and never runs again."""
    return {
        "event": "outcome_unknown",
        "request_id": request_id,
        "run_id": run_id,
        "tool_name": tool_name,
        "at": at,
        "reason": "the process stopped while the call was running; it was not run again",
    }


class GateStore(Protocol):
    """The part of the store the gate needs: the execution ledger, grants and the audit log."""

    async def begin_execution(self, request_id: str, run_id: str, now: float) -> Any: ...

    async def finish_execution(
        self,
        request_id: str,
        result: bytes,
        now: float,
        *,
        audit: Sequence[dict[str, Any]] = (),
        status: Literal["done", "unknown"] = "done",
    ) -> None: ...

    async def grants_for(self, *, principal: str, tool: str, subject_key: str) -> list[Grant]: ...

    async def append_audit(self, bodies: Sequence[dict[str, Any]]) -> None: ...


@dataclass(kw_only=True)
class RunDeps:
    """What every sayso tool sees as `ctx.deps`: which run, thread and agent it serves."""

    run_id: str
    thread_id: str
    agent_path: str
    principal: str | None
    ledger: GateStore
    clock: Any
    grants: Sequence[Grant] | None = None
    """Grants an external host passed for this run; when set, stored grants are not consulted."""
    stored_grants: Sequence[Grant] | None = None
    """The principal's active stored grants, read with the segment's first read; `None`: look them up per call."""
    widest_scope: Scope | None = None
    """The widest scope a request may offer in this run (`once` when the host remembers nothing)."""
    delegate: Callable[[str, str, str], Awaitable[str]] | None = None
    """Hands work to a delegate agent: `(agent, task, tool_call_id) -> its answer` (or the run pauses)."""
    marked: frozenset[str] = frozenset()
    """Approved requests whose ledger mark this segment wrote when it consumed the pause."""
    executed: list[ExecutionResult] = field(default_factory=list[ExecutionResult])
    """Results of marked calls, committed with the run's next save."""
    giver_may_decide: Callable[[Grant], bool] = lambda grant: False
    """Whether whoever gave a grant may still decide for its principal and agent; a grant reaches no further."""
    chat_thread_id: str | None = None
    """The person's chat (the top-level run's thread) for a delegate's run; `thread` grants are bound to it."""
    client_tools: Sequence[ClientTool] = ()
    """The client's tools this run offers the model (those the agent allows)."""


@dataclass
class Gate(AbstractCapability[Any]):
    """An agent's interrupt policy, as the capability that puts its gate around the agent's whole toolset."""

    policy: InterruptPolicy = InterruptPolicy()
    subjects: dict[str, Callable[..., Any]] = field(default_factory=dict[str, Callable[..., Any]])
    """Subject functions of the policy's rules, by import spec."""
    ungated: frozenset[str] = frozenset()
    """Tools sayso provides itself (`ask_user`): no policy applies to them."""
    hook: BeforeToolCall | None = None
    """The agent's before-call hook: it runs inside the gate, before every call of the agent's tools.

    See docs/guides/mcp.md#pausing-from-a-hook.
    """

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # built from sayso's config, never from an agent spec

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        # The hook sits inside the gate, as a tool's own body does: the gate's policy approval comes
        # first, and what the hook asks for (an approval, a page to visit) goes through the gate's
        # handling of a body's request. Read per run, so `Sayso.before_tool_call` takes effect at once.
        return GateToolset(HookToolset(toolset, hook=self.hook, skip=self.ungated), gate=self)

    def subject_for(self, tool_name: str, args: dict[str, Any], gate: PolicyGate | None = None) -> Subject | None:
        """The subject a call would be approved for; `None` means the call needs no approval."""
        gate = gate or gate_for(self.policy, tool_name, declared=True, read_only=False)
        spec = gate.rule.subject if gate and gate.rule else None
        if spec is None:
            return whole_tool_subject(tool_name)
        return subject_from(self.subjects[spec](tool_name, args), tool_name)


@dataclass
class GateToolset(WrapperToolset[Any]):
    """One run's gate: the agent's toolset under its interrupt policy and the at-most-once ledger, plus client tools."""

    gate: Gate = field(default_factory=Gate)

    @property
    def policy(self) -> InterruptPolicy:
        return self.gate.policy

    def subject_for(self, tool_name: str, args: dict[str, Any], gate: PolicyGate | None = None) -> Subject | None:
        """The subject a call would be approved for (see `Gate.subject_for`)."""
        return self.gate.subject_for(tool_name, args, gate)

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        tools = await super().get_tools(ctx)
        # A tool declared with pydantic-ai's own `requires_approval=True` is gated here instead,
        # so that every approval goes through the same policy, ledger and request shape.
        found = {name: _as_gated(t) if t.tool_def.kind == "unapproved" else t for name, t in tools.items()}
        deps = ctx.deps
        if isinstance(deps, RunDeps):
            for declared in deps.client_tools:
                if declared.name in found:
                    raise UserError(
                        f"the client tool {declared.name!r} conflicts with the agent's own tool of that name"
                    )
                found[declared.name] = client_tool(self, declared)
        return found

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        deps = ctx.deps
        assert isinstance(deps, RunDeps)
        for declared in deps.client_tools:
            if declared.name == name:
                defer_client_call(declared, tool_args)
        if name in self.gate.ungated:
            return await super().call_tool(name, tool_args, ctx, tool)
        if ctx.tool_call_approved:
            return await self._run_approved(name, tool_args, ctx, tool, deps)
        options = options_of(tool.tool_def)
        gate = gate_for(self.policy, name, declared=options.requires_approval, read_only=options.read_only)
        schema = tool.tool_def.parameters_json_schema
        subject = self.subject_for(name, tool_args, gate) if gate is not None else None
        if gate is not None and subject is not None:
            grant = await self._covering_grant(deps, name, subject)
            if grant is not None:
                return await self._run_granted(name, tool_args, ctx, tool, deps, grant)
            raise ApprovalRequired(
                metadata=Deferral(
                    kind="approval",
                    hint=options.hint or default_hint(name),
                    scopes=_up_to(gate.scopes, deps.widest_scope),
                    ttl_seconds=gate.ttl_seconds,
                    args_schema=schema,
                    subject=subject,
                    binding=call_binding(name, tool_args, subject.key),
                    tool_info=_tool_info(tool.tool_def),
                ).as_metadata()
            )
        try:
            result = await self._call(name, tool_args, ctx, tool)
        except ApprovalRequired as asked:
            deferral = deferral_of(asked.metadata) or Deferral(kind="approval")
            deferral = deferral.with_defaults(
                hint=options.hint or default_hint(name), args_schema=schema, ttl_seconds=self.policy.ttl_seconds
            )
            raise ApprovalRequired(metadata=deferral.as_metadata()) from None
        ask = self._service_ask(result)
        if ask is not None:
            subject = ask.subject or whole_tool_subject(name)
            raise ApprovalRequired(
                metadata=Deferral(
                    kind="approval",
                    hint=ask.message or options.hint or default_hint(name),
                    scopes=tuple(ask.scopes),
                    ttl_seconds=self.policy.ttl_seconds,
                    expires_at=ask.expires_at,
                    args_schema=schema,
                    subject=subject,
                    service_request=ask.request,
                    tool_info=_tool_info(tool.tool_def),
                ).as_metadata()
            )
        return result

    async def _call(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]) -> Any:
        """Run the call; an error it raises becomes what the model reads, and the run carries on.

        A run that failed on a tool's error would leave the person's thread stuck on a call
        nobody answered; the model can tell the person, or try something else.
        """
        try:
            return await super().call_tool(name, tool_args, ctx, tool)
        except PASSES_THROUGH:
            raise
        except Exception as exc:
            error = tool_error(name, exc)
            logger.warning("%s (the model reads it as the call's result)", error, exc_info=exc)
            raise ToolFailed(error) from exc

    def _service_ask(self, result: Any) -> ServiceAsk | None:
        """A service's approval request in a tool's reply, when the policy lets tools ask.

        See docs/concepts/pauses.md#tools-whose-service-asks.
        """
        if not self.policy.tool_approvals:
            return None
        return parse_service_ask(result.return_value if isinstance(result, ToolReturn) else result)

    async def _run_approved(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any], deps: RunDeps
    ) -> Any:
        approved = approved_call_of(ctx.tool_call_metadata)
        assert approved is not None, "an approved call always carries its request"
        request_id = approved.request_id
        fresh = request_id in deps.marked
        mismatch = self._mismatch(name, tool_args, approved, ctx, tool)
        if mismatch is not None:
            refused = f"{name}: {NO_MATCH} ({mismatch})"
            # The ledger and the audit say the call did not run (not "outcome unknown").
            refusal: dict[str, Any] = {"event": "refused", "request_id": request_id, "tool_name": name}
            refusal.update(reason=refused, at=deps.clock())
            if fresh:
                deps.executed.append(ExecutionResult(request_id=request_id, result=to_json(refused), audit=refusal))
            raise ApprovalMismatch(refused)
        if not fresh:
            # Carrying on after a crash: the ledger says whether this call already started.
            earlier = await deps.ledger.begin_execution(request_id, deps.run_id, deps.clock())
            if earlier is not None:
                if earlier.status in ("done", "unknown") and earlier.result is not None:
                    return json.loads(earlier.result)
                if not options_of(tool.tool_def).idempotent:
                    # Cut off by a crash: recorded as unknown (ledger and audit), never run a second time.
                    unknown = outcome_unknown(
                        request_id=request_id, run_id=deps.run_id, tool_name=name, at=deps.clock()
                    )
                    await deps.ledger.finish_execution(
                        request_id, to_json(UNKNOWN_OUTCOME), deps.clock(), audit=[unknown], status="unknown"
                    )
                    return UNKNOWN_OUTCOME
        failed: ToolFailed | None = None
        try:
            result = await self._call(name, tool_args, ctx, tool)
        except ToolFailed as exc:
            result, failed = exc.message, exc
        if self._service_ask(result) is not None:
            result = STILL_NEEDS_APPROVAL
        now = deps.clock()
        audit: dict[str, Any] = {
            "event": "executed",
            "request_id": request_id,
            "tool_name": name,
            "executed_args": tool_args,
            "at": now,
        }
        if failed is not None:
            audit["error"] = failed.message
        if fresh:
            deps.executed.append(
                ExecutionResult(request_id=request_id, result=to_json(result, fallback=str), audit=audit)
            )
        else:
            await deps.ledger.finish_execution(request_id, to_json(result, fallback=str), now, audit=[audit])
        if failed is not None:
            raise failed
        return result

    def _mismatch(
        self,
        name: str,
        tool_args: dict[str, Any],
        approved_call: ApprovedCall,
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
    ) -> str | None:
        """How the call about to run differs from the one approved (arguments, subject); `None` when it is that call.

        The approved arguments are compared as the tool validated them, as the call's own are:
        an approved `30` is the `30.0` a float parameter runs with, and defaults the person left
        out are filled in on both sides.
        """
        approved = approved_call.approved_args
        if approved is None:
            return None
        try:
            as_validated = tool.args_validator.validate_python(approved, context=ctx.validation_context)
        except ValueError as exc:
            return f"the approved arguments no longer fit the tool: {exc}"
        changed = sorted(k for k in {*as_validated, *tool_args} if as_validated.get(k) != tool_args.get(k))
        if changed:
            return f"arguments changed: {', '.join(changed)}"
        subject_key = approved_call.subject_key
        subject = self.subject_for(name, tool_args)
        if subject_key is not None and (subject is None or subject.key != subject_key):
            return f"it now covers {subject.label if subject else 'nothing that needs approval'}"
        return None

    async def _covering_grant(self, deps: RunDeps, name: str, subject: Subject) -> Grant | None:
        principal = deps.principal or ""
        if deps.grants is not None:
            grants = deps.grants
        elif deps.stored_grants is not None:
            grants = deps.stored_grants
        else:
            grants = await deps.ledger.grants_for(principal=principal, tool=name, subject_key=subject.key)
        return covering_grant(
            [g for g in grants if deps.giver_may_decide(g)],
            tool=name,
            subject_key=subject.key,
            principal=principal,
            thread_id=deps.chat_thread_id or deps.thread_id,
            agent_path=deps.agent_path,
            now=deps.clock(),
        )

    async def _run_granted(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
        deps: RunDeps,
        grant: Grant,
    ) -> Any:
        """Run a call a remembered approval covers, recording `by: permission` on its result and in the audit.

        The audit says which grant allowed the call before it runs, and `executed` (with the
        arguments it ran with) once it ran, as for a call a person approved.
        """
        record = {
            "decision": "approve",
            "by": "permission",
            "grant_id": grant.grant_id,
            "scope": grant.scope,
            "principal": grant.principal,
            "subject": grant.subject_key,
            "subject_label": grant.subject_label,
            "granted_at": grant.created_at,
            "decided_at": deps.clock(),
            "proposed_args": tool_args,
            "approved_args": tool_args,
            "executed_args": tool_args,
        }
        call = {"tool_name": name, "run_id": deps.run_id, "thread_id": deps.thread_id, "tool_call_id": ctx.tool_call_id}
        await deps.ledger.append_audit([{"event": "decision", **call, **record}])
        executed = {"event": "executed", **call, "grant_id": grant.grant_id, "executed_args": tool_args}
        try:
            result = await self._call(name, tool_args, ctx, tool)
        except ToolFailed as failed:
            await deps.ledger.append_audit([{**executed, "error": failed.message, "at": deps.clock()}])
            raise
        await deps.ledger.append_audit([{**executed, "at": deps.clock()}])
        return ToolReturn(return_value=result, metadata={"approval": record})


def _up_to(scopes: Sequence[Scope], widest: Scope | None) -> tuple[Scope, ...]:
    """The offered scopes no wider than `widest` (all of them when `None`); `once` is always among them."""
    if widest is None:
        return tuple(scopes)
    return tuple(s for s in scopes if SCOPES_BY_WIDTH.index(s) <= SCOPES_BY_WIDTH.index(widest)) or ("once",)


def _as_gated(tool: ToolsetTool[Any]) -> ToolsetTool[Any]:
    """A tool pydantic-ai would defer itself (`requires_approval=True`), as a plain tool the gate asks for.

    The declaration moves into sayso's own options on the tool, so the gate still reads it.
    """
    options = replace(options_of(tool.tool_def), requires_approval=True)
    metadata = {**(tool.tool_def.metadata or {}), META_KEY: asdict(options)}
    return replace(tool, tool_def=replace(tool.tool_def, kind="function", metadata=metadata))


def _tool_info(tool_def: Any) -> ToolInfo | None:
    """What the tool's source says about it (an MCP server's annotations), as the request shows it."""
    info = tool_info_of(tool_def)
    return ToolInfo(**info) if info else None
