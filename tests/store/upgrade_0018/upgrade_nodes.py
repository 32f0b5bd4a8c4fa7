"""The workflow nodes of the store `rows.sql` holds: an input, then a yes or no."""

from collections.abc import Generator
from typing import Any

from pydantic import BaseModel

from sayso.workflows import RequestInput


class Trip(BaseModel):
    """Where to, and for how long."""

    city: str
    days: int


def ask(node_input: object) -> Generator[RequestInput, Any, str]:
    """Ask where to."""
    trip = yield RequestInput("Where to?", response_schema=Trip)
    return f"{trip.city} for {trip.days} days"


def confirm(node_input: str) -> Generator[RequestInput, Any, str]:
    """Ask whether to book it."""
    ok = yield RequestInput("Book it?", payload=node_input, response_schema=bool)
    return f"booked {node_input}" if ok else f"not booked {node_input}"
