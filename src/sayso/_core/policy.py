"""Which tool calls wait for a person (docs/concepts/pauses.md#approval-gates), as data and pure functions."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any, Literal, TypeAlias

from pydantic.json_schema import JsonSchemaValue

from .audit import canonical_json
from .conditions import CallVariables, EvaluationError, Expression, Reason, unknown_references
from .decisions import Approve, Decision, Expired, Reject
from .escalation import EscalationStep, OnTimeout
from .model_text import REJECTION_PRESETS, RejectionText
from .requests import Scope, Subject, offered_scopes
from .routing import Routing

PolicyAction: TypeAlias = Literal["ask", "allow", "deny"]
"""What a rule does to a call: ask a person (the default), let it run without asking, or deny it."""


@dataclass(frozen=True, kw_only=True)
class ToolRule:
    """One entry of `interrupt.tools`: a name or fnmatch glob, with optional overrides."""

    name: str
    """Tool name or glob such as `merchant___*`."""
    remember: Scope | None = None
    """Widest scope offered for this tool; `None` uses the policy's."""
    subject: str | None = None
    """Import spec of the subject function (`pkg.mod:fn`) that narrows what a decision covers."""
    ttl_seconds: float | None = None
    """How long a request for this tool waits; `None` uses the policy's."""
    routing: Routing | None = None
    """Who decides this tool's requests and how many must agree (docs/guides/routing.md); `None`: unrouted."""
    notify: tuple[str, ...] = ()
    """Where each request for this tool is announced (`email:ADDRESS`, `slack:#CHANNEL`, `webhook:NAME`)."""
    rule: str | None = None
    """The rule's own name, shown with why a request asked and in the statistics; `None`: the tool name."""
    when: Expression | None = None
    """The CEL condition under which the rule applies; `None`: every call of the tool."""
    action: PolicyAction = "ask"
    """What the rule does to a call it applies to: ask a person, let it run, or deny it."""
    reason: Reason | None = None
    """Why, in words (with `{expression}` placeholders); `None`: the condition's text."""
    escalate: tuple[EscalationStep, ...] = ()
    """The steps a request for this rule takes while it waits (`_core/escalation.py`)."""
    on_timeout: OnTimeout | None = None
    """What the request's expiry decides; `None`: it expires."""

    @property
    def label(self) -> str:
        """The rule's name as people read it."""
        return self.rule or self.name

    def matches(self, tool_name: str) -> bool:
        """Whether this rule covers `tool_name` (exact name or glob)."""
        return self.name == tool_name or fnmatchcase(tool_name, self.name)


@dataclass(frozen=True, kw_only=True)
class InterruptPolicy:
    """An agent's pause policy: which calls need approval, what may be remembered, how long requests wait."""

    tools: tuple[ToolRule, ...] = ()
    """Rules in order; the first that matches a tool wins."""
    skip_read_only: bool = False
    """Let calls to tools annotated `readOnlyHint: true` run without asking."""
    remember: Scope = "once"
    """Widest scope offered by default."""
    ttl_seconds: float | None = None
    """Default time a request waits before it expires; `None` waits forever."""
    tool_approvals: bool = False
    """Whether tools may ask for approval through their reply (`{"sayso_approval": {...}}`)."""
    rejection: RejectionText = REJECTION_PRESETS["sayso"]
    """What the model reads when the person rejects one of the agent's calls."""
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The config's groups, `(group, members)`: what a condition reads as `principal.groups`."""

    def groups_of(self, principal: str | None) -> tuple[str, ...]:
        """The groups `principal` is a member of, as conditions read them."""
        return tuple(group for group, members in self.groups if principal is not None and principal in members)


@dataclass(frozen=True, kw_only=True)
class ApprovalTerms:
    """Why a call waits for approval, and on what terms (the engine's `Gate` applies them)."""

    rule: ToolRule | None
    """The policy rule that matched, or `None` when the tool itself declared the need."""
    scopes: tuple[Scope, ...]
    ttl_seconds: float | None
    asked_because: str | None = None
    """Why the call asks, as the request records it (`amount 250 > 100`)."""
    escalate: tuple[EscalationStep, ...] = ()
    on_timeout: OnTimeout | None = None


