"""`sayso chat` when what is typed is refused, or what is open is not the typist's to decide: the chat says why and
asks again, never ending on it; a routed request shows where its vote stands and who it waits for."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from sayso.cli import app

from ..conftest import EXAMPLE, ROOT

runner = CliRunner()
REFUNDS = ROOT / "examples" / "refunds" / "sayso.yaml"
TOKENS = {"ALICE_TOKEN": "a", "BOB_TOKEN": "b", "CAROL_TOKEN": "c", "DANA_TOKEN": "d"}


def chat(config: Path, typed: str, *extra: str) -> tuple[int, str]:
    """`sayso chat` with `typed` piped in as what the person types; its exit code and everything it printed."""
    env = {**os.environ, **TOKENS, "COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "sayso", "chat", str(config), *extra],
        input=typed,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def small_limits(tmp_path: Path) -> Path:
    """The files example with limits of 200 on a message, edited arguments and an answer."""
    folder = tmp_path / "files"
    shutil.copytree(EXAMPLE.parent, folder, ignore=shutil.ignore_patterns("*.db", "__pycache__", "sandbox"))
    config = folder / "sayso.yaml"
    config.write_text(
        config.read_text() + "limits: {message_chars: 200, argument_bytes: 200, answer_bytes: 200}\n", encoding="utf-8"
    )
    return config


def test_a_message_too_long_or_holding_a_nul_is_refused_and_the_chat_goes_on(tmp_path: Path) -> None:
    """A message over `message_chars`, or one holding a NUL character, ended the chat with exit 2; the chat now says
    why (the limit it is over) and takes the next message."""
    config = small_limits(tmp_path)
    code, out = chat(config, f"list {'x' * 250}\nlist\x00x\nlist\nexit\n")
    assert code == 0, out
    assert "not sent: the message has 255 characters; the limit is 200 (limits.message_chars)" in out
    assert "not sent:" in out.split("the limit is 200", 1)[1] and "NUL" in out
    assert "Files in the sandbox" in out and "come back with:" in out


def test_an_answer_over_its_limit_is_asked_again(tmp_path: Path) -> None:
    """A reject's reason, edited arguments or a question's own words over their limit ended the chat (exit 2); each
    is now refused as a schema-invalid edit is, naming the limit, and asked again: the request stays open."""
    config = small_limits(tmp_path)
    edit = json.dumps({"name": "n" * 250})
    typed = (
        f"delete report\n3\n{'o' * 250}\n1\n"  # a question's own words over answer_bytes, then a choice
        f"e\n{edit}\n\n"  # edited arguments over argument_bytes
        f"r\n{'r' * 250}\n"  # a reason over answer_bytes
        "r\nkeep it\nexit\n"
    )
    code, out = chat(config, typed)
    assert code == 0, out
    refused = re.findall(r"not accepted: (.*?the limit is 200 \(limits\.\w+\))", out)
    assert len(refused) == 3, out
    assert "the answer takes" in refused[0] and "answer_bytes" in refused[0]
    assert "the edited arguments take" in refused[1] and "argument_bytes" in refused[1]
    assert "answer_bytes" in refused[2]
    assert "Declined: keep it" in out
    assert (tmp_path / "sandbox" / "report-2025.txt").exists()


def refunds(tmp_path: Path) -> Path:
    """The refunds example (two of finance approve; alice, who asks, may not) over this test's store."""
    folder = tmp_path / "refunds"
    shutil.copytree(REFUNDS.parent, folder, ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    return folder / "sayso.yaml"


def test_the_starter_of_a_routed_request_is_told_who_decides_and_not_offered_to(tmp_path: Path) -> None:
    """alice's own refund waits for finance's approval without hers: the chat offered her approve and ended (exit 4)
    when she chose it. It now says who it waits for, offers no decision, and the way back names her."""
    config = refunds(tmp_path)
    code, out = chat(config, "refund 300 to zed\nexit\n", "--principal", "alice")
    assert code == 0, out
    assert "[a]pprove" not in out
    assert "waiting for finance: you may not decide this request" in out
    assert "may not decide its own calls" in out
    back = re.search(r"come back with: (.*)", out)
    assert back is not None and back[1].endswith("--principal alice"), out


def test_a_vote_in_chat_shows_the_count_and_is_not_asked_again(tmp_path: Path) -> None:
    """bob's approval of alice's refund was recorded, but the chat redrew "0 of 2" and asked bob again; it now shows
    "1 of 2, waiting for finance", says bob voted, and asks nothing more of him. carol's vote then pays it."""
    config = refunds(tmp_path)
    env = {**TOKENS, "SAYSO_STORE": os.environ["SAYSO_STORE"]}
    started = runner.invoke(app, ["run", str(config), "refund 121 to kim", "--principal", "alice", "--json"], env=env)
    thread = json.loads(started.stdout)["thread_id"]
    code, out = chat(config, "a\nexit\n", "--thread", thread, "--principal", "bob")
    assert code == 0, out
    assert out.count("[a]pprove") == 1, out
    after = out.split("[a]pprove", 1)[1]
    assert "approvals: 1 of 2, waiting for finance" in after
    assert "you voted; waiting for finance" in after
    assert f"--thread {thread} --principal bob" in after
    listed = runner.invoke(app, ["inbox", str(config), "--principal", "carol"], env=env)
    assert "approvals: 1 of 2, waiting for finance" in listed.stdout
    code, out = chat(config, "a\nexit\n", "--thread", thread, "--principal", "carol")
    assert code == 0 and "Refunded 121 to kim." in out, out
