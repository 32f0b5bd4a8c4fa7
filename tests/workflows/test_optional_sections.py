"""A workflow input with nested models, some of them optional sections (`extra: Extra | None = None`).

Every interface lets the person leave an optional section out, as REST does with `{"name": "x"}`, and
still asks a required one field by field: `sayso chat` asks first whether to fill the section in, and
MCP's flat forms of primitive fields (the spec allows nothing else) carry the section's fields as
`extra.flag`, rebuilt into the nested answer and checked whole before it is recorded.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pexpect
import pytest

from .sections import sections_config

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """The `sections` workflow's config as a file, for `sayso chat`."""
    path = tmp_path / "sections.yaml"
    path.write_text(json.dumps(sections_config(tmp_path)))  # JSON is YAML
    return path


def chat(config: Path) -> pexpect.spawn:
    env = {**os.environ, "COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    env["PYTHONPATH"] += os.pathsep + os.environ.get("PYTHONPATH", "")
    spawned = pexpect.spawn(
        sys.executable,
        ["-m", "sayso", "chat", str(config)],
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
        cwd=str(config.parent),
    )
    spawned.expect("you>")
    spawned.sendline("go")
    spawned.expect(r"name \(text, required\)>")
    spawned.sendline("x")
    spawned.expect(r"where\.city \(text, required\)>")  # a required section is asked straight away
    spawned.sendline("Lisbon")
    return spawned


def test_chat_leaves_an_optional_section_out_with_an_empty_answer(config: Path) -> None:
    """Asked whether to fill in the optional `extra`, an empty answer leaves it out and the workflow carries on."""
    session = chat(config)
    session.expect(r"extra: fill it in\? \(yes/no, empty leaves it out\)>")
    session.sendline("")
    session.expect("x in Lisbon, no extra")
    session.expect("you>")
    session.sendeof()
    session.expect(pexpect.EOF)


def test_chat_fills_an_optional_section_in_field_by_field_when_asked_to(config: Path) -> None:
    """`yes` asks the section's fields, each checked as typed: a required one stays required inside it."""
    session = chat(config)
    session.expect(r"extra: fill it in\? \(yes/no, empty leaves it out\)>")
    session.sendline("perhaps")
    session.expect("please answer yes or no")
    session.expect(r"extra: fill it in\?")
    session.sendline("y")
    session.expect(r"extra\.flag \(yes/no, required\)>")
    session.sendline("yes")
    session.expect(r"extra\.note \(text, required\)>")
    session.sendline("")
    session.expect("not accepted: extra.note is required")
    session.expect(r"extra\.note \(text, required\)>")
    session.sendline("hi")
    session.expect("x in Lisbon, extra True hi")
    session.expect("you>")
    session.sendeof()
    session.expect(pexpect.EOF)
