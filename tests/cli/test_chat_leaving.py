"""Leaving `sayso chat`: one Ctrl-C at a prompt leaves, naming the request that stays open and the command that comes
back to it; Ctrl-D at `you>` names the thread; a question is printed once."""

from __future__ import annotations

import ctypes
import os
import re
import shlex
import signal
import sys
from pathlib import Path

import pexpect

from ..conftest import EXAMPLE


def spawn(*args: str) -> pexpect.spawn:
    env = {**os.environ, "COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"}
    return pexpect.spawn(sys.executable, list(args), env=env, encoding="utf-8", timeout=30, dimensions=(40, 200))


def test_one_ctrl_c_at_an_approval_leaves_and_says_how_to_come_back(tmp_path: Path) -> None:
    """Ctrl-C once at the approval prompt: the chat ends, naming the open request and a `--thread` command; that
    command, run, asks the same approval, and approving it finishes the run."""
    chat = spawn("-m", "sayso", "chat", str(EXAMPLE))
    chat.expect("you>")
    chat.sendline("delete notes")
    chat.expect(r"request (req_\S+)")
    request_id = chat.match[1]
    chat.expect(r"\[a\]pprove")
    chat.sendintr()
    chat.expect(rf"request {request_id} stays open: files wants to run delete_file")
    chat.expect(r"thread (thr_\S+); come back with: (.+ chat \S+ --thread thr_\S+)\r\n")
    command = chat.match[2]
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 0 and "Traceback" not in (chat.before or "")
    assert re.match(rf"{re.escape(shlex.join([sys.executable, '-m', 'sayso']))} chat ", command)
    again = spawn(*shlex.split(command)[1:])
    again.expect("files wants to run delete_file")
    again.expect(r"\[a\]pprove")
    again.sendline("a")
    again.expect(r"remember\? \[1\]>")
    again.sendline("")
    again.expect("Deleted notes.txt.")
    again.expect("you>")
    again.sendline("exit")
    again.expect(pexpect.EOF)
    assert not (tmp_path / "sandbox" / "notes.txt").exists()


def test_ctrl_d_at_the_prompt_prints_the_thread() -> None:
    """Ctrl-D at `you>` after a reply ends the chat on its own line, with the thread id and the way back."""
    chat = spawn("-m", "sayso", "chat", str(EXAMPLE))
    chat.expect("you>")
    chat.sendline("list")
    chat.expect("Files in the sandbox")
    chat.expect(r"thread (thr_\S+) · run")
    thread_id = chat.match[1]
    chat.expect("you>")
    chat.sendeof()
    chat.expect(rf"\r\nthread {thread_id}; come back with: .* chat \S+ --thread {thread_id}")
    chat.expect(pexpect.EOF)


def test_a_question_is_printed_once() -> None:
    """The chat asks a question's words and choices once, not once in a panel and again at the prompt."""
    chat = spawn("-m", "sayso", "chat", str(EXAMPLE))
    chat.expect("you>")
    chat.sendline("delete report")
    chat.expect(r"answer \(a number, or your own words\)> ")
    shown = chat.before or ""
    assert shown.count("Several files match. Which one should I delete?") == 1, shown
    assert shown.count("report-2025.txt") == 1, shown
    chat.sendintr()
    chat.expect("stays open: files asks")
    chat.expect(pexpect.EOF)


def test_a_ctrl_c_that_another_thread_takes_still_leaves_at_once() -> None:
    """The kernel may hand a process's SIGINT to any of its threads, and a chat has several (the store's writer,
    a worker); the prompt, blocked reading the terminal, must still notice it instead of waiting for Enter."""
    chat = spawn("-m", "sayso", "chat", str(EXAMPLE))
    chat.expect("you>")
    chat.sendline("delete notes")
    chat.expect(r"\[a\]pprove.*\? ")
    others = [int(tid) for tid in os.listdir(f"/proc/{chat.pid}/task") if int(tid) != chat.pid]
    assert others, "the chat runs no thread besides its main one"
    assert ctypes.CDLL(None, use_errno=True).tgkill(chat.pid, others[0], signal.SIGINT) == 0
    chat.expect("stays open: files wants to run delete_file", timeout=5)
    chat.expect(pexpect.EOF)
