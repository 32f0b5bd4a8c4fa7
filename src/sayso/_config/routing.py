"""Who decides, as configuration: `groups:` of principals, and a rule's `approvers`, quorum and self-approval.

See docs/guides/routing.md. A rule object of `interrupt.tools` and an MCP binding take these
fields; the names are checked against `principals:` and `groups:` when the file loads, and the
groups are resolved then, so a request carries the principals who may decide it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._core.policy import ToolRule
from .._core.routing import Routing, resolve, resolve_names
from .lines import EntryPath, PlacedError

ROUTING_FIELDS = frozenset({"approvers", "approvals_required", "self_approval"})
"""The routing fields of a rule, left out where the rest of the rule becomes a policy rule."""


class RoutingFields(BaseModel):
    """`approvers`, `approvals_required` and `self_approval`: who decides a rule's requests."""

    model_config = ConfigDict(extra="forbid")

    approvers: list[str] = []
    """Principals and `groups:` who decide this rule's requests (and nobody else); unset: the thread's owner
    or an approver for the agent (`approver_for`) decides, as without routing."""
    approvals_required: int = Field(default=1, ge=1)
    """How many distinct approvers must approve before the call runs; one rejection rejects."""
    self_approval: bool = False
    """Let the principal whose message started the run approve its calls too (off: separation of duties)."""

    @model_validator(mode="after")
    def _quorum_needs_approvers(self) -> RoutingFields:
        if self.approvals_required > 1 and not self.approvers:
            raise ValueError("approvals_required needs approvers: name the principals or groups who vote")
        if len(set(self.approvers)) != len(self.approvers):
            raise ValueError("approvers names a principal or group twice")
        return self

    def routing(self, groups: Mapping[str, Sequence[str]], *, rule: str) -> Routing | None:
        """The routing this rule's requests carry, groups resolved; `None` when it names no approvers."""
        if not self.approvers:
            return None
        return resolve(
            self.approvers,
            groups,
            approvals_required=self.approvals_required,
            self_approval=self.self_approval,
            rule=rule,
        )


def routing_problems(
    where: str,
    at: EntryPath,
    fields: RoutingFields,
    *,
    groups: Mapping[str, Sequence[str]],
    principals: Iterable[str],
) -> list[tuple[EntryPath, str]]:
    """What is wrong with one rule's approvers (the rule at `at`): unknown names, a quorum nobody could reach."""
    known = set(principals)
    problems: list[tuple[EntryPath, str]] = []
    for i, name in enumerate(fields.approvers):
        if name not in groups and known and name not in known:
            listed = ", ".join([*sorted(known), *sorted(groups)])
            message = f"{where}: approver {name!r} is neither a principal nor a group (known: {listed})"
            problems.append(((*at, "approvers", i), message))
    for n, step in enumerate(getattr(fields, "escalate", ())):
        for i, name in enumerate(step.add_approvers):
            if name not in groups and known and name not in known:
                listed = ", ".join([*sorted(known), *sorted(groups)])
                message = (
                    f"{where}: escalate[{n}].add_approvers: {name!r} is neither a principal nor a group "
                    f"(known: {listed})"
                )
                problems.append(((*at, "escalate", n, "add_approvers", i), message))
    if problems or not fields.approvers:
        return problems
    voters = resolve(fields.approvers, groups).approvers
    if fields.approvals_required > len(voters):
        message = (
            f"{where}: approvals_required is {fields.approvals_required} but only {len(voters)} "
            f"approver(s) could vote ({', '.join(a.name for a in voters)})"
        )
        problems.append(((*at, "approvals_required"), message))
    return problems


class RoutingConfig(BaseModel):
    """`groups:` of the whole config, and the check of every rule's approvers against it and `principals:`."""

    model_config = ConfigDict(extra="forbid")

    groups: dict[str, list[str]] = {}
    """Groups of principals a rule's `approvers` may name (`finance: [bob, carol]`); docs/guides/routing.md."""

    @model_validator(mode="after")
    def _approvers_known(self) -> Self:
        principals = [p.name for p in getattr(self, "principals", [])]
        if problems := config_problems(self.groups, principals, self.routed_entries()):
            raise PlacedError(*problems)
        return self

    def routed_entries(self) -> list[tuple[str, EntryPath, object]]:
        """Every entry of the config that may name approvers (`routed_rules`)."""
        agents = getattr(self, "agents", {})
        return routed_rules({n: (a.interrupt.tools, a.mcp) for n, a in agents.items()}, getattr(self, "workflows", {}))


