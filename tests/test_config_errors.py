"""Config errors read like the rest: YAML syntax as `file:line: error: … Fix: …`, did-you-mean for misspelt fields
and providers, principals that cannot sign in said at check and at start, connection errors naming the server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pydantic_ai.models
import pytest
from typer.testing import CliRunner

from sayso.cli import app

from .conftest import EXAMPLE, LiveServer, free_port

runner = CliRunner()


def check(tmp_path: Path, text: str) -> tuple[Path, object]:
    config = tmp_path / "sayso.yaml"
    config.write_text(text)
    return config, runner.invoke(app, ["check", str(config)])


def test_a_yaml_syntax_error_names_file_line_and_fix(tmp_path: Path) -> None:
    """An unclosed brace is `file:line: error: not valid YAML …. Fix: …`, with no PyYAML `<unicode string>` (exit 2)."""
    config, done = check(tmp_path, "models:\n  m: {scripted: s.yaml\nagents: {}\n")
    assert done.exit_code == 2  # type: ignore[attr-defined]
    err = done.stderr  # type: ignore[attr-defined]
    assert f"{config}:3: error: not valid YAML, column 7: expected ',' or '}}', but got ':'" in err
    assert "(while parsing a flow mapping on line 2). Fix: check that line and the one before" in err
    assert "<unicode string>" not in err


def test_misspelt_fields_and_providers_get_a_did_you_mean(tmp_path: Path) -> None:
    """A misspelt field, a misspelt provider of a `models:` entry and of a model string each suggest the right one."""
    config, done = check(
        tmp_path,
        "models:\n  local: {provider: opnai, name: llama3}\n"
        "agents:\n  a: {model: local, instrucions: hi}\nprincipals:\n  - {name: p, tokn: x}\n",
    )
    err = done.stderr  # type: ignore[attr-defined]
    assert f"{config}:2: error: models.local.provider: Input should be 'openai', 'anthropic' or 'google'. " in err
    assert "Fix: did you mean 'openai'?" in err
    assert f"{config}:4: error: agents.a.instrucions: Extra inputs are not permitted. Fix: did you mean " in err
    assert "'instructions'? Or remove it." in err
    assert f"{config}:6: error: principals[0].tokn: Extra inputs are not permitted. Fix: did you mean 'token'?" in err
    _, done = check(tmp_path, "agents:\n  a: {model: 'opnai:gpt-4o-mini'}\n")
    assert "unknown model 'opnai:gpt-4o-mini': did you mean 'openai:gpt-4o-mini'?" in done.stderr  # type: ignore[attr-defined]


def test_a_model_that_fails_to_build_is_not_also_unused(tmp_path: Path) -> None:
    """A `models:` entry an agent names but that cannot be built is one error, not also "no agent uses the model"."""
    _, done = check(
        tmp_path,
        "models:\n  m: {provider: openai, name: gpt-4o-mini, api_key_env: SAYSO_TEST_UNSET_KEY}\n"
        "agents:\n  a: {model: m}\n",
    )
    assert done.exit_code == 2  # type: ignore[attr-defined]
    assert "SAYSO_TEST_UNSET_KEY" in done.output  # type: ignore[attr-defined]
    assert "no agent uses the model" not in done.output  # type: ignore[attr-defined]


PRINCIPALS = "principals:\n  - {name: alice, token: a-secret}\n  - {name: bob, token_env: SAYSO_TEST_BOB_TOKEN}\n"


def test_a_principal_whose_token_env_is_unset_is_said_at_check_and_at_start(tmp_path: Path) -> None:
    """`sayso check` warns that bob cannot sign in (file, line, fix) and passes; `sayso serve` says it at start."""
    config = tmp_path / "sayso.yaml"
    config.write_text(EXAMPLE.read_text() + PRINCIPALS)
    for name in ("script.yaml", "files_tools.py", "files_subjects.py"):
        (tmp_path / name).write_text((EXAMPLE.parent / name).read_text())
    done = runner.invoke(app, ["check", str(config)])
    assert done.exit_code == 0, done.output
    line = len(EXAMPLE.read_text().splitlines()) + 3
    warning = (
        f"{config}:{line}: warning: principals[1].token_env: 'bob' cannot sign in: the environment variable "
        "'SAYSO_TEST_BOB_TOKEN' is not set. Fix: set SAYSO_TEST_BOB_TOKEN to bob's bearer token before starting"
    )
    assert warning in done.stdout
    env = {"SAYSO_STORE": f"sqlite:///{tmp_path / 'sayso.db'}", "SAYSO_SANDBOX": str(tmp_path / "sandbox"), "PATH": ""}
    _, process = LiveServer.process([str(config)], env=env, stderr=subprocess.PIPE)
    process.terminate()
    _, stderr = process.communicate(timeout=30)
    assert warning in stderr.splitlines()
    assert stderr.index(warning) < stderr.index("sayso serves")


def test_a_model_server_that_cannot_be_reached_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose OpenAI-compatible server refuses the connection fails naming the configured `base_url`."""
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # to a closed port of this machine
    url = f"http://127.0.0.1:{free_port()}/v1"
    config = tmp_path / "sayso.yaml"
    config.write_text(f"models:\n  local: {{provider: openai, name: llama3, base_url: '{url}'}}\nagents:\n  a: {{}}\n")
    done = runner.invoke(app, ["run", str(config), "hi", "--json"])
    assert done.exit_code == 1
    error = json.loads(done.stdout)["error"]
    assert error.startswith(f"ModelConnectionError: cannot reach the model server at {url}: "), error
