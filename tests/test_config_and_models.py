"""Configuration from YAML, the scripted model, and the shape of the public package."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from pydantic_ai.models import Model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.wrapper import WrapperModel
from typer.testing import CliRunner

import sayso
from sayso import ConfigError, Sayso, ScriptedModel, load_config
from sayso._engine.scripted import Script
from sayso._store import SqlRunStore
from sayso.cli import app

from .conftest import EXAMPLE


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sayso.yaml"
    path.write_text(text)
    return path


def test_example_config_loads_with_every_field() -> None:
    """The example `sayso.yaml` loads with its entry agent, its tool specs in order, and its interrupt policy."""
    config = load_config(EXAMPLE)
    assert config.entry_agent == "files"
    files = config.agents["files"]
    assert files.tools == ["files_tools:list_files", "files_tools:read_file", "files_tools:delete_file"]
    assert files.interrupt.to_policy().tools[0].name == "delete_file"


def test_interrupt_tools_accept_names_globs_and_objects(tmp_path: Path) -> None:
    """Interrupt tools may be names, globs or objects with remember and TTL, next to the policy-wide settings."""
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
        pytest.param("agents: {a: {system_prompt: hi}}", "another name for 'instructions'", id="system-prompt-off"),
        pytest.param(
            "agents: {a: {system_prompt: hi, instructions: ho}}\nag_ui: {kaboo_compat: true}",
            "both 'instructions' and 'system_prompt'",
            id="system-prompt-twice",
        ),
        pytest.param(
            "agents: {a: {}}\norchestrations: {a: {entry_name: a}}", "has an agent's name", id="team-named-as-agent"
        ),
        pytest.param("agents: {a: {}}\nwebhooks_retention_days: 0", "webhooks_retention_days", id="no-retention"),
        pytest.param("agents: {a: {}}\nwebhooks_retention_days: -1", "greater than 0", id="negative-retention"),
    ],
)
def test_config_errors_name_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    """No agents, an unknown entry or field, a bad remember scope, a webhook retention that is not a positive
    number of days or broken YAML is a ConfigError naming the problem."""
    with pytest.raises(ConfigError, match=problem):
        load_config(write(tmp_path, text))


def test_kaboo_configs_load_under_kaboos_switch(tmp_path: Path) -> None:
    """With `ag_ui.kaboo_compat`, `system_prompt` is the instructions and an orchestration may be the entry."""
    config = load_config(
        write(
            tmp_path,
            "agents: {lead: {system_prompt: Be brief.}, helper: {}}\n"
            "orchestrations: {team: {entry_name: lead, connections: [{agent: helper}]}}\n"
            "entry: team\nag_ui: {kaboo_compat: true}",
        )
    )
    assert config.agents["lead"].instructions == "Be brief."
    assert (config.entry_name, config.entry_agent) == ("team", "lead")
    assert config.entries() == {"lead": "lead", "helper": "helper", "team": "lead"}


def test_bad_tool_spec_is_a_config_error(tmp_path: Path) -> None:
    """A tool spec whose module cannot be imported, or that lacks `module:name`, is a ConfigError saying so."""
    path = write(tmp_path, "models: {m: {scripted: s.yaml}}\nagents: {a: {model: m, tools: ['nowhere_mod:fn']}}")
    (tmp_path / "s.yaml").write_text("rules: []")
    with pytest.raises(ConfigError, match="cannot import 'nowhere_mod'"):
        Sayso.from_yaml(path)
    path.write_text("models: {m: {scripted: s.yaml}}\nagents: {a: {model: m, tools: ['no_colon']}}")
    with pytest.raises(ConfigError, match="must look like 'package.module:name'"):
        Sayso.from_yaml(path)


async def test_tool_modules_next_to_the_config_are_found_without_touching_sys_path(tmp_path: Path) -> None:
    """A package beside the config (its own modules imported relatively) and a folder without `__init__.py` provide
    tools by `pkg.mod:attr`, and `sys.path` is left as it was: the folder's other modules shadow no one's imports."""
    package = tmp_path / "beside_tools_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_words.py").write_text("GREETING = 'hello'\n")
    (package / "greet.py").write_text(
        "from ._words import GREETING\n\n\nclass Tools:\n    @staticmethod\n"
        "    def greet(name: str) -> str:\n        return f'{GREETING} {name}'\n"
    )
    (tmp_path / "beside_plain_folder").mkdir()
    (tmp_path / "beside_plain_folder" / "loud.py").write_text("def shout(text: str) -> str:\n    return text.upper()\n")
    (tmp_path / "s.yaml").write_text(
        "rules:\n  - {user: greet, call: greet, args: {name: Ada}}\n  - {tool: greet, reply: '{result}'}\n"
    )
    before = list(sys.path)
    path = write(
        tmp_path,
        "models: {m: {scripted: s.yaml}}\nagents: {a: {model: m, tools: "
        "['beside_tools_pkg.greet:Tools.greet', 'beside_plain_folder.loud:shout']}}",
    )
    async with Sayso.from_yaml(path) as app:
        result = await app.run("greet")
    assert result.output == "hello Ada"
    assert sys.path == before


def test_store_url_comes_from_the_environment_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`SAYSO_STORE` overrides the config's store URL, which applies when the variable is unset."""
    monkeypatch.setenv("SAYSO_STORE", "sqlite:///elsewhere.db")
    assert load_config(EXAMPLE).store_url() == "sqlite:///elsewhere.db"
    monkeypatch.delenv("SAYSO_STORE")
    assert load_config(EXAMPLE).store_url() == "sqlite:///sayso.db"