def routed(rule: ToolRule, fields: RoutingFields, groups: Mapping[str, Sequence[str]] | None) -> ToolRule:
    """A policy rule with the routing its config entry names and its steps' `add_approvers`, groups resolved."""
    steps = tuple(
        dataclasses.replace(step, added=resolve_names(step.add_approvers, groups or {})) for step in rule.escalate
    )
    return dataclasses.replace(rule, routing=fields.routing(groups or {}, rule=rule.label), escalate=steps)


def routed_rules(
    agents: Mapping[str, tuple[Sequence[object], Sequence[object]]], workflows: Mapping[str, object]
) -> list[tuple[str, EntryPath, object]]:
    """Every entry that may name approvers, where it is said and its path: agents' rules (`tools`, `mcp`), workflows."""
    found: list[tuple[str, EntryPath, object]] = []
    for name, (tools, bindings) in agents.items():
        found += [
            (f"agent {name!r}: rule {_rule_label(r)!r}", ("agents", name, "interrupt", "tools", i), r)
            for i, r in enumerate(tools)
        ]
        found += [
            (f"agent {name!r}: mcp binding {getattr(b, 'server', b)!r}", ("agents", name, "mcp", i), b)
            for i, b in enumerate(bindings)
        ]
    return found + [(f"workflow {name!r}", ("workflows", name), w) for name, w in workflows.items()]


def _rule_label(rule: object) -> object:
    """A rule entry as its requests name it: its `rule:` name, else its tool (`ToolRule.label`'s rule)."""
    return getattr(rule, "rule", None) or getattr(rule, "name", rule)


def config_problems(
    groups: Mapping[str, Sequence[str]],
    principals: Sequence[str],
    rules: Iterable[tuple[str, EntryPath, object]],
) -> list[tuple[EntryPath, str]]:
    """Every problem of `groups:` and of the rules' approvers (`rules`: where each is, and the rule)."""
    problems = group_problems(groups, principals)
    for where, at, rule in rules:
        if isinstance(rule, RoutingFields):
            problems += routing_problems(where, at, rule, groups=groups, principals=principals)
    return problems


def starter_left_out(
    groups: Mapping[str, Sequence[str]], rules: Iterable[tuple[str, EntryPath, object]]
) -> list[tuple[EntryPath, str, str]]:
    """Quorums a run's starter would leave out of reach: separation of duties takes them out of the vote.

    Only a warning (where, what, the fix): a run started by someone who is not an approver still reaches
    it. Who may vote is the core's rule (`Routing.deciders`), with what escalation steps add counted in.
    A quorum the config never set (one, the default) is not named: the approvers are.
    """
    found: list[tuple[EntryPath, str, str]] = []
    for where, at, fields in rules:
        if not isinstance(fields, RoutingFields) or not fields.approvers:
            continue
        added = [n for step in getattr(fields, "escalate", ()) for n in step.add_approvers]
        named = list(dict.fromkeys([*fields.approvers, *added]))
        required = fields.approvals_required
        routing = resolve(named, groups, approvals_required=required, self_approval=fields.self_approval)
        voters = [a.name for a in routing.approvers]
        fewest = min((len(routing.deciders(v)) for v in voters), default=0)
        if not len(voters) >= required > fewest:
            continue
        if "approvals_required" in fields.model_fields_set:
            found.append(
                (
                    (*at, "approvals_required"),
                    f"{where}: approvals_required is {required}, but a run started by one of its "
                    f"{len(voters)} approvers ({', '.join(voters)}) leaves only {fewest} who may vote (self_approval "
                    "is false), so its request would wait until it expires",
                    "lower approvals_required, add an approver, or set self_approval: true",
                )
            )
            continue
        starter = "its only approver" if len(voters) == 1 else f"one of its {len(voters)} approvers"
        found.append(
            (
                (*at, "approvers"),
                f"{where}: a run started by {starter} ({', '.join(voters)}) leaves nobody who may decide its "
                "requests (self_approval is false), so they would wait until they expire",
                "add an approver, or set self_approval: true",
            )
        )
    return found


def group_problems(groups: Mapping[str, Sequence[str]], principals: Iterable[str]) -> list[tuple[EntryPath, str]]:
    """What is wrong with `groups:`: members that are not principals, names shared with a principal."""
    known = set(principals)
    problems: list[tuple[EntryPath, str]] = []
    for name, members in groups.items():
        if name in known:
            problems.append(
                (("groups", name), f"group {name!r} has a principal's name; approvers would not know which is meant")
            )
        if not members:
            problems.append((("groups", name), f"group {name!r} has no members"))
        for i, member in enumerate(members):
            if member in groups:
                problems.append(
                    (("groups", name, i), f"group {name!r}: member {member!r} is a group; list its principals instead")
                )
            elif known and member not in known:
                problems.append((("groups", name, i), f"group {name!r}: member {member!r} is not a principal"))
    return problems
