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
from typing import Any

import httpx2
import mcp_types
import pexpect
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from sayso import Config, Sayso
from sayso.protocols import protocol_apps, protocol_routers
from sayso.server import create_app

from ..conftest import LiveServer
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


# MCP


class Person:
    """An MCP client's elicitation callback: records each form it is asked and answers from a list."""

    def __init__(self, *answers: dict[str, Any]) -> None:
        self.answers = list(answers)
        self.asked: list[mcp_types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        self.asked.append(params)
        return mcp_types.ElicitResult(action="accept", content=self.answers.pop(0))


async def mcp_call(tmp_path: Path, person: Person) -> str:
    """The `sections` workflow called as a tool at `/mcp` by the official client, its forms answered by `person`."""
    sayso = Sayso(Config.model_validate(sections_config(tmp_path)))
    served = LiveServer.in_thread(
        create_app(sayso, routers=protocol_routers(sayso), apps=protocol_apps(sayso), expire_every_seconds=None)
    )
    try:
        async with httpx2.AsyncClient() as http:
            transport = streamable_http_client(f"{served.base_url}/mcp", http_client=http)
            async with Client(transport, elicitation_callback=person) as mcp:
                result = await mcp.call_tool("sections", {"message": "go"})
    finally:
        served.stop()
    assert not result.is_error, result
    return "".join(part.text for part in result.content if isinstance(part, mcp_types.TextContent))


PRIMITIVE = {"string", "number", "integer", "boolean"}


async def test_mcp_asks_a_flat_form_of_primitive_fields_and_an_optional_section_may_be_left_out(
    tmp_path: Path,
) -> None:
    """MCP forms are flat objects of primitive fields: each section's fields are named `where.city`, `extra.flag`
    (no `$ref` to a definition the client never gets), those of the optional section are optional, and an answer
    without them leaves the section out."""
    person = Person({"name": "x", "where.city": "Lisbon"})
    assert (await mcp_call(tmp_path, person)).startswith("x in Lisbon, no extra")
    [form] = person.asked
    assert isinstance(form, mcp_types.ElicitRequestFormParams)
    schema = form.requested_schema
    assert list(schema["properties"]) == ["name", "where.city", "extra.flag", "extra.note"]
    assert {field["type"] for field in schema["properties"].values()} <= PRIMITIVE
    assert "$ref" not in json.dumps(schema) and "anyOf" not in json.dumps(schema)
    assert sorted(schema["required"]) == ["name", "where.city"]


async def test_mcp_rebuilds_a_filled_section_and_checks_it_whole_before_recording(tmp_path: Path) -> None:
    """A section filled in part is refused naming its missing field, asked again, and the whole answer recorded."""
    person = Person(
        {"name": "x", "where.city": "Lisbon", "extra.flag": True},
        {"name": "x", "where.city": "Lisbon", "extra.flag": True, "extra.note": "hi"},
    )
    assert (await mcp_call(tmp_path, person)).startswith("x in Lisbon, extra True hi")
    first, again = person.asked
    assert again.message.startswith("Not accepted: ") and "note" in again.message