async def test_relative_sqlite_path_is_next_to_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative SQLite store path resolves next to the config file, not the working directory."""
    monkeypatch.delenv("SAYSO_STORE")
    app = Sayso.from_yaml(EXAMPLE)
    assert isinstance(app.store, SqlRunStore)
    assert app.store.url == f"sqlite+aiosqlite:///{EXAMPLE.parent / 'sayso.db'}"


def test_a_hosted_model_without_its_key_is_refused_at_load(tmp_path: Path) -> None:
    """A model string whose API key is not set stops the load and names the variable to set."""
    config = write(tmp_path, "agents:\n  a:\n    model: 'openai:gpt-4o-mini'\n")
    with pytest.raises(ConfigError) as refused:
        Sayso.from_yaml(config)
    assert f"{config}:3: error: agents.a.model: model 'openai:gpt-4o-mini' needs an API key" in str(refused.value)
    assert "set the environment variable 'OPENAI_API_KEY'" in str(refused.value)


def test_a_hosted_model_with_its_key_is_built_at_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the key set, the model string becomes pydantic-ai's model for that provider when the config loads."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    app = Sayso.from_yaml(write(tmp_path, "agents: {a: {model: 'openai:gpt-4o-mini'}}"))
    model = app.agent_model("a")
    assert isinstance(model, Model)
    assert (model.system, model.model_name) == ("openai", "gpt-4o-mini")


@pytest.mark.skipif(importlib.util.find_spec("anthropic") is not None, reason="the anthropic package is installed")
def test_a_missing_provider_package_names_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A provider whose package is not installed is refused with the exact `pip install` line."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with pytest.raises(ConfigError, match=r"needs a package that is not installed: pip install 'sayso\[anthropic\]'"):
        Sayso.from_yaml(write(tmp_path, "agents: {a: {model: 'anthropic:claude-sonnet-4-5'}}"))


@pytest.mark.parametrize(
    "model",
    [pytest.param("gpt4", id="no-provider"), pytest.param("nowhere:model", id="unknown-provider")],
)
def test_an_unknown_model_string_is_refused_at_load(tmp_path: Path, model: str) -> None:
    """A model string pydantic-ai cannot place is an error that says what a model string looks like."""
    with pytest.raises(ConfigError, match=f"unknown model '{model}': use a pydantic-ai model string such as"):
        Sayso.from_yaml(write(tmp_path, f"agents: {{a: {{model: '{model}'}}}}"))


def test_a_local_openai_compatible_server_needs_no_key(tmp_path: Path) -> None:
    """`{provider: openai, base_url: ...}` (Ollama, llama.cpp) loads without any key and speaks chat completions."""
    app = Sayso.from_yaml(
        write(
            tmp_path,
            "models: {local: {provider: openai, name: llama3, base_url: 'http://127.0.0.1:11434/v1'}}\n"
            "agents: {a: {model: local}}",
        )
    )
    model = app.agent_model("a")
    assert isinstance(model, WrapperModel)  # it names the server in its connection errors
    assert isinstance(model.wrapped, OpenAIChatModel)
    assert (model.model_name, model.base_url) == ("llama3", "http://127.0.0.1:11434/v1/")


def test_a_key_variable_that_is_not_set_is_named(tmp_path: Path) -> None:
    """`api_key_env` naming an unset variable stops the load at that model's line, naming the variable."""
    config = write(
        tmp_path,
        "models:\n  local: {provider: openai, name: llama3, base_url: 'http://h/v1', api_key_env: LLAMA_KEY}\n"
        "agents: {a: {model: local}}",
    )
    with pytest.raises(ConfigError) as refused:
        Sayso.from_yaml(config)
    assert f"{config}:2: models.local:" in str(refused.value)
    assert "the environment variable 'LLAMA_KEY', which is not set" in str(refused.value)


