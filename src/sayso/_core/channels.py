"""Where a request is announced: `notify` targets (`email:ADDRESS`, `slack:#CHANNEL`, `webhook:NAME`) and their keys.

A rule (and an escalation step) lists targets; each becomes one key in the outbox, so a request's
notice to one target is one delivery, retried and settled on its own, the same on every replica.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

ChannelKind: TypeAlias = Literal["email", "slack", "webhook"]
"""The kinds of place a notice goes."""

CHANNEL_KINDS: tuple[ChannelKind, ...] = get_args(ChannelKind)

TARGET_PATTERN = r"^(email|slack|webhook):\S+$"
"""What a `notify` entry looks like, checked when the config is read."""


@dataclass(frozen=True, kw_only=True)
class Target:
    """One place a notice goes: a channel kind and its address there (an email address, a Slack channel, a name)."""

    channel: ChannelKind
    address: str

    @property
    def text(self) -> str:
        """The target as a config writes it: `email:sre@example.com`."""
        return f"{self.channel}:{self.address}"

    @property
    def key(self) -> str:
        """The target's key in the outbox."""
        return outbox_key(self.text)


def parse_target(text: str) -> Target:
    """A `notify` entry as a `Target`.

    Raises:
        ValueError: it is not `KIND:ADDRESS` with a known kind.
    """
    channel, sep, address = text.partition(":")
    if not sep or not address or channel not in CHANNEL_KINDS:
        kinds = ", ".join(f"{k}:..." for k in CHANNEL_KINDS)
        raise ValueError(f"{text!r} is not a notify target ({kinds})")
    kind: ChannelKind = "email" if channel == "email" else "slack" if channel == "slack" else "webhook"
    return Target(channel=kind, address=address)


def outbox_key(name: str) -> str:
    """A destination's key in the outbox (a webhook's URL, a target's text): every replica derives the same."""
    return hashlib.sha256(name.encode()).hexdigest()[:16]
