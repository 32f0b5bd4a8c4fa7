"""The policy part of an approval rule in `sayso.yaml`: its name, its `when:` condition, action and reason.

`ToolRuleConfig` (in `file.py`) takes these fields from `PolicyFields`, so a rule reads
`{name: refund, rule: refunds-large, when: "args.amount > 100", reason: "amount {args.amount} > 100"}`.
A condition and a reason's placeholders are compiled here, as the file loads: a syntax error is a
config error naming the file and line. What a condition names is checked against the tool's
argument schema by `checks.py`, once the agents' tools are known.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._core.conditions import ConditionError, Expression, Reason
from .._core.policy import PolicyAction, ToolRule

POLICY_FIELDS: set[str] = {"rule", "when", "action", "reason"}
"""The fields `PolicyFields` adds to a rule, turned into the core's compiled values by `policy_values`."""


class PolicyFields(BaseModel):
    """The fields of a rule that say when it applies and what it does."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

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

    def to_rule(self) -> ToolRule:
        """The core's rule: every field of the entry, these compiled."""
        return ToolRule(
            **self.model_dump(exclude=POLICY_FIELDS),
            rule=self.rule,
            when=Expression(self.when) if self.when is not None else None,
            action=self.action,
            reason=Reason(self.reason) if self.reason is not None else None,
        )
