"""A webhook's `secret_env` that is not set: said by `sayso check`, refused in one line by `sayso serve`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sayso.cli import app

PLAIN = """\
models: {m: test}
agents:
  desk: {model: m}
webhooks:
  - {url: "http://127.0.0.1:9/hooks", secret_env: UNSET_HOOK_SECRET_FOR_TEST}
"""

NAMED = """\
models: {m: test}
agents:
  desk:
    model: m
    tools: ["tests.tools:pay"]
    interrupt:
      tools:
        - {name: pay, notify: ["webhook:tickets"]}
webhooks:
  - {url: "http://127.0.0.1:9/tickets", secret_env: UNSET_HOOK_SECRET_FOR_TEST, name: tickets, events: []}
"""

SAID = "the environment variable UNSET_HOOK_SECRET_FOR_TEST is not set"


@pytest.fixture
def config(tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("UNSET_HOOK_SECRET_FOR_TEST", raising=False)
    path = tmp_path / "sayso.yaml"
    path.write_text(request.param)
    return path


@pytest.mark.parametrize("config", [PLAIN, NAMED], ids=["events", "notify-target"], indirect=True)
def test_check_names_an_unset_webhook_secret(config: Path) -> None:
    """As for a channel's secret: `sayso check` says which variable to set before the server starts."""
    done = CliRunner().invoke(app, ["check", str(config)])
    assert f"webhooks[0].secret_env: {SAID}" in done.output, done.output
    assert "set UNSET_HOOK_SECRET_FOR_TEST before starting the server" in done.output


@pytest.mark.parametrize("config", [PLAIN, NAMED], ids=["events", "notify-target"], indirect=True)
def test_serve_refuses_an_unset_webhook_secret_in_one_line(config: Path, tmp_path: Path) -> None:
    """`sayso serve` stops before it listens (exit 2) naming the variable, never with a traceback."""
    env = {
        **os.environ,
        "SAYSO_STORE": f"sqlite:///{tmp_path / 'sayso.db'}",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    done = subprocess.run(
        [sys.executable, "-m", "sayso", "serve", str(config), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "sayso serves" not in done.stderr + done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: webhook 'http://127.0.0.1:9/") and last.endswith(f"': {SAID}"), done.stderr
