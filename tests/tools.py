"""The tools tests give their agents, defined once: each records what it ran in `RAN`.

`RAN` is cleared before every test (an autouse fixture in `tests/conftest.py`), so a test reads
exactly the calls its own runs made: `ran("delete_file")` lists the arguments of each one.
"""

from __future__ import annotations

import os
import threading
from typing import Any, NoReturn

import anyio
import pytest

from sayso import StoreError

RAN: list[tuple[str, dict[str, Any]]] = []
"""Every call the tools below ran, in order: the tool's name and its arguments."""


def ran(tool: str) -> list[dict[str, Any]]:
    """The arguments of each call of `tool` that ran, in order."""
    return [args for name, args in RAN if name == tool]


def deleted() -> list[str]:
    """The files `delete_file` deleted, in order."""
    return [args["name"] for args in ran("delete_file")]


def delete_file(name: str) -> str:
    """Delete a file."""
    RAN.append(("delete_file", {"name": name}))
    return f"deleted {name}"


def delete_file_with_password(name: str, password: str = "") -> str:
    """Delete a file (given a secret, for the redaction tests: register it as `delete_file`)."""
    return delete_file(name)


def archive(name: str) -> str:
    """Archive a file."""
    RAN.append(("archive", {"name": name}))
    return f"archived {name}"


def pay(amount: int, token: str = "") -> str:
    """Pay someone."""
    RAN.append(("pay", {"amount": amount}))
    return f"paid {amount}"


def refund(amount: int, to: str) -> str:
    """Pay `amount` back to `to`."""
    RAN.append(("refund", {"amount": amount, "to": to}))
    return f"refunded {amount} to {to}"


def run_sql(query: str) -> str:
    """Run a query."""
    RAN.append(("run_sql", {"query": query}))
    return f"rows for {query}"


HOLD = threading.Event()
"""What `hold` waits for: set it to let a held call finish (a test that holds one sets it when it ends)."""


async def hold() -> str:
    """A call that works until the test lets it finish (`HOLD.set()`), like a slow tool or model."""
    await anyio.to_thread.run_sync(HOLD.wait)
    RAN.append(("hold", {}))
    return "held until released"


def explode() -> str:
    """A tool that fails its run: sayso's own error (any other error a tool raises is read by the model)."""
    raise StoreError("the disk is on fire")


def missing(what: str) -> NoReturn:
    """Skip a test whose real component is not installed here — but fail under CI, where the test
    command installs every component, so a skip can never hide a broken install."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} (CI installs it: the test command's set-up is broken)")
    pytest.skip(what)
