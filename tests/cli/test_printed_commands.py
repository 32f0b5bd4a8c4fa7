"""Every command a paused run prints is one the CLI accepts: pasted verbatim into a shell whose PATH lacks the venv,
in another folder than the one the config was named from, the first suggestion of each request (a question's answer,
a workflow form's answer, an approval, a delegate's requests) decides it and exits 0, step after step."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT


def bare_shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SAYSO_STORE", "VIRTUAL_ENV")}
    env |= {"PATH": "/usr/bin:/bin", "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(["/bin/sh", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def suggestions(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines() if " decide " in line and line.startswith("  ")]


@pytest.mark.parametrize(
    ("example", "message", "steps"),
    [
        pytest.param("files", "delete report", 2, id="question-then-approval"),
        pytest.param("concierge", "plan my day", 2, id="workflow-forms"),
        pytest.param("team", "report", 2, id="delegates"),
    ],
)
def test_the_first_printed_command_of_each_pause_runs_pasted(
    tmp_path: Path, example: str, message: str, steps: int
) -> None:
    """Each step's first suggested command, run verbatim without the venv on PATH, is accepted (exit 0)."""
    folder = tmp_path / example
    shutil.copytree(ROOT / "examples" / example, folder, ignore=shutil.ignore_patterns("sandbox", "*.db*"))
    quoted_python = sys.executable
    result = bare_shell(f"{quoted_python} -m sayso run sayso.yaml '{message}'", folder)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = re.escape(str(folder / "sayso.yaml"))
    for step in range(steps):
        assert result.returncode == 0, result.stderr
        commands = suggestions(result.stdout)
        assert commands, f"step {step}: nothing to paste in\n{result.stdout}"
        assert all(re.match(rf"{re.escape(sys.executable)} -m sayso decide {config} req_", c) for c in commands)
        result = bare_shell(commands[0], elsewhere)  # the config was typed relative to `folder`: pasted anywhere
    assert result.returncode == 0, result.stderr
