"""The tool an agent run by another process calls (`sayso run`, `sayso decide`, a Temporal worker), and its script.

A test writes both beside its `sayso.yaml` (`write_beside`, or `files` for a Temporal `Project`):
this file under the module name the config imports, and `script.yaml` for the scripted model the
config names. Each call writes a line to the file `$MARKER` names before it sleeps `$SLOW_SECONDS`,
so a test can kill the process in the middle of a call and read, afterwards, what ran and how often.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

SCRIPT = """
name: deletes
rules:
  - {user: '^delete (?P<n>\\S+)$', call: slow_delete, args: {name: "{n}"}}
  - {user: '^delete-async (?P<n>\\S+)$', call: slow_delete_async, args: {name: "{n}"}}
  - {tool: slow_delete, reply: "model read: {result}"}
  - {tool: slow_delete_async, reply: "model read: {result}"}
"""
"""`delete NAME` calls `slow_delete` (`delete-async NAME`: `slow_delete_async`); the model says what it returned."""


def slow_delete(name: str) -> str:
    """Delete a file (slowly, when SLOW_SECONDS says so)."""
    with open(os.environ["MARKER"], "a") as marker:
        marker.write(name + "\n")
    time.sleep(float(os.environ.get("SLOW_SECONDS", "0")))
    return f"deleted {name}"


async def slow_delete_async(name: str) -> str:
    """`slow_delete` as an async tool: a cancellation stops it where it sleeps (a sync one runs on in its thread)."""
    with open(os.environ["MARKER"], "a") as marker:
        marker.write(name + "\n")
    await asyncio.sleep(float(os.environ.get("SLOW_SECONDS", "0")))
    return f"deleted {name}"


def files(module: str) -> dict[str, str]:
    """This file's text as `<module>.py` and the script as `script.yaml` (name → text)."""
    return {f"{module}.py": Path(__file__).read_text(), "script.yaml": SCRIPT}


def write_beside(folder: Path, module: str) -> None:
    """`files(module)` written to `folder`."""
    for name, text in files(module).items():
        (folder / name).write_text(text)


def wait_for_line(path: Path, seconds: float = 30) -> None:
    """Wait until a marker file holds a whole line: a tool opens it (creating it) before its line is written,
    and a process killed as soon as the file exists could leave it empty."""
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.read_text().endswith("\n")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists() and path.read_text().endswith("\n"), f"{path.name} never got its line"
