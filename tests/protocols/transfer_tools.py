"""A money transfer whose arguments cover every JSON kind, for the tests of edited approvals on every interface."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class Address(BaseModel):
    city: str
    zip: str | None = None


RAN: list[dict[str, Any]] = []
"""Every transfer that ran, with its arguments as the tool received them."""

OWNERS: list[str] = []
"""Who each subject look-up says owns the account, in turn (then `ada`): a payee record that changes."""


def transfer(
    to: str,
    amount: float,
    account: str = "main",
    count: int = 1,
    urgent: bool = False,
    memo: str | None = "rent",
    tags: list[str] | None = None,
    address: Address | None = None,
) -> str:
    """Send money to someone."""
    RAN.append(
        {
            "to": to,
            "amount": amount,
            "account": account,
            "count": count,
            "urgent": urgent,
            "memo": memo,
            "tags": tags,
            "address": address.model_dump() if address is not None else None,
        }
    )
    return f"sent {amount!r} to {to} from {account}"


def account_owner(tool_name: str, args: dict[str, Any]) -> dict[str, str]:
    """An approval covers the account's owner, as the bank's records say at the moment of asking."""
    owner = OWNERS.pop(0) if OWNERS else "ada"
    return {"key": f"owner:{owner}", "label": f"{owner}'s accounts"}
