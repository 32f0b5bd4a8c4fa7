"""The "workflow cycle" workload, shared by sayso (`workflow_cycle.py`) and LangGraph (`workflow_langgraph.py`).

One cycle, on its own run / thread:

1. **process A** starts a three-node workflow with an order `{"order": n, "item": ..., "quantity": ...}`:
   `quote` prices it; `confirm` stops for a person's input, showing the quote as payload and
   asking for a `Confirmation` (`{"approved": bool, "note": str}`); the pause is committed to
   a SQLite file (WAL, `synchronous=FULL`) before A returns it.
2. **process B**, a second graph / engine object with its own connection (sharing nothing with
   A but the file), resumes the run with the answer `{"approved": true, "note": ...}`: the
   answer is validated against `Confirmation`, `confirm` finishes, `finish` writes the receipt
   text, and the finished run is committed.

Both sides run the same node bodies (below) and validate the answer with the same pydantic
model, so the difference is the framework: its state handling, checkpointing and resume.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from typing import Any

from pydantic import BaseModel

ITEMS = ("kettle", "toaster", "lamp", "chair", "desk")
PRICES = {"kettle": 25.0, "toaster": 40.0, "lamp": 18.5, "chair": 75.0, "desk": 220.0}


class Confirmation(BaseModel):
    """The person's answer at the `confirm` step."""

    approved: bool
    note: str = ""


def order(n: int) -> dict[str, Any]:
    """The workflow's input for cycle `n`."""
    return {"order": n, "item": ITEMS[n % len(ITEMS)], "quantity": 1 + n % 3}


def make_quote(request: dict[str, Any]) -> dict[str, Any]:
    """The `quote` node's body: the order with its price."""
    total = PRICES[request["item"]] * request["quantity"]
    return {**request, "total": round(total, 2), "currency": "EUR"}


CONFIRM_MESSAGE = "Place this order?"


def answer(n: int) -> dict[str, Any]:
    """What the person answers in cycle `n` (as JSON, before validation)."""
    return {"approved": True, "note": f"deliver order {n} after 5pm"}


def receipt(quote: dict[str, Any], confirmation: Confirmation) -> str:
    """The `finish` node's body: the final text."""
    if not confirmation.approved:
        return f"Order {quote['order']} cancelled."
    return (
        f"Order {quote['order']}: {quote['quantity']} x {quote['item']} for {quote['total']:.2f} {quote['currency']}"
        f" ({confirmation.note})"
    )


def expected(n: int) -> str:
    """The output every cycle `n` must end with."""
    return receipt(make_quote(order(n)), Confirmation.model_validate(answer(n)))


def default_db(name: str) -> str:
    return os.path.join(tempfile.gettempdir(), "bench_workflows", f"{name}-{os.getpid()}.sqlite")


def fresh_db(path: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


def db_size(path: str) -> int:
    """File size after folding the WAL into the main file."""
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        connection.close()
    return sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))


def pragma(path: str, name: str) -> Any:
    connection = sqlite3.connect(path)
    try:
        return connection.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        connection.close()
