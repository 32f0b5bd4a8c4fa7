"""Config checks at load and in `sayso check`: a rule that cannot be applied fails closed, with file, line and fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic_ai.models.test import TestModel

from sayso import AgentConfig, Approve, Config, ConfigError, Sayso, load_config
from sayso._config.checks import check_config

from .conftest import EXAMPLE, MakeApp
from .tools import delete_file


def example_copy(tmp_path: Path, *, old: str = "", new: str = "") -> Path:
    """The files example in `tmp_path`, its sayso.yaml with `old` replaced by `new`."""
    for name in ("script.yaml", "files_tools.py", "files_subjects.py"):
        shutil.copy(EXAMPLE.parent / name, tmp_path / name)
    config = tmp_path / "sayso.yaml"
    config.write_text(EXAMPLE.read_text().replace(old, new))
    return config


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


async def test_a_typo_in_an_approval_rule_refuses_to_load(tmp_path: Path) -> None:
    """`interrupt.tools: [{name: delete_fil}]` stops the load, so `delete notes` can never run ungated."""
    config = example_copy(tmp_path, old="{name: delete_file,", new="{name: delete_fil,")
    with pytest.raises(ConfigError) as refused:
        Sayso.from_yaml(config)
    message = str(refused.value)
    assert f"{config}:{line_of(config, 'name: delete_fil,')}: error: agents.files.interrupt.tools[0]" in message
    assert "'delete_fil', which is none of the agent's tools" in message
    assert "Fix: did you mean 'delete_file'?" in message


async def test_the_same_config_spelled_right_gates_the_delete(tmp_path: Path) -> None:
    """The control for the typo test: with the right name, `delete notes` waits for a person."""
    async with Sayso.from_yaml(example_copy(tmp_path)) as app:
        paused = await app.run("delete notes")
        assert paused.status == "paused"
        assert (tmp_path / "sandbox" / "notes.txt").exists()
        done = await app.decide(paused.requests[0].request_id, Approve())
    assert done.run.output == "Deleted notes.txt."


def test_a_glob_that_matches_nothing_is_a_warning_naming_it(tmp_path: Path) -> None:
    """A pattern (`merchant___*`) may be meant for tools added later: it warns, names itself, and the config loads."""
    config = example_copy(
        tmp_path, old="tools: [{name: delete_file,", new='tools: ["merchant___*", {name: delete_file,'
    )
    problems = check_config(load_config(config))
    [warning] = problems
    assert warning.severity == "warning"
    assert warning.where == "agents.files.interrupt.tools[0]"
    assert warning.line == line_of(config, "merchant___*")
    assert "'merchant___*' matches none of the agent's tools" in warning.message
    assert "list_files, read_file, delete_file, ask_user" in warning.fix
    Sayso.from_yaml(config)  # loads


def test_rules_may_name_delegates_client_tools_and_ask_user(tmp_path: Path) -> None:
    """An approval rule naming a delegate, a client tool or `ask_user` names a real tool of the agent."""
    config = tmp_path / "sayso.yaml"
    (tmp_path / "s.yaml").write_text("rules: []")
    config.write_text(
        """
models: {m: {scripted: s.yaml}}
agents:
  lead:
    model: m
    client_tools: [pick_color]
    delegates: [{agent: helper}]
    interrupt: {tools: [helper, pick_color, ask_user]}
  helper: {model: m}
