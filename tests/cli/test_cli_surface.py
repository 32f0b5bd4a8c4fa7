"""The command's surface: `--version`, plain help, `sayso check`, exit codes, and panels that say how to answer."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sayso.cli import app

from ..conftest import EXAMPLE

runner = CliRunner()

COMMANDS = [
    ["chat"],
    ["run"],
    ["decide"],
    ["resume"],
    ["inbox"],
    ["serve"],
    ["check"],
    ["expire"],
    ["recover"],
    ["grants", "list"],
    ["grants", "revoke"],
    ["audit", "list"],
    ["audit", "anchor"],
    ["audit", "verify"],
]


def test_version_prints_the_installed_version() -> None:
    """`sayso --version` prints the version pip installed, and exits 0."""
    done = runner.invoke(app, ["--version"])
    assert done.exit_code == 0
    assert done.stdout == f"sayso {version('sayso')}\n"


@pytest.mark.parametrize("command", [pytest.param(c, id=" ".join(c)) for c in COMMANDS])
def test_help_reads_plainly(command: list[str]) -> None:
    """Help shows flags as flags and arguments by name: no `<bool>`, `<str>` or `{CONFIG}`."""
    done = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "120"})
    assert done.exit_code == 0, done.output
    assert not re.search(r"<\w+>|\{[A-Z_]+\}", done.stdout), done.stdout
    assert re.search(r"^Usage: sayso .*\bCONFIG\b", done.stdout, re.M)
    assert re.search(r"^  CONFIG +Path to sayso.yaml.$", done.stdout, re.M)
    if command != ["serve"] and command != ["chat"]:
        assert re.search(r"^  --json +Print one JSON object instead of panels.$", done.stdout, re.M)


def test_value_options_name_their_value() -> None:
    """An option that takes a value shows what kind (`--args JSON`, `--thread THREAD_ID`)."""
    decide = runner.invoke(app, ["decide", "--help"], env={"COLUMNS": "120"}).stdout
    assert "Usage: sayso decide [OPTIONS] CONFIG REQUEST_ID ACTION [VALUE...]" in decide
    for shown in ("--reason TEXT", "--args JSON", "--scope SCOPE", "--answers JSON", "--principal NAME"):
        assert shown in decide
    assert "--thread THREAD_ID" in runner.invoke(app, ["run", "--help"], env={"COLUMNS": "120"}).stdout


def copy_example(tmp_path: Path, *, old: str = "", new: str = "") -> Path:
    for name in ("script.yaml", "files_tools.py", "files_subjects.py"):
        shutil.copy(EXAMPLE.parent / name, tmp_path / name)
    config = tmp_path / "sayso.yaml"
    config.write_text(EXAMPLE.read_text().replace(old, new))
    return config


def test_check_passes_the_example() -> None:
    """`sayso check` on the example exits 0 and says it is ready."""
    done = runner.invoke(app, ["check", str(EXAMPLE)])
    assert done.exit_code == 0, done.output
    assert f"{EXAMPLE} is ready (agents: files)" in done.stdout


def test_check_names_file_line_and_fix_and_exits_2(tmp_path: Path) -> None:
    """A typo in an approval rule makes `sayso check` exit 2 with the file, the line and the fix."""
    config = copy_example(tmp_path, old="{name: delete_file,", new="{name: delete_fil,")
    line = next(n for n, text in enumerate(config.read_text().splitlines(), 1) if "name: delete_fil," in text)
    done = runner.invoke(app, ["check", str(config)])
    assert done.exit_code == 2
    assert f"{config}:{line}: error: agents.files.interrupt.tools[0]:" in done.stderr
    assert "Fix: did you mean 'delete_file'?" in done.stderr
    as_json = runner.invoke(app, ["check", str(config), "--json"])
    assert as_json.exit_code == 2
    out = json.loads(as_json.stdout)
    assert out["ok"] is False
    [problem] = out["problems"]
    assert (problem["severity"], problem["file"], problem["line"]) == ("error", str(config), line)


def test_check_prints_warnings_and_still_exits_0(tmp_path: Path) -> None:
    """Warnings and notes are printed, and the config passes."""
    config = copy_example(tmp_path, old="    interrupt:", new="    client_tools: [ask_user]\n    interrupt:")
    done = runner.invoke(app, ["check", str(config)])
    assert done.exit_code == 0, done.output
    assert "note: agents.files.client_tools[0]: 'ask_user' is sayso's built-in question tool" in done.stdout
    assert "is ready (agents: files); 1 note(s)" in done.stdout


def test_check_reports_a_schema_error_with_exit_2(tmp_path: Path) -> None:
    """A config that does not even parse into shape fails `sayso check` with its line."""
    config = tmp_path / "sayso.yaml"
    config.write_text("agents:\n  a:\n    modle: x\n")
    done = runner.invoke(app, ["check", str(config)])
    assert done.exit_code == 2
    assert f"{config}:3: error: agents.a.modle: Extra inputs are not permitted" in done.stderr


def test_a_failed_run_exits_non_zero_with_its_cause(tmp_path: Path) -> None:
    """`sayso run` exits 1 when the run failed, and prints the real cause."""
    (tmp_path / "s.yaml").write_text('rules: [{user: ".", call: boom, args: {}}]')
    # A tool's own error is read by the model; sayso's store failing under it ends the run.
    boom = "from sayso import StoreError\n\ndef boom() -> str:\n    raise StoreError('the disk is full')\n"
    (tmp_path / "boom_tools.py").write_text(boom)
    config = tmp_path / "sayso.yaml"
    config.write_text("models: {m: {scripted: s.yaml}}\nagents: {a: {model: m, tools: ['boom_tools:boom']}}\n")
    done = runner.invoke(app, ["run", str(config), "go"])
    assert done.exit_code == 1
    assert "failed: StoreError: the disk is full" in done.stdout
    assert "ExceptionGroup" not in done.output
    as_json = runner.invoke(app, ["run", str(config), "go", "--json"])
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["error"] == "StoreError: the disk is full"


def test_a_paused_run_shows_the_exact_commands_that_answer_it(tmp_path: Path) -> None:
    """The panel of a paused run prints `sayso decide CONFIG REQUEST_ID ...` lines that work when pasted."""
    paused = runner.invoke(app, ["run", str(EXAMPLE), "delete notes"], env={"COLUMNS": "80"})
    assert paused.exit_code == 0, paused.output
    commands = [line.strip() for line in paused.stdout.splitlines() if " decide " in line]
    request_id = re.search(r"request (req_\S+)", paused.stdout)
    assert request_id is not None
    # Under the test runner no `sayso` script runs, so the commands name this interpreter.
    base = f"{shlex.join([sys.executable, '-m', 'sayso'])} decide {EXAMPLE} {request_id[1]}"
    assert commands == [
        f"{base} approve",
        f"{base} reject --reason 'your reason'",
        f"""{base} approve --args '{{"name": "notes.txt"}}'""",
        f"{base} approve --scope always",
    ]
    edited = shlex.split(commands[2].replace("notes.txt", "todo.md"))
    done = runner.invoke(app, edited[3:])
    assert done.exit_code == 0, done.output
    assert "Deleted todo.md." in done.stdout
    assert not (tmp_path / "sandbox" / "todo.md").exists() and (tmp_path / "sandbox" / "notes.txt").exists()


def test_a_question_shows_an_answer_command(tmp_path: Path) -> None:
    """A question's panel offers `answer` with its first choice, and `skip`."""
    paused = runner.invoke(app, ["run", str(EXAMPLE), "delete report"], env={"COLUMNS": "80"})
    commands = [line.strip() for line in paused.stdout.splitlines() if " decide " in line]
    assert [c.split(" ", 6)[-1] for c in commands] == ["answer report-2025.txt", "skip"]
    inbox = runner.invoke(app, ["inbox", str(EXAMPLE)], env={"COLUMNS": "80"})
    assert commands[0] in inbox.stdout