@dataclass(frozen=True, kw_only=True)
class CallVerdict:
    """What the policy does with one call: ask (on `terms`), let it run, or deny it with a reason."""

    action: PolicyAction
    rule: str | None
    """The name of the rule that decided; `None` when no rule did (the tool's own declaration, or nothing)."""
    reason: str
    """Why, in words: a deny's reason reaches the model; an ask's is recorded on the request."""
    terms: ApprovalTerms | None = None
    """An ask's terms (scopes, expiry)."""
    error: str | None = None
    """A condition that could not be evaluated: the call asks (fail closed), and this says why."""


def judge_call(
    policy: InterruptPolicy,
    tool_name: str,
    variables: CallVariables,
    *,
    declared: bool,
    read_only: bool,
) -> CallVerdict:
    """The policy's verdict on one call: the first rule for the tool whose condition holds decides.

    A rule without `when` always holds. A condition that cannot be evaluated (a missing field, a
    type mismatch) asks a person, with the error recorded: it never lets a call run, nor denies
    what a person might approve, nor lets others decide than the later rules would (`_unevaluated`).
    No rule holding: the call asks when its tool declared the need, and runs otherwise; an
    `allow` never lets a tool that requires approval run unasked.
    `skip_read_only` lets a read-only tool's call run instead of asking, never past a deny.

    Args:
        policy: the agent's policy.
        tool_name: the tool the model called.
        variables: `args`, `principal` and `thread` (`conditions.call_variables`).
        declared: the tool was declared with `requires_approval=True`.
        read_only: the tool is annotated `readOnlyHint: true`.
    """
    for n, rule in enumerate(policy.tools):
        if not rule.matches(tool_name):
            continue
        if rule.when is not None:
            try:
                holds = rule.when.evaluate(variables)
                error = None if isinstance(holds, bool) else f"{rule.when.source!r} gave {holds!r}, not true or false"
            except EvaluationError as exc:
                holds, error = False, str(exc)
            if error is not None:  # the later rules say what the call would meet had it not held
                rest = replace(policy, tools=policy.tools[n + 1 :])
                after = judge_call(rest, tool_name, variables, declared=declared, read_only=read_only)
                return _unevaluated(policy, rule, error, after)
            if not holds:
                continue
        reason = _reason_of(rule, tool_name, variables)
        if rule.action == "deny":
            return CallVerdict(action="deny", rule=rule.label, reason=reason)
        if policy.skip_read_only and read_only:
            return CallVerdict(action="allow", rule=rule.label, reason=f"{tool_name} is read-only")
        if rule.action == "allow" and not declared:
            return CallVerdict(action="allow", rule=rule.label, reason=reason)
        if rule.action == "allow":
            break  # a tool that requires approval asks whatever the policy says
        return _ask(policy, rule, reason, None)
    if declared and not (policy.skip_read_only and read_only):
        return CallVerdict(
            action="ask",
            rule=None,
            reason="the tool requires approval",
            terms=ApprovalTerms(
                rule=None,
                scopes=offered_scopes(policy.remember),
                ttl_seconds=policy.ttl_seconds,
                asked_because="the tool requires approval",
            ),
        )
    return CallVerdict(action="allow", rule=None, reason="no rule asks for this call")


def reference_problems(rule: ToolRule, args_schema: JsonSchemaValue | None) -> list[tuple[str, str, str]]:
    """What the rule's condition and reason name that a call with `args_schema` does not have.

    Each problem is `(field, expression, what is wrong)`, the field `when` or `reason`; `args_schema`
    `None` checks the variables only (`conditions.unknown_references`).
    """
    sources = [("when", rule.when.source)] if rule.when is not None else []
    if rule.reason is not None:
        sources.extend(("reason", e.source) for e in rule.reason.expressions)
    return [(key, source, problem) for key, source in sources for problem in unknown_references(source, args_schema)]


def _reason_of(rule: ToolRule, tool_name: str, variables: CallVariables) -> str:
    if rule.reason is not None:
        return rule.reason.render(variables)
    if rule.when is not None:
        return rule.when.source
    return f"every call to {tool_name} waits for approval" if rule.action == "ask" else f"rule for {tool_name}"


