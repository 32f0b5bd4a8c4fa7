"""Forms at the chat prompt: a JSON schema's fields asked one by one, each checked as it is typed.

An optional section (a nested model that may be left out, `extra: Extra | None = None`) is asked
about first, so an empty answer leaves the whole section out rather than asking its required fields.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic.json_schema import JsonSchemaValue
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from .._core.decisions import schema_problem
from ._prompt import read_line
from ._render import fields_summary, schema_type, text_answer

SKIP = "!skip"
NEW = "!new"


class NewMessage(Exception):
    """The person typed a new message instead of answering; the open requests will be skipped."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(text)


class Skipped(Exception):
    """The person typed `!skip` at a field."""


def fill(console: Console, schema: JsonSchemaValue) -> Any:
    """The value of a whole form: an object's fields one by one, or one answer."""
    root = schema
    shape = schema_type(schema)
    properties = shape.get("properties")
    if not isinstance(properties, dict):
        value = _field(console, "answer", shape, root, required=True, empty_ok=text_answer(shape))
        return "" if value is _LEFT_OUT and text_answer(shape) else None if value is _LEFT_OUT else value
    return _object(console, shape, root, prefix="")


_LEFT_OUT: Any = object()


def _object(console: Console, shape: JsonSchemaValue, root: JsonSchemaValue, *, prefix: str) -> dict[str, Any]:
    required = set(shape.get("required", []))
    value: dict[str, Any] = {}
    for name, spec in shape.get("properties", {}).items():
        # An optional field (`X | None`) or a `$ref` keeps its description beside the schema it is reduced to.
        field = schema_type(spec, root)
        if isinstance(spec, dict) and "description" in spec and "description" not in field:
            field = {**field, "description": spec["description"]}
        if "properties" in field:
            section = _section(console, f"{prefix}{name}", spec, field, root, required=name in required)
            if section is not _LEFT_OUT:
                value[name] = section
            continue
        default = spec.get("default", _LEFT_OUT) if isinstance(spec, dict) else _LEFT_OUT
        answer = _field(console, f"{prefix}{name}", field, root, required=name in required, default=default)
        if answer is not _LEFT_OUT:
            value[name] = answer
    return value


def _section(
    console: Console,
    label: str,
    spec: JsonSchemaValue,
    shape: JsonSchemaValue,
    root: JsonSchemaValue,
    *,
    required: bool,
) -> Any:
    """A nested model's fields, or (`_LEFT_OUT` / `None`) none when it is optional and the person says so.

    Its own required fields are required only once the person chose to fill it in: asking them
    straight away would leave no way to answer `{"name": "x"}` for `extra: Extra | None = None`.
    """
    nullable = _nullable(spec)
    if required and not nullable:
        console.print(Text(label, style="bold"))
        return _object(console, shape, root, prefix=f"{label}.")
    empty = "leaves it out" if not required else "leaves it empty"
    while True:
        raw = read_line(console, f"{escape(label)}: fill it in? (yes/no, empty {empty})> ").strip().lower()
        if raw == SKIP:
            raise Skipped
        if raw == NEW:
            raise NewMessage(read_line(console, "[bold cyan]you>[/bold cyan] ").strip())
        if raw in ("y", "yes"):
            console.print(Text(label, style="bold"))
            return _object(console, shape, root, prefix=f"{label}.")
        if raw in ("", "n", "no"):
            return None if required else _LEFT_OUT
        console.print("please answer yes or no")


def _nullable(spec: JsonSchemaValue) -> bool:
    """Whether a field's schema takes `null` (`X | None`, which pydantic writes as an `anyOf` with null)."""
    kinds = spec.get("type")
    options = spec.get("anyOf") or spec.get("oneOf") or []
    in_options = any(isinstance(option, dict) and option.get("type") == "null" for option in options)
    return in_options or kinds == "null" or (isinstance(kinds, list) and "null" in kinds)


