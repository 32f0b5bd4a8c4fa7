"""The refunds example's one tool (docs/guides/routing.md): it only says what it would pay."""

from __future__ import annotations


def refund(amount: int, to: str) -> str:
    """Pay `amount` back to the customer `to`."""
    return f"Refunded {amount} to {to}."