def test_a_model_no_agent_uses_is_only_warned_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unused entry is not built, so its unset key neither stops `sayso check` nor `sayso run` nor a load: the
    check's warning says it was not checked, and that is all that is said of it."""
    monkeypatch.delenv("UNSET_LLM_KEY_FOR_TEST", raising=False)
    (tmp_path / "script.yaml").write_text("name: s\nrules: []\n")
    config = write(
        tmp_path,
        "models:\n  demo: {scripted: script.yaml}\n"
        "  hosted: {provider: openai, name: my-model, base_url: 'https://llm.example.com/v1', "
        "api_key_env: UNSET_LLM_KEY_FOR_TEST}\n"
        "agents: {a: {model: demo}}\n",
    )
    checked = CliRunner().invoke(app, ["check", str(config)])
    assert checked.exit_code == 0, checked.output
    assert "models.hosted: no agent uses the model 'hosted', so it was not checked" in checked.output
    assert "UNSET_LLM_KEY_FOR_TEST" not in checked.output
    ran = CliRunner().invoke(app, ["run", str(config), "hi"])
    assert ran.exit_code == 0, ran.output
    Sayso.from_yaml(config)


def test_scripted_model_says_it_is_a_script() -> None:
    """A scripted model's name is `scripted:` followed by the script's name."""
    model = ScriptedModel(Script.model_validate({"name": "demo", "rules": []}))
    assert model.model_name == "scripted:demo"


async def test_scripted_fallback_reply_is_marked_as_a_script(example_app: Sayso) -> None:
    """A message no script rule matches gets a `[script]` reply saying it is a demo model and what it understands."""
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
    """A script rule with no action, or more than one of `call`, `calls` and `reply`, is a ConfigError."""
    path = tmp_path / "script.yaml"
    path.write_text(f"rules: [{rule!r}]".replace("'", '"'))
    with pytest.raises(ConfigError, match=problem):
        ScriptedModel.from_file(path)


def test_public_names_are_exported_and_sorted() -> None:
    """The package's `__all__` is sorted and every name in it is importable from `sayso`."""
    assert sayso.__all__ == sorted(sayso.__all__)
    for name in sayso.__all__:
        assert hasattr(sayso, name), name


def test_ids_carry_at_least_128_random_bits() -> None:
    """Generated ids are unique and carry at least 128 bits of randomness after their prefix."""
    import base64

    from sayso._runtime import new_id

    ids = {new_id("req") for _ in range(2000)}
    assert len(ids) == 2000
    for token in list(ids)[:50]:
        raw = base64.urlsafe_b64decode(token.removeprefix("req_") + "==")
        assert len(raw) >= 16


async def test_the_scripted_models_call_log_keeps_only_the_latest_calls() -> None:
    """A demo server runs for days: the scripted model's log of calls is bounded, newest last."""
    from pydantic_ai import Agent

    model = ScriptedModel(
        Script.model_validate({"name": "echo", "rules": [{"user": "(?P<w>.+)", "reply": "{w}"}]}), keep_calls=3
    )
    agent = Agent(model)
    for i in range(10):
        assert (await agent.run(f"word {i}")).output == f"word {i}"
    assert 3 <= len(model.calls) <= 6
    assert model.calls[-1].response.parts[0].content == "word 9"  # type: ignore[union-attr]
