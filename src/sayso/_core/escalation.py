"""Escalation on a clock: the steps a waiting request takes, and what its timeout decides, as data and pure functions.

A rule's `escalate:` steps (`after: 15m → remind`, `after: 1h → notify, add approvers`) and its
`on_timeout:` travel with the request they were raised for, so whichever process sweeps later reads
the same plan. The store keeps, per request, how many steps fired and when the next is due (a
durable timer: a step that came due while no process ran fires at the next sweep); a step fires
once, claimed in the same transaction that records it. `on_timeout` is what the request's expiry
decides (`policy.timeout_decision`): expire (the default), reject or approve, with a reason the model reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

from .routing import Approver

TimeoutAction: TypeAlias = Literal["reject", "approve", "expire"]
"""What a request's timeout decides."""

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$")
_UNIT = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(value: float | int | str) -> float:
    """Seconds from `90`, `90s`, `15m`, `1h` or `2d`.

    Raises:
        ValueError: anything else, or a duration that is not positive.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        found = _DURATION.match(value)
        if found is None:
            raise ValueError(f"{value!r} is not a duration: write seconds, or a number with s, m, h or d (15m, 1h)")
        seconds = float(found.group(1)) * _UNIT[found.group(2)]
    if seconds <= 0:
        raise ValueError(f"a duration must be positive, not {value!r}")
    return seconds


def shown_duration(seconds: float) -> str:
    """`15m`, `1h`, `90s`: a duration as people write it."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


@dataclass(frozen=True, kw_only=True)
class EscalationStep:
    """One step of a request's escalation, due `after_seconds` after the request was raised."""

    after_seconds: float
    remind: bool = False
    """Tell the request's approvers again (through the rule's channels)."""
    notify: tuple[str, ...] = ()
    """Channel targets told of the request at this step (`email:sre@example.com`, `slack:#ops`, `webhook:NAME`)."""
    add_approvers: tuple[str, ...] = ()
    """Principals or groups who may decide from this step on (a routed request's approvers widen when it fires)."""
    added: tuple[Approver, ...] = ()
    """The principals `add_approvers` stands for, groups resolved when the config loaded."""

    @property
    def said(self) -> str:
        """What the step does, in words (the audit's and the channels' text)."""
        parts = ["remind the approvers"] if self.remind else []
        if self.notify:
            parts.append(f"notify {', '.join(self.notify)}")
        if self.add_approvers:
            parts.append(f"add approvers {', '.join(self.add_approvers)}")
        return f"no decision after {shown_duration(self.after_seconds)}: " + ("; ".join(parts) or "noted")


@dataclass(frozen=True, kw_only=True)
class OnTimeout:
    """What the request's expiry decides, and the reason the model reads."""

    action: TimeoutAction = "expire"
    reason: str | None = None


def next_step_at(
    created_at: float, steps: tuple[EscalationStep, ...], done: int, expires_at: float | None
) -> float | None:
    """When the step after the `done` first ones is due; `None` when none is left before the request expires."""
    if done >= len(steps):
        return None
    due = created_at + steps[done].after_seconds
    if expires_at is not None and due >= expires_at:
        return None  # the timeout comes first: it decides
    return due
