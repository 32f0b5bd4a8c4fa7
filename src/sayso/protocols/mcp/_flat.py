"""A workflow input's schema as MCP's flat form of primitive fields, and the form's answer rebuilt into its shape.

MCP elicitation asks with a flat object of primitive fields (text, numbers, yes/no, a pick of an
enum, several picks of one), with no `$ref` nor `$defs`. A nested model becomes its fields, named
by their path (`address.city`); those of an optional section (`extra: Extra | None = None`) are
optional on the form, and an answer that gives none of them leaves the section out. A field no
primitive expresses (a list of text, a list of models, any JSON) is asked as text written as JSON.

The rebuilt answer is not checked here: the runtime checks it whole against the input's own schema
before anything is recorded, and a refusal is asked again with its problem.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic.json_schema import JsonSchemaValue

_PRIMITIVE = ("string", "number", "integer", "boolean")
_KEPT = ("title", "description", "default")
"""What a field's wrapper (`X | None`, a `$ref`) says of it, kept on the field it resolves to."""


def flat_form(shape: JsonSchemaValue, root: JsonSchemaValue) -> JsonSchemaValue:
    """The flat form for the object `shape` (its `$ref`s resolved in `root`)."""
    properties: JsonSchemaValue = {}
    required: list[str] = []
    _flatten(shape, root, (), True, properties, required)
    return {"type": "object", "properties": properties, "required": required}


def rebuilt(shape: JsonSchemaValue, root: JsonSchemaValue, content: Mapping[str, Any]) -> JsonSchemaValue:
    """The nested answer that `content`, an answer to `flat_form(shape, root)`, gives.

    Keys the form did not ask for are kept as they came, for the runtime's check to judge.
    """
    value, _ = _rebuild(shape, root, (), content)
    asked = set(flat_form(shape, root)["properties"])
    value.update({key: given for key, given in content.items() if key not in asked})
    return value


def _resolved(spec: JsonSchemaValue, root: JsonSchemaValue) -> tuple[JsonSchemaValue, bool]:
    """A field's own schema (its `$ref` followed, `X | None` reduced to `X`), and whether it takes `null`."""
    kept = {key: spec[key] for key in _KEPT if key in spec}
    nullable = False
    for _ in range(20):
        ref = spec.get("$ref")
        options = spec.get("anyOf") or spec.get("oneOf")
        if isinstance(ref, str) and ref.startswith("#/"):
            node: Any = root
            for part in ref[2:].split("/"):
                node = node.get(part, {}) if isinstance(node, dict) else {}
            spec = node if isinstance(node, dict) else {}
        elif isinstance(options, list):
            real = [o for o in options if isinstance(o, dict) and o.get("type") != "null"]
            if len(real) != 1:
                break
            nullable = nullable or len(real) < len(options)
            spec = real[0]
        else:
            break
    kinds = spec.get("type")
    if isinstance(kinds, list) and len([k for k in kinds if k != "null"]) == 1:
        nullable = nullable or "null" in kinds
        spec = {**spec, "type": next(k for k in kinds if k != "null")}
    return {**spec, **kept}, nullable


def _section(schema: JsonSchemaValue) -> bool:
    return isinstance(schema.get("properties"), dict) and schema.get("type", "object") == "object"


def _primitive(schema: JsonSchemaValue, root: JsonSchemaValue) -> bool:
    """Whether MCP's form has a field of this kind: text, a number, yes/no, a pick of an enum or several picks."""
    if "enum" in schema:
        return all(isinstance(choice, str) for choice in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        items, _ = _resolved(schema.get("items") or {}, root)
        return "enum" in items and all(isinstance(choice, str) for choice in items["enum"])
    return kind in _PRIMITIVE and not any(key in schema for key in ("anyOf", "oneOf", "allOf", "not"))


def _flatten(
    shape: JsonSchemaValue,
    root: JsonSchemaValue,
    path: tuple[str, ...],
    asked: bool,
    properties: JsonSchemaValue,
    required: list[str],
    heading: str = "",
) -> None:
    """Add `shape`'s fields to the form, their titles under `heading` (`Address: City`).

    `asked`: whether the section is there whatever the answer (no optional section holds it), so its
    required fields are required and its defaults shown; an optional section's prefilled default
    would fill in the section the person never opened.
    """
    for name, spec in shape["properties"].items():
        field, nullable = _resolved(spec, root)
        title = str(field.get("title") or name)
        must = asked and name in shape.get("required", []) and not nullable
        if _section(field):
            inner = f"{heading} / {title}" if heading else title
            _flatten(field, root, (*path, name), must, properties, required, inner)
            continue
        key = ".".join((*path, name))
        if _primitive(field, root):
            shown = {k: v for k, v in field.items() if k != "default" or asked}
            if "enum" in shown and "type" not in shown:
                shown["type"] = "string"
            if "items" in shown:
                shown["items"] = _resolved(shown["items"], root)[0]
        else:
            shown = {"type": "string", "title": f"{title} (JSON)", "description": _json_hint(field)}
        if heading:
            shown["title"] = f"{heading}: {shown.get('title') or title}"
        properties[key] = shown
        if must:
            required.append(key)


def _json_hint(field: JsonSchemaValue) -> str:
    """What a field asked as JSON text takes, in words."""
    said = str(field.get("description") or "").rstrip(".")
    kind = field.get("type")
    shape = {"array": 'a list, such as ["a", "b"]', "object": 'an object, such as {"key": "value"}'}
    return f"{said + '. ' if said else ''}Written as JSON: {shape.get(str(kind), 'any JSON value')}."


def _rebuild(
    shape: JsonSchemaValue, root: JsonSchemaValue, path: tuple[str, ...], content: Mapping[str, Any]
) -> tuple[JsonSchemaValue, bool]:
    """`shape`'s value from the flat `content`, and whether the answer gave any of its fields."""
    value: JsonSchemaValue = {}
    given = False
    for name, spec in shape["properties"].items():
        field, nullable = _resolved(spec, root)
        needed = name in shape.get("required", [])
        if _section(field):
            inner, filled = _rebuild(field, root, (*path, name), content)
            given = given or filled
            if filled or (needed and not nullable):
                value[name] = inner
            elif needed:
                value[name] = None
            continue
        key = ".".join((*path, name))
        if key in content and content[key] is not None:
            given = True
            value[name] = content[key] if _primitive(field, root) else _json(content[key])
        elif needed and nullable:
            value[name] = None
    return value, given


def _json(answer: Any) -> Any:
    """A field asked as JSON text, read; text that is not JSON stays text, for the runtime's check to name."""
    if not isinstance(answer, str):
        return answer
    try:
        return json.loads(answer)
    except ValueError:
        return answer
