"""The `sayso` command: one-shot commands through typer's runner, and `sayso chat` in a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pexpect
from typer.testing import CliRunner

from sayso.cli import app

from ..conftest import EXAMPLE

runner = CliRunner()


def run_json(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def test_run_prints_a_completed_result_as_json() -> None:
    """`sayso run --json` prints the completed run with its output and ids."""
    out = run_json("run", str(EXAMPLE), "list")
    assert out["status"] == "completed"
    assert out["output"] == "Files in the sandbox:\nnotes.txt\nreport-2025.txt\nreport-2026.txt\ntodo.md"
    assert str(out["run_id"]).startswith("run_") and str(out["thread_id"]).startswith("thr_")


def test_question_then_approval_decided_from_the_command_line(tmp_path: Path) -> None:
    """A question then an approval, each decided with `sayso decide`, carry the run on; a rejection keeps the file."""
    paused = run_json("run", str(EXAMPLE), "delete report")
    [question] = paused["requests"]
    assert question["kind"] == "question"
    assert question["questions"] == [
        {
            "question": "Several files match. Which one should I delete?",
            "choices": ["report-2025.txt", "report-2026.txt"],
            "multiple": False,
        }
    ]
    asked = run_json("decide", str(EXAMPLE), question["id"], "answer", "report-2026.txt")
    [approval] = asked["requests"]
    assert (approval["kind"], approval["tool_name"], approval["args"]) == (
        "approval",
        "delete_file",
        {"name": "report-2026.txt"},
    )
    assert approval["hint"] == "Deleting a file cannot be undone."
    done = run_json("decide", str(EXAMPLE), approval["id"], "reject", "--reason", "I still need it")
    assert done["output"] == "Declined: I still need it"
    assert (tmp_path / "sandbox" / "report-2026.txt").exists()


def test_edit_arguments_from_the_command_line(tmp_path: Path) -> None:
    """`--args` approves with edited arguments, and arguments that fail the schema are refused (exit 4)."""
    paused = run_json("run", str(EXAMPLE), "delete notes")
    request_id = paused["requests"][0]["id"]
    bad = runner.invoke(app, ["decide", str(EXAMPLE), request_id, "approve", "--args", '{"file": "todo.md"}'])
    assert bad.exit_code == 4
    assert "edited arguments are invalid" in bad.stderr and "'name' is a required property" in bad.stderr
    done = run_json("decide", str(EXAMPLE), request_id, "approve", "--args", '{"name": "todo.md"}')
    assert done["output"] == "Deleted todo.md."
    assert (tmp_path / "sandbox" / "notes.txt").exists()
    assert not (tmp_path / "sandbox" / "todo.md").exists()


def test_errors_name_the_problem_and_set_the_exit_code() -> None:
    """Unknown ids exit 3, bad usage and config errors exit 2, each naming the problem."""
    unknown = runner.invoke(app, ["decide", str(EXAMPLE), "req_missing", "approve"])
    assert unknown.exit_code == 3
    assert "no open or decided request has id 'req_missing'" in unknown.stderr
    bad_action = runner.invoke(app, ["decide", str(EXAMPLE), "req_missing", "maybe"])
    assert bad_action.exit_code == 2
    assert "unknown action 'maybe'" in bad_action.output
    missing = runner.invoke(app, ["run", "/nowhere/sayso.yaml", "hi", "--json"])
    assert missing.exit_code == 2
    assert json.loads(missing.stdout)["error"]["type"] == "ConfigError"


def test_forced_resume_and_inbox() -> None:
    """`sayso inbox` lists the open request; `sayso resume` skips it and completes the run."""
    paused = run_json("run", str(EXAMPLE), "delete notes")
    inbox = run_json("inbox", str(EXAMPLE))
    assert [r["id"] for r in inbox["requests"]] == [paused["requests"][0]["id"]]
    resumed = run_json("resume", str(EXAMPLE), str(paused["run_id"]))
    assert resumed["status"] == "completed"
    assert resumed["output"] == "Skipped: the run was resumed before this request was answered"
    assert run_json("inbox", str(EXAMPLE))["requests"] == []


def test_a_forced_resume_is_audited_as_the_skip_of_who_forced_it() -> None:
    """`sayso resume` skips the open request as its `--principal` (else `local`), through the CLI, as
    `sayso audit list` shows: never as sayso's own."""
    for principal in ("alice", None):
        who = ["--principal", principal] if principal else []
        paused = run_json("run", str(EXAMPLE), "delete notes", *who)
        assert run_json("resume", str(EXAMPLE), str(paused["run_id"]), *who)["status"] == "completed"
    skips = [
        r["body"] for r in run_json("audit", "list", str(EXAMPLE))["records"] if r["body"].get("decision") == "skip"
    ]
    assert [(s["by"], s["principal"], s.get("via")) for s in skips] == [
        ("person", "alice", "cli"),
        ("person", "local", "cli"),
    ]
    table = runner.invoke(app, ["audit", "list", str(EXAMPLE)], env={"COLUMNS": "200"})
    assert "│ skip     │ person │ alice     │ CLI │" in table.stdout
    # When each happened, as the JSON's `at` says it (a record of the minute this test ran).
    assert re.search(r"│ CLI │ \d{4}-\d\d-\d\d \d\d:\d\d:\d\d │", table.stdout)


