"""`Gate` and `GateToolset`: what makes an agent's tools wait for approval and run approved calls once.

It is the one place where policy meets the engine: before a call it asks the pure policy
whether a person must approve; after approval it consults the execution ledger so a call
that already started (in this or a crashed process) is never started again.

An agent has one toolset: its own tools, `ask_user` and its delegates sit in the agent's
function toolset (MCP bindings beside it), and the agent's `Gate` wraps the whole assembled
toolset in a `GateToolset` for each run (`_engine/agents.py` hands it to pydantic-ai), which
also offers the run's client tools. Tools sayso provides itself (`ask_user`) and client tools
pass the gate without a policy check. Fewer toolsets spare pydantic-ai a task group per toolset step.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, assert_never

import anyio
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed, UserError
from pydantic_ai.messages import ToolReturn
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import to_json

from .._core.access import root_agent
from .._core.audit_events import (
    ExecutedEvent,
    GrantDecisionEvent,
    GrantedCall,
    GrantExecutedEvent,
    GrantRecord,
    OutcomeUnknownEvent,
    PolicyDeniedEvent,
    RefusedEvent,
)
from .._core.conditions import CallVariables, call_variables
from .._core.grants import Grant, covering_grant
from .._core.policy import (
    ApprovalTerms,
    CallVerdict,
    InterruptPolicy,
    approval_terms,
    call_binding,
    denied_text,
    judge_call,
    subject_from,
    whole_tool_subject,
)
from .._core.requests import SCOPES_BY_WIDTH, Scope, Subject, default_hint
from .._core.service import STILL_NEEDS_APPROVAL, ServiceAsk, parse_service_ask
from .._store import ExecutionResult
from ..exceptions import SaysoError, StepOutcomeUnknown
from .calls import (
    META_KEY,
    ApprovalDeferral,
    ApprovedCall,
    CallApproved,
    CallRejected,
    ElicitationAnswered,
    approved_call_of,
    deferral_of,
)
from .deps import RunDeps
from .hooks import BeforeToolCall, HookToolset
from .tools import RuleSource, client_tool, defer_client_call, options_of, rules_of, storable_result, tool_info_of
from .whole_calls import WholeCall

UNKNOWN_OUTCOME = (
    "Outcome unknown: the process stopped after this call was approved and before its result was recorded, "
    "so it may or may not have run; it was not run again. Check its effect before trying again."
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


def outcome_unknown(*, request_id: str, run_id: str, tool_name: str | None, at: float) -> OutcomeUnknownEvent:
    """The audit record of an approved call cut off by a crash: it may or may not have run, and never runs again."""
    return OutcomeUnknownEvent(
        event="outcome_unknown",
        request_id=request_id,
        run_id=run_id,
        tool_name=tool_name,
        at=at,
        reason="the process stopped after the call was approved and before its result was recorded; not run again",
    )


@dataclass
class Gate:
    """An agent's interrupt policy, and what puts its gate around the agent's whole toolset for each run."""

    policy: InterruptPolicy = InterruptPolicy()
    subjects: dict[str, Callable[..., Any]] = field(default_factory=dict[str, Callable[..., Any]])
    """Subject functions of the policy's rules, by import spec."""
    ungated: frozenset[str] = frozenset()
    """Tools sayso provides itself (`ask_user`): no policy applies to them."""
    rules: RuleSource | None = None  # rebuilds the rules an MCP binding adds to a tool from this process's config
    hook: BeforeToolCall | None = None
    """The agent's before-call hook: it runs inside the gate, before every call of the agent's tools.

    See docs/guides/mcp.md#pausing-from-a-hook.
    """

    def wrap(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        """`toolset` behind this gate, for one run."""
        # The hook sits inside the gate, as a tool's own body does: the gate's policy approval comes
        # first, and what the hook asks for (an approval, a page to visit) goes through the gate's
        # handling of a body's request. Read per run, so `Sayso.before_tool_call` takes effect at once;
        # without a hook there is no layer for it (each layer is a few more calls per step in pydantic-ai).
        hooked = toolset if self.hook is None else HookToolset(toolset, hook=self.hook, skip=self.ungated)
        return GateToolset(hooked, gate=self)

    def subject_for(self, tool_name: str, args: dict[str, Any], terms: ApprovalTerms | None = None) -> Subject | None:
        """The subject a call would be approved for; `None` means the call needs no approval."""
        terms = terms or approval_terms(self.policy, tool_name, declared=True, read_only=False)
        spec = terms.rule.subject if terms and terms.rule else None
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

    def subject_for(self, tool_name: str, args: dict[str, Any], terms: ApprovalTerms | None = None) -> Subject | None:
        """The subject a call would be approved for (see `Gate.subject_for`)."""
        return self.gate.subject_for(tool_name, args, terms)

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
        variables = call_variables(
            tool_args,
            principal=deps.principal,
            groups=self.policy.groups_of(deps.principal),
            thread_id=deps.chat_thread_id or deps.thread_id,
            agent=deps.agent_path,
        )
        # The rules the tool's source adds (an MCP binding's), rebuilt here, are tried after the agent's own.
        added = rules_of(tool.tool_def, self.gate.rules)
        policy = replace(self.policy, tools=(*self.policy.tools, *added)) if added else self.policy
        verdict = judge_call(policy, name, variables, declared=options.requires_approval, read_only=options.read_only)
        if verdict.action == "deny":
            return await self._deny(name, variables, ctx, deps, verdict)
        terms = verdict.terms
        schema = tool.tool_def.parameters_json_schema
        subject = self.subject_for(name, tool_args, terms) if terms is not None else None
        if terms is not None and subject is not None:
            # An agent's rule without approvers routes as the binding of the tool says, if one does.
            routing = (terms.rule.routing if terms.rule is not None else None) or next(
                (r.routing for r in added if r.routing is not None), None
            )
            # A routed call asks its approvers every time: no remembered approval stands in for them; nor
            # for a subject no store keeps, which is approved once at a time.
            once_only = routing is not None or not subject.rememberable
            grant = None if once_only else await self._covering_grant(deps, name, subject)
            if grant is not None:
                return await self._run_granted(name, tool_args, ctx, tool, deps, grant)
            raise ApprovalRequired(
                metadata=ApprovalDeferral(
                    hint=options.hint or default_hint(name),
                    scopes=("once",) if once_only else _up_to(terms.scopes, deps.widest_scope),
                    routing=routing,
                    ttl_seconds=terms.ttl_seconds,
                    args_schema=schema,
                    subject=subject,
                    binding=call_binding(name, tool_args, subject.key),
                    tool_info=tool_info_of(tool.tool_def),
                    asked_because=terms.asked_because,
                    rule=verdict.rule,
                    escalation=terms.escalate,
                    on_timeout=terms.on_timeout,
                ).as_metadata()
            )
        try:
            result = await self._call(name, tool_args, ctx, tool)
        except ApprovalRequired as asked:
            # A body's own ask (or an MCP server's question) gets the tool's TTL, an approval its hint and schema.
            deferral = (deferral_of(asked.metadata) or ApprovalDeferral()).with_ttl(self.policy.ttl_seconds)
            if isinstance(deferral, ApprovalDeferral):
                deferral = deferral.with_defaults(hint=options.hint or default_hint(name), args_schema=schema)
            raise ApprovalRequired(metadata=deferral.as_metadata()) from None
        ask = self._service_ask(result)
        if ask is not None:
            subject = ask.subject or whole_tool_subject(name)
            raise ApprovalRequired(
                metadata=ApprovalDeferral(
                    hint=ask.message or options.hint or default_hint(name),
                    scopes=tuple(ask.scopes),
                    ttl_seconds=self.policy.ttl_seconds,
                    expires_at=ask.expires_at,
                    args_schema=schema,
                    subject=subject,
                    service_request=ask.request,
                    tool_info=tool_info_of(tool.tool_def),
                ).as_metadata()
            )
        return result

    async def _deny(
        self, name: str, variables: CallVariables, ctx: RunContext[Any], deps: RunDeps, verdict: CallVerdict
    ) -> str:
        """A call the policy denies does not run: the model reads the rule's reason as its result, and the run goes on.

        The audit says which rule denied which call, and why.
        """
        await deps.ledger.append_audit(
            [
                PolicyDeniedEvent(
                    event="policy_denied",
                    tool_name=name,
                    run_id=deps.run_id,
                    thread_id=deps.thread_id,
                    tool_call_id=ctx.tool_call_id,
                    rule=verdict.rule or "",
                    reason=verdict.reason,
                    principal=deps.principal,
                    proposed_args=variables["args"],
                    at=deps.clock(),
                )
            ]
        )
        return denied_text(verdict)

    async def _call(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]) -> Any:
        """Run the call; an error it raises becomes what the model reads, and the run carries on.

        A run that failed on a tool's error would leave the person's thread stuck on a call
        nobody answered; the model can tell the person, or try something else.
        """
        try:
            return storable_result(name, await super().call_tool(name, tool_args, ctx, tool))
        except StepOutcomeUnknown as exc:  # sayso's, but about the tool's own work: the model reads it and decides
            raise ToolFailed(tool_error(name, exc)) from exc
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
            refusal = RefusedEvent(
                event="refused", request_id=request_id, tool_name=name, reason=refused, at=deps.clock()
            )
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

        async def record(result: Any, error: str | None) -> Any:
            """Record the call in the ledger, with its audit (`error`: what it raised, as the model reads it)."""
            if self._service_ask(result) is not None:
                result = STILL_NEEDS_APPROVAL
            now = deps.clock()
            audit = ExecutedEvent(
                event="executed", request_id=request_id, tool_name=name, executed_args=tool_args, at=now
            )
            if error is not None:
                audit["error"] = error
            ran = to_json(result, fallback=str)
            if fresh:
                deps.executed.append(ExecutionResult(request_id=request_id, result=ran, audit=audit))
            else:
                await deps.ledger.finish_execution(request_id, ran, now, audit=[audit])
            return result

        call = WholeCall(self._call(name, tool_args, ctx, tool))
        try:
            result = await call.result()
        except ToolFailed as failed:
            await record(failed.message, failed.message)
            raise
        except asyncio.CancelledError:
            ended = await call.ended()  # a sync tool's thread ran on: what it returned is kept, not lost
            if not ended.cancelled() and isinstance(error := ended.exception(), ToolFailed | None):
                with anyio.CancelScope(shield=True):
                    await record(error.message, error.message) if error else await record(ended.result(), None)
            raise
        return await record(result, None)

    def _mismatch(
        self,
        name: str,
        tool_args: Mapping[str, Any],
        approved_call: ApprovedCall,
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
    ) -> str | None:
        """How the call about to run differs from the one approved (arguments, subject); `None` when it is that call.

        The approved arguments are compared as the tool validated them, as the call's own are:
        an approved `30` is the `30.0` a float parameter runs with, and defaults the person left
        out are filled in on both sides.
        """
        match approved_call:
            case CallApproved(approved_args=approved) if approved is not None:
                pass
            case CallApproved() | CallRejected() | ElicitationAnswered():
                return None
            case _:
                assert_never(approved_call)
        try:
            as_validated = tool.args_validator.validate_python(approved, context=ctx.validation_context)
        except ValueError as exc:
            return f"the approved arguments no longer fit the tool: {exc}"
        changed = sorted(k for k in {*as_validated, *tool_args} if as_validated.get(k) != tool_args.get(k))
        if changed:
            return f"arguments changed: {', '.join(changed)}"
        subject_key = approved_call.subject_key
        subject = self.subject_for(name, dict(tool_args))
        if subject_key is not None and (subject is None or subject.key != subject_key):
            return f"it now covers {subject.label if subject else 'nothing that needs approval'}"
        return None

    async def _covering_grant(self, deps: RunDeps, name: str, subject: Subject) -> Grant | None:
        principal = deps.principal or ""
        agent_path = deps.agent_path
        if deps.grants is not None:
            grants = deps.grants
            # A host keeps grants per agent it talks to and knows nothing of its delegates: its grants name the
            # root agent and cover every call made for it.
            agent_path = root_agent(agent_path)
        elif deps.stored_grants is not None:
            grants = deps.stored_grants
        else:
            grants = await deps.ledger.grants_for(principal=principal, tool=name, subject_key=subject.key)
        return covering_grant(
            [g for g in grants if deps.services.giver_may_decide(g)],
            tool=name,
            subject_key=subject.key,
            principal=principal,
            thread_id=deps.chat_thread_id or deps.thread_id,
            agent_path=agent_path,
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
        record = GrantRecord(
            decision="approve",
            by="permission",
            grant_id=grant.grant_id,
            scope=grant.scope,
            principal=grant.principal,
            subject=grant.subject_key,
            subject_label=grant.subject_label,
            granted_at=grant.created_at,
            decided_at=deps.clock(),
            proposed_args=tool_args,
            approved_args=tool_args,
            executed_args=tool_args,
        )
        call = GrantedCall(tool_name=name, run_id=deps.run_id, thread_id=deps.thread_id, tool_call_id=ctx.tool_call_id)
        await deps.ledger.append_audit([GrantDecisionEvent(event="decision", **call, **record)])
        try:
            result = await self._call(name, tool_args, ctx, tool)
        except ToolFailed:
            # It ran, and raised: the model reads the error as its result.
            await deps.ledger.append_audit(
                [
                    GrantExecutedEvent(
                        event="executed", **call, grant_id=grant.grant_id, executed_args=tool_args, at=deps.clock()
                    )
                ]
            )
            raise
        await deps.ledger.append_audit(
            [
                GrantExecutedEvent(
                    event="executed", **call, grant_id=grant.grant_id, executed_args=tool_args, at=deps.clock()
                )
            ]
        )
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
