"""A refund agent whose `interrupt.tools` rules decide with CEL conditions, written to a `sayso.yaml` per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import cast

import pytest
import yaml

from .tools import REFUNDS

SCRIPT = {
    "name": "refunds",
    "rules": [
        {"user": r"^refund (?P<o>\S+) (?P<a>-?\d+)$", "call": "refund", "args": {"order": "{o}", "amount": "{a}"}},
        {"tool": "refund", "reply": "model read: {result}"},
    ],
    "fallback": "no rule matched",
}

RULES = [
    {
        "name": "refund",
        "rule": "refunds-negative",
        "when": "args.amount <= 0",
        "action": "deny",
        "reason": "a refund must be positive, not {args.amount}",
    },
    {
        "name": "refund",
        "rule": "refunds-large",
        "when": "args.amount > 100",
        "reason": "amount {args.amount} > 100",
    },
    {"name": "refund", "rule": "refunds-small", "action": "allow", "reason": "small refunds need nobody"},
]


WriteConfig = Callable[..., Path]


@pytest.fixture(autouse=True)
def no_refunds() -> Iterator[None]:
    REFUNDS.clear()
    yield
    REFUNDS.clear()


@pytest.fixture
def write_config(tmp_path: Path) -> WriteConfig:
    """Write a refund agent's config with `rules` (and any top-level extras) and its script; return the file."""

    def write(rules: Sequence[object] = RULES, **extra: object) -> Path:
        (tmp_path / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
        interrupt = cast(dict[str, object], extra.pop("interrupt", {}))
        config = {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "models": {"m": {"scripted": "script.yaml"}},
            "agents": {
                "shop": {
                    "model": "m",
                    "tools": ["tests.policy.tools:refund"],
                    "interrupt": {"tools": rules, **interrupt},
                }
            },
            **extra,
        }
        path = tmp_path / "sayso.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    return write
