"""The refund tool the policy tests gate: it records each refund it made in `REFUNDS`."""

from __future__ import annotations

REFUNDS: list[dict[str, object]] = []


def refund(order: str, amount: float, note: str | None = None) -> str:
    """Refund an order."""
    REFUNDS.append({"order": order, "amount": amount})
    return f"refunded {amount} on {order}"
