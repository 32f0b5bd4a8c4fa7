"""The `sayso` command with odd input and odd stores: no traceback, the exit code of the table, words that fit."""

from __future__ import annotations

from pathlib import Path

import pexpect
from typer.testing import CliRunner

from sayso.cli import app

from ..conftest import EXAMPLE
from .test_cli import spawn_chat

runner = CliRunner()


def test_agent_output_with_brackets_is_printed_as_written(tmp_path: Path) -> None:
    """An answer holding `[/b]` or `[red]` is shown word for word, not read as styling (nor a crash on a stray tag)."""
    sandbox = tmp_path / "sandbox"
    runner.invoke(app, ["run", str(EXAMPLE), "list", "--json"])  # creates the sandbox with its sample files
    (sandbox / "odd.txt").write_text("price [/b] list [red]x")
    shown = runner.invoke(app, ["run", str(EXAMPLE), "read odd.txt"])
    assert shown.exit_code == 0, shown.output
    assert "price [/b] list [red]x" in shown.stdout


def test_chat_shows_choices_and_arguments_with_brackets_as_written(tmp_path: Path) -> None:
    """At the chat prompt, choices, the arguments to edit and the answer that hold `[b]` are shown as written."""
    runner.invoke(app, ["run", str(EXAMPLE), "list", "--json"])  # creates the sandbox with its sample files
    for name in ("report-[red].txt", "report-[b].txt"):
        (tmp_path / "sandbox" / name).write_text("x")
    chat = spawn_chat()
    chat.expect("you>")
    chat.sendline("delete report")
    chat.expect(r"\) report-\[b\]\.txt")
    chat.expect(r"\) report-\[red\]\.txt")
    chat.expect("answer")
    chat.sendline("report-[b].txt")
    chat.expect(r"\[a\]pprove")
    chat.sendline("e")
    chat.expect(r'current arguments: \{"name": "report-\[b\]\.txt"\}')
    chat.expect("new arguments")
    chat.sendline('{"name": "report-[b].txt"}')
    chat.expect(r"remember\? \[1\]>")
    chat.sendline("")
    chat.expect(r"Deleted report-\[b\]\.txt\.")
    chat.sendeof()
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 0
