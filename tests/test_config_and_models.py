"""Configuration from YAML, the scripted model, and the shape of the public package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sayso
from sayso import ConfigError, Sayso, ScriptedModel, load_config
from sayso._scripted import Script

from .conftest import EXAMPLE, ROOT


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sayso.yaml"
    path.write_text(text)
    return path


def test_example_config_loads_with_every_field() -> None:
    config = load_config(EXAMPLE)
    assert config.entry_agent == "files"
    files = config.agents["files"]
    assert files.tools == ["files_tools:list_files", "files_tools:read_file", "files_tools:delete_file"]
    assert files.interrupt.to_policy().tools[0].name == "delete_file"


def test_interrupt_tools_accept_names_globs_and_objects(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """
agents:
  a:
    model: openai:gpt-4o-mini
    interrupt:
      tools: ["merchant___*", {name: delete_store, remember: thread, ttl_seconds: 60}]
      skip_read_only: true
      remember: always
""",
        )
    )
    policy = config.agents["a"].interrupt.to_policy()
    assert [r.name for r in policy.tools] == ["merchant___*", "delete_store"]
    assert policy.tools[1].remember == "thread" and policy.tools[1].ttl_seconds == 60
    assert policy.skip_read_only and policy.remember == "always"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param("agents: {}", "at least one agent", id="no-agents"),
        pytest.param("agents: {a: {model: x}}\nentry: b", "entry 'b' is not one of the agents: a", id="bad-entry"),
        pytest.param("agents: {a: {modle: x}}", "modle", id="unknown-field"),
        pytest.param("agents: {a: {interrupt: {remember: forever}}}", "remember", id="bad-scope"),
        pytest.param("agents: [", "not valid YAML", id="bad-yaml"),
    ],
)
def test_config_errors_name_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_config(write(tmp_path, text))


def test_bad_tool_spec_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, "models: {m: {scripted: s.yaml}}\nagents: {a: {model: m, tools: ['nowhere_mod:fn']}}")
    (tmp_path / "s.yaml").write_text("rules: []")
    with pytest.raises(ConfigError, match="cannot import 'nowhere_mod'"):
        Sayso.from_yaml(path)
    path.write_text("models: {m: {scripted: s.yaml}}\nagents: {a: {model: m, tools: ['no_colon']}}")
    with pytest.raises(ConfigError, match="must look like 'package.module:name'"):
        Sayso.from_yaml(path)


def test_store_url_comes_from_the_environment_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAYSO_STORE", "sqlite:///elsewhere.db")
    assert load_config(EXAMPLE).store_url() == "sqlite:///elsewhere.db"
    monkeypatch.delenv("SAYSO_STORE")
    assert load_config(EXAMPLE).store_url() == "sqlite:///sayso.db"


async def test_relative_sqlite_path_is_next_to_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAYSO_STORE")
    app = Sayso.from_yaml(EXAMPLE)
    assert app.store.url == f"sqlite+aiosqlite:///{EXAMPLE.parent / 'sayso.db'}"


def test_model_strings_are_resolved_only_when_used(tmp_path: Path) -> None:
    """An agent on a hosted model can be configured without its API key; the key is needed only to run it."""
    app = Sayso.from_yaml(write(tmp_path, "agents: {a: {model: 'openai:gpt-4o-mini'}}"))
    assert app.agent_model("a") == "openai:gpt-4o-mini"


def test_scripted_model_says_it_is_a_script() -> None:
    model = ScriptedModel(Script.model_validate({"name": "demo", "rules": []}))
    assert model.model_name == "scripted:demo"


async def test_scripted_fallback_reply_is_marked_as_a_script(example_app: Sayso) -> None:
    result = await example_app.run("what is the weather?")
    assert (
        result.output == "[script] I am a scripted demo model, not an LLM. I understand: list, read NAME, delete NAME."
    )


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        pytest.param({"user": "x"}, "exactly one of 'call', 'calls' or 'reply'", id="no-action"),
        pytest.param({"user": "x", "reply": "a", "call": "b"}, "exactly one", id="two-actions"),
    ],
)
def test_script_rules_need_one_action(tmp_path: Path, rule: dict[str, str], problem: str) -> None:
    path = tmp_path / "script.yaml"
    path.write_text(f"rules: [{rule!r}]".replace("'", '"'))
    with pytest.raises(ConfigError, match=problem):
        ScriptedModel.from_file(path)


def test_public_names_are_exported_and_sorted() -> None:
    assert sayso.__all__ == sorted(sayso.__all__)
    for name in sayso.__all__:
        assert hasattr(sayso, name), name


FORBIDDEN_IN_CORE = (
    "sqlalchemy",
    "aiosqlite",
    "asyncpg",
    "starlette",
    "fastapi",
    "httpx",
    "typer",
    "rich",
    "pydantic_ai",
    "a2a",
    "ag_ui",
    "sqlite3",
)


def test_core_does_no_io_and_imports_no_edge() -> None:
    """The pure core never imports a database, web, CLI, engine or protocol package."""
    checked = 0
    for path in (ROOT / "src" / "sayso" / "_core").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN_IN_CORE, f"{path.name} imports {name}"
        checked += 1
    assert checked >= 4, "the walker found no core modules to check"


def test_ids_carry_at_least_128_random_bits() -> None:
    import base64

    from sayso._runtime import new_id

    ids = {new_id("req") for _ in range(2000)}
    assert len(ids) == 2000
    for token in list(ids)[:50]:
        raw = base64.urlsafe_b64decode(token.removeprefix("req_") + "==")
        assert len(raw) >= 16
