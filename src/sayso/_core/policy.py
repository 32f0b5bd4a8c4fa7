"""Which tool calls wait for a person (docs/concepts/pauses.md#approval-gates), as data and pure functions."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from .audit import canonical_json
from .decisions import REJECTION_PRESETS, RejectionText
from .requests import Scope, Subject, offered_scopes
from .routing import Routing


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


@dataclass(frozen=True, kw_only=True)
class ApprovalTerms:
    """Why a call waits for approval, and on what terms (the engine's `Gate` applies them)."""

    rule: ToolRule | None
    """The policy rule that matched, or `None` when the tool itself declared the need."""
    scopes: tuple[Scope, ...]
    ttl_seconds: float | None


def approval_terms(policy: InterruptPolicy, tool_name: str, *, declared: bool, read_only: bool) -> ApprovalTerms | None:
    """The approval a call to `tool_name` waits for, or `None` when it runs without asking.

    Args:
        policy: the agent's policy.
        tool_name: the tool the model called.
        declared: the tool was declared with `requires_approval=True`.
        read_only: the tool is annotated `readOnlyHint: true`.
    """
    rule = next((r for r in policy.tools if r.matches(tool_name)), None)
    if rule is None and not declared:
        return None
    if policy.skip_read_only and read_only:
        return None
    widest = (rule.remember if rule and rule.remember else None) or policy.remember
    ttl = rule.ttl_seconds if rule and rule.ttl_seconds is not None else policy.ttl_seconds
    return ApprovalTerms(rule=rule, scopes=offered_scopes(widest), ttl_seconds=ttl)


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