def _unevaluated(policy: InterruptPolicy, rule: ToolRule, error: str, after: CallVerdict) -> CallVerdict:
    """A condition that could not be evaluated asks a person (fail closed), saying why.

    An ask rule asks on its own terms. A deny or allow rule might not have held, and then `after` (the later
    rules' verdict) decides: when that asks, on the terms of a rule (its approvers and quorum), the call asks
    on those, so an error never lets fewer or other people decide than a condition that did not hold would;
    a deny rule before a later denial denies, as it would either way.
    """
    if rule.action == "deny" and after.action == "deny":
        return after  # denied whether it held or not
    reason = f"the condition of rule {rule.label} could not be evaluated ({error})"
    later = after.terms
    if rule.action == "ask" or after.action != "ask" or later is None or later.rule is None:
        return _ask(policy, rule, reason, error)
    return replace(after, reason=reason, terms=replace(later, asked_because=reason), error=error)


def _ask(policy: InterruptPolicy, rule: ToolRule, reason: str, error: str | None) -> CallVerdict:
    widest = rule.remember or policy.remember
    ttl = rule.ttl_seconds if rule.ttl_seconds is not None else policy.ttl_seconds
    terms = ApprovalTerms(
        rule=rule,
        scopes=offered_scopes(widest),
        ttl_seconds=ttl,
        asked_because=reason,
        escalate=rule.escalate,
        on_timeout=rule.on_timeout,
    )
    return CallVerdict(action="ask", rule=rule.label, reason=reason, terms=terms, error=error)


def denied_text(verdict: CallVerdict) -> str:
    """What the model reads as the result of a call the policy denied."""
    return f"Denied by policy (rule {verdict.rule}): {verdict.reason}"


def approval_terms(policy: InterruptPolicy, tool_name: str, *, declared: bool, read_only: bool) -> ApprovalTerms | None:
    """The approval a call to `tool_name` waits for, or `None` when it runs without asking.

    Args:
        policy: the agent's policy.
        tool_name: the tool the model called.
        declared: the tool was declared with `requires_approval=True`.
        read_only: the tool is annotated `readOnlyHint: true`.
    """
    rule = rule_for(policy, tool_name)
    if rule is None and not declared:
        return None
    if policy.skip_read_only and read_only:
        return None
    widest = (rule.remember if rule and rule.remember else None) or policy.remember
    ttl = rule.ttl_seconds if rule and rule.ttl_seconds is not None else policy.ttl_seconds
    return ApprovalTerms(rule=rule, scopes=offered_scopes(widest), ttl_seconds=ttl)


def rule_for(policy: InterruptPolicy, tool_name: str) -> ToolRule | None:
    """The rule that governs calls to `tool_name`: the first that matches it, or `None`."""
    return next((r for r in policy.tools if r.matches(tool_name)), None)


def whole_tool_subject(tool_name: str) -> Subject:
    """The default subject: a remembered decision covers every call of the tool."""
    return Subject(key=f"tool:{tool_name}", label=f"every call to {tool_name}")


def subject_from(value: object, tool_name: str) -> Subject | None:
    """Read what a subject function returned: `{key, label}`, a string, or `None` (no approval needed).

    Raises:
        ValueError: the function returned something else.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return Subject(key=value, label=value)
    if isinstance(value, Subject):
        return value
    if isinstance(value, dict) and isinstance(value.get("key"), str):
        return Subject(key=value["key"], label=str(value.get("label") or value["key"]))
    raise ValueError(
        f"the subject function for {tool_name!r} returned {value!r}; expected {{key, label}}, a string or None"
    )


def call_binding(tool_name: str, args: dict[str, Any], subject_key: str) -> str:
    """The hash a request is bound to: the tool, its canonical arguments and the subject."""
    return hashlib.sha256(f"{tool_name}|{canonical_json(args)}|{subject_key}".encode()).hexdigest()


def may_decide(principal: str, *, owner: str | None, agent: str, approver_for: Sequence[str]) -> bool:
    """Only the thread's owner, or a principal with the approver role for the agent, may decide.

    See docs/guides/rest.md#who-may-call.
    """
    if owner is not None and principal == owner:
        return True
    return any(fnmatchcase(agent, pattern) for pattern in approver_for)


def timeout_decision(on_timeout: OnTimeout | None, expires_at: float) -> Decision:
    """What the expiry sweep records for a request whose time ran out."""
    if on_timeout is None or on_timeout.action == "expire":
        return Expired(expires_at=expires_at, reason=on_timeout.reason if on_timeout else None)
    if on_timeout.action == "reject":
        return Reject(reason=on_timeout.reason or "no decision before the request timed out")
    return Approve()
