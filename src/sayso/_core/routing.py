"""Who decides a routed request, and how many must agree: approvers, groups, quorum votes, as pure functions.

See docs/guides/routing.md.

A rule (an `interrupt.tools` object, an MCP binding, a workflow's inputs) that names `approvers`
routes its requests: only those principals (groups resolved when the config loads) decide them,
never the principal whose message started the run unless the rule says `self_approval: true`
(separation of duties), and `approvals_required: N` distinct approvals resolve one. Each vote is
kept (who, when, through which interface, on which arguments); an edit starts a new round whose
arguments the next approvers see, and one rejection rejects. `tally` is the one place a vote is
weighed (`_core/votes.py`); the store records what it returns in the transaction that read the earlier votes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

SELF_APPROVAL_REFUSED = (
    "{who!r} started this run and may not decide its own calls (separation of duties; "
    "the rule would need self_approval: true)"
)


@dataclass(frozen=True, kw_only=True)
class Approver:
    """One principal who may decide a routed request, and the groups it was named through."""

    name: str
    groups: tuple[str, ...] = ()
    """The rule's groups this principal is a member of; empty when the rule named it directly."""


@dataclass(frozen=True, kw_only=True)
class Routing:
    """Who decides a request and how many must agree, as the rule said it with its groups resolved."""

    named: tuple[str, ...]
    """The rule's `approvers` as written: principals and group names."""
    approvers: tuple[Approver, ...]
    """Every principal the names stand for, in the order first named."""
    approvals_required: int = 1
    """How many distinct approvals resolve the request."""
    self_approval: bool = False
    """Whether the principal whose message started the run may decide its calls too."""
    rule: str | None = None
    """The rule that routed the request (its tool name or pattern, or `mcp:SERVER`), for people to read."""

    def deciders(self, starter: str | None) -> tuple[str, ...]:
        """The principals who may decide a request raised for `starter` (the run's principal)."""
        return tuple(a.name for a in self.approvers if self.self_approval or a.name != starter)

    def refusal(self, who: str, *, starter: str | None) -> str | None:
        """Why `who` may not decide a request raised for `starter`, or `None` when they may."""
        if who in self.deciders(starter):
            return None
        if who == starter and any(a.name == who for a in self.approvers):
            return SELF_APPROVAL_REFUSED.format(who=who)
        return f"{who!r} is not an approver of this request (approvers: {', '.join(self.named)})"

    def widened(self, named: Sequence[str], added: Sequence[Approver]) -> Routing:
        """This routing with an escalation step's `add_approvers` (`named`, resolved as `added`) deciding too.

        They join the same quorum: votes cast before still count, and the count required stays.
        """
        found = {a.name: list(a.groups) for a in self.approvers}
        for approver in added:
            groups = found.setdefault(approver.name, [])
            groups.extend(g for g in approver.groups if g not in groups)
        return replace(
            self,
            named=tuple(dict.fromkeys([*self.named, *named])),
            approvers=tuple(Approver(name=n, groups=tuple(g)) for n, g in found.items()),
        )


def resolve(
    named: Sequence[str],
    groups: Mapping[str, Sequence[str]],
    *,
    approvals_required: int = 1,
    self_approval: bool = False,
    rule: str | None = None,
) -> Routing:
    """A rule's `approvers` with every group replaced by its members (the config checked the names)."""
    return Routing(
        named=tuple(named),
        approvers=resolve_names(named, groups),
        approvals_required=approvals_required,
        self_approval=self_approval,
        rule=rule,
    )


def resolve_names(named: Sequence[str], groups: Mapping[str, Sequence[str]]) -> tuple[Approver, ...]:
    """The principals `named` stands for (groups replaced by their members), each with the groups it came from."""
    found: dict[str, list[str]] = {}
    for name in named:
        if name in groups:
            for member in groups[name]:
                found.setdefault(member, []).append(name)
        else:
            found.setdefault(name, [])
    return tuple(Approver(name=n, groups=tuple(g)) for n, g in found.items())
