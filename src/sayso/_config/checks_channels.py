"""The checks of `channels:` and of every `notify` target: each names a channel that is configured and reachable.

A target that cannot be delivered would leave its approvers unaware, so it is an error at load
(with the file and line of the entry), never a notice silently dropped at run time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

from .._core.channels import Target, parse_target
from .._core.routing import resolve_names
from .env import unset_message
from .file import Config
from .rules import PolicyFields

Add = Callable[[Literal["error", "warning", "note"], Sequence[str | int], str, str], None]
"""`_Problems.add`: severity, config path, message, fix."""


def rule_entries(config: Config) -> Iterator[tuple[tuple[str | int, ...], PolicyFields]]:
    """Every entry that is an approval rule (`interrupt.tools` objects, MCP bindings, workflows), with where it is."""
    for name, spec in config.agents.items():
        for index, rule in enumerate(spec.interrupt.tools):
            if not isinstance(rule, str):
                yield ("agents", name, "interrupt", "tools", index), rule
        for index, binding in enumerate(spec.mcp):
            yield ("agents", name, "mcp", index), binding
    for name, workflow in config.workflows.items():
        if isinstance(workflow, PolicyFields):
            yield ("workflows", name), workflow


def notify_entries(config: Config) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Every `notify` target the config names (a rule's and its escalation steps'), with where it is written."""
    for path, rule in rule_entries(config):
        yield from _rule_targets(path, rule)


def _rule_targets(path: tuple[str | int, ...], rule: PolicyFields) -> Iterator[tuple[tuple[str | int, ...], str]]:
    for n, target in enumerate(getattr(rule, "notify", ())):
        yield (*path, "notify", n), target
    for s, step in enumerate(rule.escalate):
        for n, target in enumerate(step.notify):
            yield (*path, "escalate", s, "notify", n), target


def all_targets(config: Config) -> dict[str, Target]:
    """Every `notify` target the config names, by its outbox key (the config must have passed its checks)."""
    found = (parse_target(text) for _, text in notify_entries(config))
    return {target.key: target for target in found}


def check_channels(config: Config, add: Add) -> None:
    """Every `notify` target reaches a configured channel; the channels' maps name real principals."""
    channels = config.channels
    principals = {p.name for p in config.principals}
    webhooks = [hook.name for hook in config.webhooks if hook.name]
    for n, name in enumerate(webhooks):
        if name in webhooks[:n]:
            add("error", ("webhooks",), f"two webhooks are named {name!r}", "give each webhook its own name")
    for path, text in notify_entries(config):
        target = parse_target(text)
        if path[0] == "workflows" and target.channel != "webhook":
            add(
                "error",
                path,
                f"{text!r}: an email or a Slack message decides approvals, and a workflow's input is answered",
                "announce inputs to a named webhook (webhook:NAME); answer them in the web UI, CLI, REST or a protocol",
            )
            continue
        if target.channel == "email":
            if channels.email is None:
                add("error", path, f"{text!r} needs 'channels.email'", "configure the SMTP server under channels.email")
            elif channels.public_url is None:
                add("error", path, f"{text!r} mails links, which need 'channels.public_url'", "set channels.public_url")
            elif principals and target.address not in channels.email.users:
                add(
                    "error",
                    path,
                    f"{target.address!r} is no principal's address, so a link mailed there could decide as no one",
                    f"add '{target.address}: PRINCIPAL' under channels.email.users",
                )
        elif target.channel == "slack":
            if channels.slack is None:
                add("error", path, f"{text!r} needs 'channels.slack'", "configure the Slack app under channels.slack")
        elif target.address not in webhooks:
            listed = ", ".join(webhooks) or "none"
            add("error", path, f"no webhook is named {target.address!r}", f"name one in 'webhooks:' (named: {listed})")
    _check_user_maps(config, principals, add)
    _check_mailed_deciders(config, add)
    _check_secrets(config, add)


def _check_mailed_deciders(config: Config, add: Add) -> None:
    """A rule naming its approvers whose notices mail someone it never lets decide: that link decides nothing.

    Only a routed rule is known at load: an unrouted one lets the thread's owner decide, whoever starts it.
    """
    email = config.channels.email
    if email is None or not config.principals:
        return
    for path, rule in rule_entries(config):
        named = list(getattr(rule, "approvers", ()))
        if not named or path[0] == "workflows":
            continue
        named += [name for step in rule.escalate for name in step.add_approvers]
        deciders = {approver.name for approver in resolve_names(named, config.groups)}
        for where, text in _rule_targets(path, rule):
            target = parse_target(text)
            principal = email.users.get(target.address) if target.channel == "email" else None
            if principal is not None and principal not in deciders:
                add(
                    "warning",
                    where,
                    f"{target.address!r} is mapped to {principal!r}, whom this rule never lets decide: "
                    "the link mailed there decides nothing",
                    f"notify an approver's address, or name {principal!r} among the rule's approvers",
                )


def _check_secrets(config: Config, add: Add) -> None:
    """A secret a channel, a webhook or a remote delegate reads at start: said by `sayso check` too."""
    channels = config.channels
    wanted: list[tuple[tuple[str | int, ...], str | None]] = [
        (("webhooks", n, "secret_env"), hook.secret_env) for n, hook in enumerate(config.webhooks)
    ]
    if channels.slack is not None:
        wanted += [
            (("channels", "slack", "bot_token_env"), channels.slack.bot_token_env),
            (("channels", "slack", "signing_secret_env"), channels.slack.signing_secret_env),
        ]
    if channels.email is not None:
        wanted += [
            (("channels", "email", "username_env"), channels.email.username_env),
            (("channels", "email", "password_env"), channels.email.password_env),
        ]
        if not os.environ.get(channels.link_key_env) and not os.environ.get(config.audit.key_env):
            add(
                "warning",
                ("channels", "email"),
                f"mailed links need a key, and neither {channels.link_key_env} nor the audit key is set",
                f"set {channels.link_key_env} to at least 16 random characters before starting the server",
            )
    wanted += [
        (("agents", name, "delegates", n, "token_env"), delegate.token_env)
        for name, spec in config.agents.items()
        for n, delegate in enumerate(spec.delegates)
    ]
    for path, env in wanted:
        if env and not os.environ.get(env):
            add("warning", path, unset_message(env), f"set {env} before starting the server")


def _check_user_maps(config: Config, principals: set[str], add: Add) -> None:
    channels = config.channels
    maps = (("email", channels.email), ("slack", channels.slack))
    for kind, channel in maps:
        if channel is not None and channel.users and not principals:
            whom = "every mailed link decides" if kind == "email" else "a mapped Slack user decides"
            add(
                "note",
                ("channels", kind, "users"),
                f"without principals {whom} as 'local', the one caller of local development",
                "the names here apply once 'principals:' is configured",
            )
        if channel is None or not principals:
            continue
        for key, principal in channel.users.items():
            if principal not in principals:
                add(
                    "error",
                    ("channels", kind, "users", key),
                    f"{key!r} is mapped to {principal!r}, who is not one of the principals",
                    "name a principal from 'principals:'",
                )
