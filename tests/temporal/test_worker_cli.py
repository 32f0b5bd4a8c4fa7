"""`sayso worker` refuses what it cannot work on, with the CLI's exit codes (docs/guides/cli.md#exit-codes)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from ..conftest import EXAMPLE, free_port


def worker(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sayso", "worker", str(config)], capture_output=True, text=True, timeout=60
    )


def test_a_config_without_a_temporal_engine_is_refused_with_exit_2() -> None:
    """A config that names no `engine: temporal` has no runs for a worker: exit 2, saying what is missing."""
    done = worker(EXAMPLE)
    assert done.returncode == 2
    assert "needs 'engine: {temporal:" in done.stderr


def test_a_cluster_that_does_not_answer_is_exit_5(tmp_path: Path) -> None:
    """Nothing listens at the configured address: the worker says it cannot reach Temporal and exits 5."""
    shutil.copytree(EXAMPLE.parent, tmp_path / "files", ignore=shutil.ignore_patterns("*.db*", "__pycache__"))
    config = tmp_path / "files" / "sayso.yaml"
    config.write_text(f'engine: {{temporal: {{address: "127.0.0.1:{free_port()}"}}}}\n' + EXAMPLE.read_text())
    done = worker(config)
    assert done.returncode == 5, done.stderr
    assert "cannot reach Temporal" in done.stderr
