"""`sayso chat` at a workflow's form: the schema's defaults, and an input answered elsewhere while the chat asks.

The web UI fills each field in with its schema's `default`; the chat said only `empty leaves it out`, so a node
with a JSON Schema dict got `{"name": "a"}` from the terminal where the browser sent the defaults too. An input
that takes no answer any more (answered from another terminal, or expired) was refused with "the request is still
open; try again", and asked again for ever.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect

from .one_node import one_node_workflow


def chatting(config: Path, *, columns: int = 200) -> pexpect.spawn[str]:
    """`sayso chat CONFIG` in a terminal `columns` wide, at its first prompt."""
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb", "NO_COLOR": "1"}
    chat = pexpect.spawn(sys.executable, ["-m", "sayso", "chat", str(config)], env=env, encoding="utf-8", timeout=30)
    chat.expect("you>")
    return chat


NODES = """
import json

from sayso.workflows import RequestInput

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer", "default": 3},
        "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
        "note": {"type": "string"},
    },
    "required": ["name"],
}


def ask():
    got = yield RequestInput("Your order", response_schema=SCHEMA)
    return json.dumps(got, sort_keys=True)
"""


def test_chat_shows_each_default_and_an_empty_answer_takes_it(tmp_path: Path) -> None:
    chat = chatting(one_node_workflow(tmp_path, "order", NODES), columns=100)
    chat.sendline("order")
    chat.expect(r"name \(text, required\)> ")
    chat.sendline("tea")
    chat.expect(r"count \(whole number, default 3\)> ")
    chat.sendline("")
    chat.expect(r"color \(one of red / green, default red\)> ")
    chat.sendline("2")
    chat.expect(r"note \(text\)> ")
    chat.sendline("")
    chat.expect(r"\{.*\}")
    assert json.loads(chat.after.replace("\\", "")) == {"name": "tea", "count": 3, "color": "green"}
    chat.expect("you>")
    chat.sendeof()
    chat.expect(pexpect.EOF)


TWO_NODES = """
from sayso.workflows import RequestInput


def ask():
    first = yield RequestInput("First number?", response_schema=int)
    second = yield RequestInput("Second number?", response_schema=int)
    return f"sum {first + second}"
"""


def test_an_input_answered_elsewhere_while_the_chat_asks_is_not_asked_for_ever(tmp_path: Path) -> None:
    """The chat's answer is refused as already decided; it says so and goes on to what the run asks next."""
    config = one_node_workflow(tmp_path, "sum", TWO_NODES)
    chat = chatting(config)
    chat.sendline("add")
    chat.expect(r"request (req_\S+)")
    request_id = chat.match.group(1)
    chat.expect(r"answer \(whole number, required\)> ")
    elsewhere = subprocess.run(
        [sys.executable, "-m", "sayso", "decide", str(config), request_id, "answer", "1"],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    assert elsewhere.returncode == 0, elsewhere.stderr
    chat.sendline("2")
    chat.expect("not accepted: ")
    chat.expect("already decided")
    chat.expect("Second number?")
    chat.expect(r"answer \(whole number, required\)> ")
    chat.sendline("5")
    chat.expect("sum 6")
    chat.expect("you>")
    chat.sendeof()
    chat.expect(pexpect.EOF)


OPTIONAL_NODES = """
import json

from pydantic import BaseModel, Field

from sayso.workflows import RequestInput


class Visit(BaseModel):
    city: str = Field(description="The city to spend the day in.")
    age: int | None = Field(default=None, ge=0, description="Your age, to suit the plan.")
    hobby: str | None = Field(default=None, description="Something you enjoy doing.")


def ask():
    got = yield RequestInput("Where to?", response_schema=Visit)
    return json.dumps(got.model_dump(), sort_keys=True)
"""


def test_an_optional_fields_description_is_shown_as_a_required_ones_is(tmp_path: Path) -> None:
    """`age: int | None = Field(description=...)` is asked with its description, not as a bare `age (whole number)`."""
    chat = chatting(one_node_workflow(tmp_path, "visit", OPTIONAL_NODES))
    chat.sendline("visit")
    chat.expect("The city to spend the day in.")
    chat.expect(r"city \(text, required\)> ")
    chat.sendline("Lyon")
    chat.expect(r"(.*)age \(whole number\)> ")
    assert "Your age, to suit the plan." in chat.match.group(1)
    chat.sendline("")
    chat.expect(r"(.*)hobby \(text\)> ")
    assert "Something you enjoy doing." in chat.match.group(1)
    chat.sendline("")
    chat.expect("you>")
    chat.sendeof()
    chat.expect(pexpect.EOF)
