"""`sayso audit list` on a long log: the newest records by default, more on request, every one a page at a time."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sayso._core.audit_events import ExecutedEvent
from sayso._store import SqlRunStore
from sayso.cli import app

from ..conftest import EXAMPLE

runner = CliRunner()

RECORDS = 620
"""More than the newest 50 printed by default, and more than one page of `--all`."""


@pytest.fixture
def long_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An audit log of RECORDS records, numbered 1.. in their tool names; listing it never loads the whole log."""

    async def fill() -> None:
        async with SqlRunStore(f"sqlite:///{tmp_path / 'sayso.db'}") as store:
            await store.append_audit(
                [
                    ExecutedEvent(
                        event="executed", request_id=f"req_{n}", tool_name=f"tool_{n}", executed_args={}, at=0.0
                    )
                    for n in range(1, RECORDS + 1)
                ]
            )

    asyncio.run(fill())

    async def whole_log(self: SqlRunStore) -> None:
        raise AssertionError("the whole audit log was loaded at once")

    monkeypatch.setattr(SqlRunStore, "audit_records", whole_log)


def listed(*args: str) -> tuple[list[int], str]:
    """The record numbers `sayso audit list` printed in its table, in order, and the rest of what it printed."""
    result = runner.invoke(app, ["audit", "list", str(EXAMPLE), *args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    rows = [int(m.group(1)) for m in re.finditer(r"^│\s*(\d+)\s*│", result.stdout, re.M)]
    return rows, result.stdout


@pytest.mark.usefixtures("long_log")
def test_audit_list_prints_the_newest_50_and_says_how_to_see_the_rest() -> None:
    """Without options the newest 50 records, oldest of them first (the newest last, by the prompt), and a line
    saying how many more there are and how to see them; `--limit N` the newest N (it printed all 620 at once)."""
    rows, out = listed()
    assert rows == list(range(RECORDS - 49, RECORDS + 1))
    assert (
        f"the newest 50 of {RECORDS} records; {RECORDS - 50} older ones: --limit N shows more, --all every one" in out
    )
    rows, out = listed("--limit", "3")
    assert rows == [RECORDS - 2, RECORDS - 1, RECORDS]
    rows, out = listed("--limit", "1000")
    assert rows == list(range(1, RECORDS + 1)) and "older ones" not in out


@pytest.mark.usefixtures("long_log")
def test_audit_list_all_prints_every_record_once_a_page_at_a_time() -> None:
    """`--all` prints every record once, oldest first, read from the store a page at a time."""
    rows, out = listed("--all")
    assert rows == list(range(1, RECORDS + 1)) and "older ones" not in out


@pytest.mark.usefixtures("long_log")
def test_audit_list_json_says_the_total_and_all_is_one_json_object() -> None:
    """`--json` holds the same records as the table, with `total`; with `--all` it is still one JSON object."""
    newest = json.loads(runner.invoke(app, ["audit", "list", str(EXAMPLE), "--json"]).stdout)
    assert [r["seq"] for r in newest["records"]] == list(range(RECORDS - 49, RECORDS + 1))
    assert newest["total"] == RECORDS and newest["records"][-1]["body"]["tool_name"] == f"tool_{RECORDS}"
    every = json.loads(runner.invoke(app, ["audit", "list", str(EXAMPLE), "--all", "--json"]).stdout)
    assert [r["seq"] for r in every["records"]] == list(range(1, RECORDS + 1)) and every["total"] == RECORDS


def test_audit_list_refuses_a_limit_it_cannot_take() -> None:
    """A limit under 1, or `--limit` with `--all`, is a usage error (exit 2) naming the option; with `--json`, as one
    JSON error object, as every other refused option is."""
    for args, said in ((["--limit", "0"], "--limit"), (["--limit", "5", "--all"], "--limit and --all")):
        result = runner.invoke(app, ["audit", "list", str(EXAMPLE), *args])
        assert result.exit_code == 2, result.output
        assert said in result.stderr
    for args, said in (
        (["--limit", "0"], "--limit must be 1 or more, not 0"),
        (["--limit", "5", "--all"], "--limit and --all"),
    ):
        result = runner.invoke(app, ["audit", "list", str(EXAMPLE), *args, "--json"])
        assert result.exit_code == 2, result.output
        assert json.loads(result.stdout)["error"]["type"] == "BadParameter"
        assert said in json.loads(result.stdout)["error"]["message"]