def _field(
    console: Console,
    label: str,
    field: JsonSchemaValue,
    root: JsonSchemaValue,
    *,
    required: bool,
    empty_ok: bool = False,
    default: Any = _LEFT_OUT,
) -> Any:
    """One field's answer, typed as its schema says and checked against it as it is typed (`_LEFT_OUT` when empty).

    A wrong value is said at once and the same field asked again, rather than after the whole form. The schema's
    `default` (other than null) is shown and taken on an empty answer, as the web form is filled in with it, so a
    node reading a JSON Schema dict gets the same answer from either.
    """
    if default is None:
        default = _LEFT_OUT  # `x: int | None = None`: leaving it out says the same
    if field.get("description"):
        console.print(f"[dim]{escape(str(field['description']))}[/dim]")
    if "enum" in field:
        for n, choice in enumerate(field["enum"], 1):
            console.print(Text(f"  {n}) {choice}"))
    what = fields_summary(field)
    if default is not _LEFT_OUT:
        what += f", default {default if isinstance(default, str) else json.dumps(default)}"
    shown = label
    while True:
        value = _typed_field(console, f"{shown} ({escape(what)}{', required' if required else ''})> ", field, root)
        if value is _LEFT_OUT and default is not _LEFT_OUT:
            value = default
        if value is _LEFT_OUT:
            if not required or empty_ok:
                return value
            console.print(f"[red]not accepted:[/red] {escape(str(shown))} is required")
            continue
        problem = schema_problem(value, {**field, **({"$defs": root["$defs"]} if "$defs" in root else {})})
        if problem is None:
            return value
        console.print(f"[red]not accepted:[/red] {escape(problem)}; try again")


def _typed_field(console: Console, prompt: str, field: JsonSchemaValue, root: JsonSchemaValue) -> Any:
    """What the person typed for one field, as the value its schema's type suggests."""
    raw = read_line(console, prompt).strip()
    if raw == SKIP:
        raise Skipped
    if raw == NEW:
        text = read_line(console, "[bold cyan]you>[/bold cyan] ").strip()
        raise NewMessage(text)
    if raw == "":
        return _LEFT_OUT
    if "enum" in field:
        choices = field["enum"]
        return choices[int(raw) - 1] if raw.isdigit() and 1 <= int(raw) <= len(choices) else raw
    kind = field.get("type")
    if kind == "boolean":
        return yes_or_no(raw)
    if kind == "string":
        return raw
    if kind == "array" and schema_type(field.get("items", {}), root).get("type") == "string":
        return [part.strip() for part in raw.split(",") if part.strip()]
    try:
        return json.loads(raw)  # numbers, lists, objects, any JSON
    except json.JSONDecodeError:
        return raw  # the schema check says what is wrong with it


_YES_NO = {"y": True, "yes": True, "true": True, "1": True, "n": False, "no": False, "false": False, "0": False}


def yes_or_no(raw: str) -> bool | str:
    """A yes/no answer typed in words (`yes`, `n`, `true`, ...), as the panel's `answer: yes/no` asks.

    Anything else is returned as typed, for the schema's check to refuse by name.
    """
    return _YES_NO.get(raw.strip().lower(), raw)


def fill_form(console: Console, schema: JsonSchemaValue) -> dict[str, Any]:
    """Ask each field of a flat form in turn; an empty answer leaves an optional field out.

    Values are read as JSON where the field is a number or a boolean, so the runtime's check of the
    whole answer against the schema names any field that is still wrong.
    """
    required = set(schema.get("required", []))
    content: dict[str, Any] = {}
    for name, field in (schema.get("properties") or {}).items():
        label = field.get("title") or name
        choices = field.get("enum")
        hint = f"one of {', '.join(map(str, choices))}" if choices else field.get("type", "text")
        raw = read_line(console, f"{escape(label)} ({hint}{', required' if name in required else ''})> ").strip()
        if not raw and name not in required:
            continue
        if field.get("type") in ("integer", "number", "boolean"):
            try:
                content[name] = json.loads(raw.lower() if field.get("type") == "boolean" else raw)
                continue
            except json.JSONDecodeError:
                pass
        content[name] = raw
    return content
