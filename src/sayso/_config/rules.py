"""The policy part of an approval rule in `sayso.yaml`: name, `when:` condition, action, reason, escalation.

`ToolRuleConfig` (in `file.py`) takes these fields from `PolicyFields`, so a rule reads
`{name: refund, rule: refunds-large, when: "args.amount > 100", reason: "amount {args.amount} > 100"}`.
A condition and a reason's placeholders are compiled here, as the file loads: a syntax error is a
config error naming the file and line. What a condition names is checked against the tool's
argument schema by `checks.py`, once the agents' tools are known.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from .._core.channels import TARGET_PATTERN
from .._core.conditions import ConditionError, Expression, Reason
from .._core.escalation import EscalationStep, OnTimeout, TimeoutAction, parse_duration, shown_duration
from .._core.policy import PolicyAction, ToolRule
from .routing import ROUTING_FIELDS

POLICY_FIELDS: set[str] = {"rule", "when", "action", "reason", "escalate", "on_timeout"}
"""The fields `PolicyFields` adds to a rule, turned into the core's compiled values by `policy_values`."""


Duration: TypeAlias = Annotated[float, BeforeValidator(parse_duration)]
"""Seconds, or a number with a unit: `90`, `90s`, `15m`, `1h`, `2d`."""


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EscalationStepConfig(_Entry):
    """One step of `escalate:`: `{after: 15m, remind: true}` or `{after: 1h, notify: [...], add_approvers: [...]}`."""

    after: Duration
    """How long after the request was raised the step is due: seconds, or `15m`, `1h`, `2d`."""
    remind: bool = False
    """Tell the request's approvers again."""
    notify: list[Annotated[str, Field(pattern=TARGET_PATTERN)]] = []
    """Channel targets told of the request at this step: `email:sre@example.com`, `slack:#ops`, `webhook:NAME`."""
    add_approvers: list[str] = []
    """Principals or groups who may decide from this step on."""

    def to_core(self) -> EscalationStep:
        return EscalationStep(
            after_seconds=self.after,
            remind=self.remind,
            notify=tuple(self.notify),
            add_approvers=tuple(self.add_approvers),
        )


class OnTimeoutConfig(_Entry):
    """`on_timeout:`: what a request's timeout decides, `{after: 4h, action: reject, reason: "..."}`."""

    after: Duration | None = None
    """When the request times out, counted from when it was raised; unset: the rule's (or the block's)
    `ttl_seconds`. Setting both `after` here and the rule's `ttl_seconds` is an error: one timeout per rule."""
    action: TimeoutAction = "expire"
    """What the timeout decides: `expire` (the default), `reject` or `approve` the call."""
    reason: str | None = Field(default=None, min_length=1)
    """What the model reads about it: a rejection's reason, or words after the expiry."""


class PolicyFields(BaseModel):
    """The fields of a rule that say when it applies and what it does."""

    model_config = ConfigDict(extra="forbid")

    rule: str | None = Field(default=None, min_length=1)
    """The rule's own name, shown with why a request asked (`asked because ... (rule refunds-large)`) and in
    the statistics; unset: the tool name (or pattern) in `name`."""
    when: str | None = Field(default=None, min_length=1)
    """A CEL condition over `args` (the call's arguments), `principal` (`name`, `groups`) and `thread` (`id`,
    `agent`), such as `args.amount > 100`; the rule applies only to calls it holds for. Rules are tried in
    order, the first that applies decides. A condition that cannot be evaluated for a call (a missing field,
    a type mismatch) asks a person, with the error recorded. Unset: the rule applies to every call."""
    action: PolicyAction = "ask"
    """What the rule does to a call it applies to: `ask` a person, `allow` it to run without asking, or
    `deny` it (the model reads the reason as the call's result, and the run goes on)."""
    reason: str | None = Field(default=None, min_length=1)
    """Why, in words: recorded on the request (`asked because <reason>`), or read by the model on a deny.
    Braces quote values, each a CEL expression: `amount {args.amount} > 100`; `{{` and `}}` stand for braces.
    Unset: the condition's text."""

    escalate: list[EscalationStepConfig] = []
    """Steps a request for this rule takes while it waits, each due `after` the request was raised, listed in the
    order they come due: remind the approvers, notify channel targets, add approvers. Each step fires once
    (across replicas), is recorded in the audit log and announced in the outbox (`request.escalated`); a step
    that came due while no process ran fires when one starts. Steps due after the request's timeout never fire."""
    on_timeout: OnTimeoutConfig | None = None
    """What the request's timeout decides (`expire`, `reject` or `approve`, with a reason the model reads),
    and when (`after`, or the rule's `ttl_seconds`)."""

    @model_validator(mode="after")
    def _one_timeout(self) -> PolicyFields:
        if self.on_timeout is not None and self.on_timeout.after is not None:
            if getattr(self, "ttl_seconds", None) is not None:
                raise ValueError("set the timeout once: 'on_timeout.after' or 'ttl_seconds', not both")
        for n, (step, later) in enumerate(zip(self.escalate, self.escalate[1:], strict=False), 1):
            if later.after < step.after:
                # Steps fire in order, each once the one before it has: a later-listed step due sooner would
                # wait for it, and never fire when that one is due after the timeout.
                raise ValueError(
                    f"escalate: list the steps in the order they come due: step {n + 1} (after "
                    f"{shown_duration(later.after)}) comes due before step {n} (after {shown_duration(step.after)})"
                )
        if any(step.add_approvers for step in self.escalate) and not getattr(self, "approvers", None):
            # Unrouted, the thread's owner and the agent's approvers decide: a step could only narrow that.
            raise ValueError(
                "escalate: 'add_approvers' widens the rule's approvers, and the rule names none: "
                "set 'approvers' (principals or groups) on the rule"
            )
        return self

    @field_validator("when")
    @classmethod
    def _compiles(cls, when: str | None) -> str | None:
        if when is not None:
            try:
                Expression(when)
            except ConditionError as exc:
                raise ValueError(f"the condition is not valid CEL: {exc}") from None
        return when

    @field_validator("reason")
    @classmethod
    def _placeholders_compile(cls, reason: str | None) -> str | None:
        if reason is not None:
            try:
                Reason(reason)
            except ConditionError as exc:
                raise ValueError(f"a placeholder of the reason is not valid CEL: {exc}") from None
        return reason

    def to_rule(self, **own: Any) -> ToolRule:
        """The core's rule: `own` fields (unset: every other field of the entry), these compiled."""
        timeout = self.on_timeout
        # Lists of the other fields (`notify`...) are tuples in the core's frozen rule.
        fields = own or self.model_dump(exclude=POLICY_FIELDS | ROUTING_FIELDS)
        for key, value in fields.items():
            if isinstance(value, list):
                fields[key] = tuple(value)
        if timeout is not None and timeout.after is not None:
            fields["ttl_seconds"] = timeout.after
        return ToolRule(
            **fields,
            escalate=tuple(step.to_core() for step in self.escalate),
            on_timeout=OnTimeout(action=timeout.action, reason=timeout.reason) if timeout is not None else None,
            rule=self.rule,
            when=Expression(self.when) if self.when is not None else None,
            action=self.action,
            reason=Reason(self.reason) if self.reason is not None else None,
        )
