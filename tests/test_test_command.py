"""The test command says what it needs: without root (or apt-get) it names what is missing, how to install it and
which tests it skips, and carries on, instead of failing on an apt-get it may not run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .conftest import ROOT


def test_without_root_it_says_what_is_missing_and_which_tests_it_skips(tmp_path: Path) -> None:
    """`scripts/needs` as a user who is not root, lacking chromium and PostgreSQL: two plain notes, exit 0."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_id = bin_dir / "id"
    fake_id.write_text('#!/bin/sh\ncase "$1" in -un) echo dev ;; *) echo 1000 ;; esac\n')
    fake_id.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "TEST_POSTGRES_DSN"}
    env |= {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "CHROMIUM_BIN": str(tmp_path / "no-chromium"),
        "PG_INITDB_GLOB": str(tmp_path / "no-pg" / "*" / "initdb"),
    }
    done = subprocess.run(
        ["bash", "scripts/needs"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    notes = done.stderr.splitlines()
    assert (
        f"test: Debian's chromium ({tmp_path / 'no-chromium'}) is missing and installing it needs root (you are dev); "
        "the browser tests (tests/server/test_web_ui.py, tests/mcp_tools/test_elicitation_web.py) will be skipped. "
        "To run them: sudo apt-get install chromium"
    ) in notes
    assert (
        "test: PostgreSQL (initdb) is missing and installing it needs root (you are dev); the PostgreSQL store, "
        "replica and fault tests will be skipped. To run them: sudo apt-get install postgresql, or set "
        "TEST_POSTGRES_DSN to a server you run"
    ) in notes
    assert "apt-get" not in done.stdout
