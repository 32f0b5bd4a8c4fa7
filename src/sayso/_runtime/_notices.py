"""Notices: where the outbox's events go beside webhooks — the `notify` targets of the rule a request came from.

Every outbox event is fanned out once, to every destination a config names (each webhook, each
`notify` target), so whichever sender fans out first gives the others their deliveries too. A
notice then goes to a target only when the request's rule names it; the others are settled as
skipped when claimed, and a notice about a request no longer open is not sent at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._config.checks_channels import all_targets
from .._config.file import Config
from .._core.channels import outbox_key, parse_target
from .._core.policy import rule_for
from .._core.requests import ApprovalRequest, InputRequest, Request
from .._core.votes import Vote, quorum


def destinations(config: Config, hooks: Sequence[str]) -> list[str]:
    """The outbox keys every event is fanned out to: `hooks`, the config's webhooks and its `notify` targets."""
    keys = [*hooks, *(outbox_key(hook.url) for hook in config.webhooks), *all_targets(config)]
    return list(dict.fromkeys(keys))


def notify_targets(config: Config, request: Request) -> tuple[str, ...]:
    """The targets a request is announced to: its rule's `notify` (the rule of the agent that asked).

    The rule is the one that asked (`ApprovalRequest.rule`, when a policy rule did: the agent's, or its MCP
    binding's), else the tool's first; a workflow's input is announced as its workflow says.
    """
    name = request.agent_path.rsplit("/", 1)[-1]
    workflow = config.workflows.get(name)
    if isinstance(request, InputRequest):
        return tuple(getattr(workflow, "notify", ()))  # a workflow's input: its workflow's rule
    agent = config.agents.get(name)
    if agent is None:
        return ()
    policy = agent.interrupt.to_policy()
    asked = request.rule if isinstance(request, ApprovalRequest) else None
    named = next(
        (r for r in policy.tools if asked is not None and r.label == asked and r.matches(request.tool_name)), None
    )
    if named is None and asked is not None:
        binding = next((b for b in agent.mcp if b.is_rule and b.label == asked), None)
        if binding is not None:
            return tuple(binding.notify)
    rule = named or rule_for(policy, request.tool_name)
    return rule.notify if rule is not None else ()


def step_targets(
    config: Config, request: ApprovalRequest | InputRequest, step: int, votes: Sequence[Vote] = ()
) -> tuple[str, ...]:
    """The targets an escalation step is announced to: its own `notify`, and the rule's when it reminds.

    A reminder is for those who may still vote on the request as it stands (`votes`): a rule's target that is
    one person (an address, a Slack user) who approved in this round is not reminded, their link would count
    nothing; after an edit they may vote again, and are.
    """
    fired = request.escalation[step]
    reminded = notify_targets(config, request) if fired.remind else ()
    routing = request.routing
    if routing is not None and reminded:
        may_vote = quorum(routing, votes, starter=request.principal, proposed=request.args).may_vote
        reminded = tuple(t for t in reminded if _person(config, t) in (None, *may_vote))
    return tuple(dict.fromkeys((*fired.notify, *reminded)))


def _person(config: Config, text: str) -> str | None:
    """The principal a target reaches alone (a mapped address, a mapped Slack user), `None`: no one person."""
    target = parse_target(text)
    email, slack = config.channels.email, config.channels.slack
    if target.channel == "email" and email is not None:
        return email.users.get(target.address)
    if target.channel == "slack" and slack is not None:
        return slack.users.get(target.address)
    return None