"""
    )
    assert check_config(load_config(config)) == []


def test_ask_user_listed_as_a_client_tool_stands_for_the_built_in(tmp_path: Path) -> None:
    """kaboo configs list `ask_user` under `client_tools`: a note says the built-in is meant, and the agent loads."""
    config = example_copy(
        tmp_path, old="    interrupt:", new="    client_tools: [ask_user, pick_color]\n    interrupt:"
    )
    [note] = check_config(load_config(config))
    assert (note.severity, note.where, note.line) == (
        "note",
        "agents.files.client_tools[0]",
        line_of(config, "ask_user, pick"),
    )
    assert "stands for the built-in" in note.message
    Sayso.from_yaml(config)  # the agent loads; the next test shows the built-in answers


async def test_a_client_declared_ask_user_does_not_clash_with_the_built_in(tmp_path: Path) -> None:
    """A client that declares its own `ask_user` is not offered it: the run asks through the built-in, no crash."""
    from sayso import ClientTool

    config = example_copy(tmp_path, old="    interrupt:", new="    client_tools: [ask_user]\n    interrupt:")
    async with Sayso.from_yaml(config) as app:
        paused = await app.run(
            "delete report",
            client_tools=[ClientTool(name="ask_user", description="the client's own", parameters={"type": "object"})],
        )
    assert paused.status == "paused"
    assert paused.requests[0].kind == "question"


@pytest.mark.parametrize(
    ("agent", "problem", "fix"),
    [
        pytest.param(
            "{model: m, ask_user: false, client_tools: [ask_user]}",
            "but this agent has 'ask_user: false'",
            "remove the entry, or set 'ask_user: true'",
            id="ask-user-off-but-listed",
        ),
        pytest.param(
            "{model: m, tools: ['tools_mod:list_files'], client_tools: [list_files]}",
            "the client tool 'list_files' has the name of one of the agent's own tools",
            "rename one of them",
            id="client-tool-clash",
        ),
        pytest.param(
            "{model: m, tools: ['tools_mod:ask_user']}",
            "defines its own 'ask_user'",
            "set 'ask_user: false'",
            id="own-ask-user",
        ),
        pytest.param(
            "{model: m, tools: ['tools_mod:nothing']}", "has no 'nothing'", "correct the import spec", id="bad-import"
        ),
        pytest.param(
            "{model: m, tools: ['tools_mod:list_files'],"
            " interrupt: {tools: [{name: list_files, subject: 'tools_mod:gone'}]}}",
            "has no 'gone'",
            "correct the subject's import spec",
            id="bad-subject",
        ),
        pytest.param("{model: mm}", "unknown model 'mm': did you mean 'm'?", "", id="model-typo"),
        pytest.param(
            "{model: m, tools: ['broken_mod:fn']}",
            "importing 'broken_mod' for 'broken_mod:fn' raised ZeroDivisionError",
            "fix the module 'broken_mod': importing it fails",
            id="module-raises",
        ),
        pytest.param(
            "{model: m, tools: ['needy_mod:fn']}",
            "'needy_mod' (for 'needy_mod:fn') imports 'sayso_no_such_package', which is not installed",
            "install the package that provides 'sayso_no_such_package' in the environment",
            id="module-needs-a-package",
        ),
    ],
)
def test_each_error_names_file_line_and_fix(tmp_path: Path, agent: str, problem: str, fix: str) -> None:
    """Every error a config can have at load comes with its file, its line and what to change."""
    (tmp_path / "s.yaml").write_text("rules: []")
    (tmp_path / "tools_mod.py").write_text(
        "def list_files() -> str:\n    return ''\n\n\ndef ask_user(q: str) -> str:\n    return q\n"
    )
    (tmp_path / "broken_mod.py").write_text("1 / 0\n")
    (tmp_path / "needy_mod.py").write_text("import sayso_no_such_package\n")
    config = tmp_path / "sayso.yaml"
    config.write_text(f"models: {{m: {{scripted: s.yaml}}}}\nagents:\n  a: {agent}\n")
    problems = [p for p in check_config(load_config(config)) if p.severity == "error"]
    assert len(problems) == 1, problems
    [error] = problems
    assert (error.file, error.line) == (config, 3)
    assert problem in error.message
    assert fix in error.fix
    with pytest.raises(ConfigError, match=f"{config}:3: error: agents.a"):
        Sayso.from_yaml(config)


def test_agents_built_in_python_are_checked_too(make_app: MakeApp) -> None:
    """A config built in Python fails the same way, naming the agent instead of a line."""
    with pytest.raises(ConfigError, match=r"error: agents\.files\.interrupt\.tools\[0\]: .*'delete_fil'"):
        make_app(
            {"files": {"model": "m", "tools": [delete_file], "interrupt": {"tools": ["delete_fil"]}}},
            model=TestModel(),
        )


def test_schema_errors_name_the_line_of_each_problem(tmp_path: Path) -> None:
    """Misspelled fields and bad values are listed one per line, each with `file:line` and the path in the config."""
    config = tmp_path / "sayso.yaml"
    config.write_text(
        "agents:\n  a:\n    modle: x\n    interrupt:\n"
        "      remember: forever\n      tools: [{name: x, remeber: once}]\n"
    )
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    lines = str(refused.value).splitlines()[1:]
    assert lines == [
        f"  {config}:3: error: agents.a.modle: Extra inputs are not permitted. Fix: did you mean 'model'? "
        "Or remove it.",
        f"  {config}:5: error: agents.a.interrupt.remember: Input should be 'once', 'thread' or 'always'",
        f"  {config}:6: error: agents.a.interrupt.tools[0].remeber: Extra inputs are not permitted. Fix: did you mean "
        "'remember'? Or remove it.",
    ]


def test_a_store_sayso_cannot_open_is_an_error_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store URL the store cannot open is an error at load, not at the first run."""
    monkeypatch.delenv("SAYSO_STORE")
    config = Config(agents={"a": AgentConfig(model="test")}, store="mysql://x")
    [problem] = check_config(config)
    assert "sayso stores runs in SQLite or PostgreSQL, and 'mysql' is neither" in problem.message
