"""The exit codes of docs/guides/cli.md, one table every command follows: each row is what the commands do."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from sayso.cli import app

from ..conftest import EXAMPLE, ROOT

runner = CliRunner()


def documented() -> dict[int, str]:
    page = (ROOT / "docs" / "guides" / "cli.md").read_text()
    table = page[page.index("## Exit codes") :]
    return {int(code): meaning for code, meaning in re.findall(r"^\| (\d) \| ([^|]+) \|", table, re.M)}


def test_the_table_lists_every_code() -> None:
    """Codes 0 to 5, each with its meaning."""
    assert sorted(documented()) == [0, 1, 2, 3, 4, 5]


def code(*args: str) -> int:
    return runner.invoke(app, list(args)).exit_code


def test_each_command_follows_the_table(tmp_path: Path) -> None:
    """0 a pause; 2 an unknown agent, bad JSON, a config that does not load; 3 an unknown id; 4 a decision refused
    because another came first, and a resume of a run that is not paused (1 for a failed run and 5 for a port in
    use are tested with their commands)."""
    paused = runner.invoke(app, ["run", str(EXAMPLE), "delete notes", "--json"])
    assert paused.exit_code == 0
    request_id = json.loads(paused.stdout)["requests"][0]["id"]
    unknown_agent = runner.invoke(app, ["run", str(EXAMPLE), "hi", "--agent", "nope"])
    assert unknown_agent.exit_code == 2 and "no agent or workflow named 'nope'" in unknown_agent.stderr
    assert code("decide", str(EXAMPLE), request_id, "approve", "--args", "{not json") == 2
    assert code("check", str(tmp_path / "missing.yaml")) == 2
    assert code("inbox", str(tmp_path / "missing.yaml")) == 2
    assert code("decide", str(EXAMPLE), "req_nope", "approve") == 3
    assert code("resume", str(EXAMPLE), "run_nope") == 3
    assert code("grants", "revoke", str(EXAMPLE), "grt_nope") == 3
    assert code("decide", str(EXAMPLE), request_id, "reject") == 0
    refused = runner.invoke(app, ["decide", str(EXAMPLE), request_id, "approve"])
    assert refused.exit_code == 4, refused.output
    ended = runner.invoke(app, ["resume", str(EXAMPLE), json.loads(paused.stdout)["run_id"]])
    assert ended.exit_code == 4 and "only a paused run can be resumed" in ended.output
