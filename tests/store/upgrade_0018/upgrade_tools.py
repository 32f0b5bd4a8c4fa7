"""The refund tool of the store `rows.sql` holds, as sayso 96d4383 (schema 0018) ran it."""


def refund(order_id: str, amount: float) -> str:
    """Refund an order."""
    return f"Refunded {amount} on {order_id}."