def test_an_admin_reviewer_finds_every_persons_requests_in_the_inbox_and_decides_them(tmp_path: Path) -> None:
    """A principal approving for `*` (the reviewer of docs/guides/yaml.md) may decide every person's request, so
    `sayso inbox --principal` lists them all; someone approving for nothing finds only their own."""
    folder = tmp_path / "files"
    shutil.copytree(EXAMPLE.parent, folder, ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    config = folder / "sayso.yaml"
    config.write_text(
        config.read_text() + "principals:\n"
        "  - {name: alice, token: a}\n  - {name: bob, token: b}\n  - {name: carol, token: c}\n"
        "  - {name: rev, token: r, approver_for: ['*']}\n"
    )
    asked = {
        who: run_json("run", str(config), f"delete {name}", "--principal", who)
        for who, name in [
            ("alice", "notes"),
            ("bob", "todo"),
        ]
    }
    ids = {who: run["requests"][0]["id"] for who, run in asked.items()}

    def inbox(who: str) -> list[str]:
        return [r["id"] for r in run_json("inbox", str(config), "--principal", who)["requests"]]

    assert inbox("rev") == [ids["alice"], ids["bob"]]
    assert (inbox("alice"), inbox("carol")) == ([ids["alice"]], [])
    table = runner.invoke(app, ["inbox", str(config), "--principal", "rev"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "No open requests" not in table.stdout and ids["bob"] in table.stdout
    done = run_json("decide", str(config), ids["alice"], "approve", "--principal", "rev")
    assert done["output"] == "Deleted notes.txt."
    assert inbox("rev") == [ids["bob"]]


def spawn_chat(*extra: str) -> pexpect.spawn:
    env = {**os.environ, "COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"}
    return pexpect.spawn(
        sys.executable,
        ["-m", "sayso", "chat", str(EXAMPLE), *extra],
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 100),
    )


def test_chat_answers_a_question_and_an_approval_at_the_prompt(tmp_path: Path) -> None:
    """`sayso chat` asks each request at the prompt, re-asks after a refused edit, and carries the runs to the end."""
    chat = spawn_chat()
    chat.expect("a scripted demo model, not an LLM")
    chat.expect("you>")
    chat.sendline("delete report")
    chat.expect("Several files match. Which one should I delete?")
    chat.expect(r"1\) report-2025.txt")
    chat.expect(r"3\) Other")
    chat.expect("answer")
    chat.sendline("1")
    chat.expect("files wants to run delete_file")
    chat.expect("report-2025.txt")
    chat.expect(r"\[a\]pprove")
    chat.sendline("e")
    chat.expect("new arguments")
    chat.sendline('{"nme": "x"}')
    chat.expect(r"2\) allow for this chat")
    chat.expect(r"remember\? \[1\]>")
    chat.sendline("")
    chat.expect("not accepted")
    chat.expect(r"\[a\]pprove")
    chat.sendline("e")
    chat.expect("new arguments")
    chat.sendline('{"name": "report-2026.txt"}')
    chat.expect(r"remember\? \[1\]>")
    chat.sendline("")
    chat.expect("Deleted report-2026.txt.")
    chat.expect("you>")
    chat.sendline("delete notes")
    chat.expect(r"\[a\]pprove")
    chat.sendline("r")
    chat.expect("reason")
    chat.sendline("keep my notes")
    chat.expect("Declined: keep my notes")
    chat.expect("you>")
    chat.sendline("exit")
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 0
    sandbox = tmp_path / "sandbox"
    assert sorted(p.name for p in sandbox.iterdir()) == ["notes.txt", "report-2025.txt", "todo.md"]


def test_chat_picks_up_a_pause_left_by_another_process() -> None:
    """`sayso chat --thread` shows the pause another process left, and a new message moves on from it."""
    paused = run_json("run", str(EXAMPLE), "delete notes")
    chat = spawn_chat("--thread", str(paused["thread_id"]))
    chat.expect("files wants to run delete_file")
    chat.expect(r"\[a\]pprove")
    chat.sendline("n")
    chat.expect("you>")
    chat.sendline("list")
    chat.expect("Files in the sandbox:")
    chat.expect("notes.txt")
    chat.expect("you>")
    chat.sendeof()
    chat.expect(pexpect.EOF)


def test_remembered_approvals_and_the_audit_from_the_command_line(tmp_path: Path) -> None:
    """A thread grant covers the next call until revoked; `audit verify` says intact, then names a tampered record."""
    paused = run_json("run", str(EXAMPLE), "delete notes")
    thread = str(paused["thread_id"])
    request = paused["requests"][0]
    assert request["scopes"] == ["once", "thread", "always"]
    assert request["subject"] == {"key": "folder:.", "label": "the sandbox's top folder"}
    run_json("decide", str(EXAMPLE), request["id"], "approve", "--scope", "thread")
    covered = run_json("run", str(EXAMPLE), "delete todo", "--thread", thread)
    assert (covered["status"], covered["output"]) == ("completed", "Deleted todo.md.")
    [grant] = run_json("grants", "list", str(EXAMPLE))["grants"]
    assert (grant["tool"], grant["scope"], grant["thread_id"]) == ("delete_file", "thread", thread)
    revoked = runner.invoke(app, ["grants", "revoke", str(EXAMPLE), grant["grant_id"]])
    assert revoked.exit_code == 0, revoked.output
    asks_again = run_json("run", str(EXAMPLE), "delete report-2025.txt", "--thread", thread)
    assert asks_again["status"] == "paused"

    intact = runner.invoke(app, ["audit", "verify", str(EXAMPLE)])
    assert intact.exit_code == 0 and "audit log intact" in intact.stdout
    with sqlite3.connect(tmp_path / "sayso.db") as conn:
        conn.execute("UPDATE audit SET body = replace(body, 'notes', 'other') WHERE seq = 1")
    tampered = runner.invoke(app, ["audit", "verify", str(EXAMPLE)])
    assert tampered.exit_code == 1
    assert "record 1 was altered after it was written" in tampered.stderr


def test_expire_closes_runs_that_waited_too_long(tmp_path: Path) -> None:
    """A late decision is refused as expired, and `sayso expire` closes the run without running the call; a decision
    after that is refused in the same words."""
    config = tmp_path / "short.yaml"
    config.write_text(
        EXAMPLE.read_text().replace(
            "tools: [{name: delete_file,", "ttl_seconds: 0.001\n      tools: [{name: delete_file,"
        )
    )
    for name in ("script.yaml", "files_tools.py", "files_subjects.py"):
        shutil.copy(EXAMPLE.parent / name, tmp_path / name)
    paused = run_json("run", str(config), "delete notes")
    assert paused["requests"][0]["expires_at"] is not None
    late = runner.invoke(app, ["decide", str(config), paused["requests"][0]["id"], "approve"])
    assert late.exit_code == 4 and "expired" in late.stderr
    closed = run_json("expire", str(config))
    [run] = closed["runs"]
    assert run["run_id"] == paused["run_id"]
    assert str(run["output"]).startswith("Expired: no decision before")
    assert (tmp_path / "sandbox" / "notes.txt").exists()
    later = runner.invoke(app, ["decide", str(config), paused["requests"][0]["id"], "approve"])
    assert (later.exit_code, later.stderr) == (4, late.stderr)  # still expired once the sweep recorded it
