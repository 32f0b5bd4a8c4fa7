"""A failed run says its real cause; a listener's bug never breaks a run; `@sayso.tool` with or without parentheses."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Any

import pytest

import sayso
from sayso import Approve, StoreError

from .conftest import EXAMPLE, MakeApp
from .models import calls_then_reply, tool_model
from .tools import delete_file


def fill_disk(name: str) -> str:
    """Write a file (always fails: the disk is full)."""
    raise OSError(28, "No space left on device")


def lose_the_store(name: str) -> str:
    """Write a file through a store that is gone: sayso's own error, which no model can act on."""
    raise StoreError("database error: the disk is full")


async def test_a_failed_run_reports_its_real_cause(make_app: MakeApp, caplog: pytest.LogCaptureFixture) -> None:
    """A run's error is its real cause, not `ExceptionGroup: unhandled errors in a TaskGroup`, and it is logged."""
    app = make_app(
        {"a": {"model": "m", "tools": [lose_the_store]}},
        model=calls_then_reply(("lose_the_store", {"name": "x"}), reply="written"),
    )
    caplog.set_level(logging.ERROR, logger="sayso")
    async with app:
        failed = await app.run("write")
        stored = await app.result(failed.run_id)
    assert failed.status == "failed"
    assert failed.error == "StoreError: database error: the disk is full"
    assert stored.error == failed.error
    [record] = [r for r in caplog.records if r.name == "sayso.runs"]
    assert record.getMessage() == f"run {failed.run_id} failed: StoreError: database error: the disk is full"
    assert record.exc_info is not None and isinstance(record.exc_info[1], StoreError)


async def test_a_tools_error_is_read_by_the_model_and_logged(
    make_app: MakeApp, caplog: pytest.LogCaptureFixture
) -> None:
    """A tool that raises is not the run's failure: the model reads its error, the log keeps its traceback."""
    app = make_app(
        {"a": {"model": "m", "tools": [fill_disk]}},
        model=tool_model(lambda said: ("fill_disk", {"name": "x"}), read="read: {result}"),
    )
    caplog.set_level(logging.WARNING, logger="sayso")
    async with app:
        done = await app.run("write")
    assert done.status == "completed"
    assert done.output == "read: Error: the tool fill_disk failed: OSError: [Errno 28] No space left on device"
    [record] = [r for r in caplog.records if r.name == "sayso.tools"]
    assert record.exc_info is not None and isinstance(record.exc_info[1], OSError)


async def test_a_listener_that_raises_is_logged_and_never_breaks_a_run(
    make_app: MakeApp, caplog: pytest.LogCaptureFixture
) -> None:
    """A raising listener is logged; the run pauses and resumes as usual, and the other listeners still hear."""
    app = make_app(
        {"a": {"model": "m", "tools": [delete_file], "interrupt": {"tools": ["delete_file"]}}},
        model=calls_then_reply(("delete_file", {"name": "a"}), reply="ok"),
    )
    heard: list[str] = []

    def broken(event: str, data: object) -> None:
        raise RuntimeError("listener bug")

    app.add_listener(broken)
    app.add_listener(lambda event, data: heard.append(event))
    async with app:
        paused = await app.run("delete a")
        done = await app.decide(paused.requests[0].request_id, Approve())
    assert (paused.status, done.run.status, done.run.output) == ("paused", "completed", "ok")
    assert heard == ["request.opened", "request.decided"]
    logged = [r for r in caplog.records if r.name == "sayso.events"]
    assert [r.getMessage().split(" raised on ")[1] for r in logged] == [
        "request.opened; the run goes on",
        "request.decided; the run goes on",
    ]


@sayso.tool
def bare(name: str) -> str:
    """A tool declared without parentheses."""
    return f"bare {name}"


@sayso.tool()
def empty(name: str) -> str:
    """A tool declared with empty parentheses."""
    return f"empty {name}"


@sayso.tool(requires_approval=True, hint="Asks first.")
def careful(name: str) -> str:
    """A tool that always asks."""
    return f"careful {name}"


async def test_the_tool_decorator_works_with_and_without_parentheses(make_app: MakeApp) -> None:
    """`@sayso.tool`, `@sayso.tool()` and `@sayso.tool(...)` leave a working function; only the last one asks."""
    assert bare("x") == "bare x" and empty("x") == "empty x"
    model = tool_model(
        lambda said: (
            [("bare", {"name": "1"}), ("empty", {"name": "2"})] if said == "go" else ("careful", {"name": "3"})
        ),
        read="{results}",
    )
    app = make_app({"a": {"model": "m", "tools": [bare, empty, careful]}}, model=model)
    async with app:
        ran = await app.run("go")
        asked = await app.run("care")
    assert ran.status == "completed" and "bare 1" in str(ran.output) and "empty 2" in str(ran.output)
    assert asked.status == "paused"
    assert asked.requests[0].hint == "Asks first."  # type: ignore[union-attr]


def test_the_tool_decorator_refuses_what_is_not_a_function() -> None:
    """A mistaken `@sayso.tool("name")` fails where it is written, not when the agent runs."""
    with pytest.raises(TypeError, match="decorates a function, not 'name'"):
        sayso.tool("name")  # type: ignore[call-overload]


def test_no_third_party_banner_in_sayso_output(tmp_path: Any) -> None:
    """pydantic-ai's first-run banner (shown to terminals and coding agents) never appears in sayso's output."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_VERSION", "CI", "PYDANTIC_AI_NO_BANNER")}
    env["AI_AGENT"] = "1"  # what makes pydantic-ai show its banner on a pipe
    done = subprocess.run(
        [sys.executable, "-m", "sayso", "run", str(EXAMPLE), "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "Files in the sandbox" in done.stdout
    for stream in (done.stdout, done.stderr):
        assert "pydantic-ai v" not in stream and "observability" not in stream and "logfire" not in stream.lower()
