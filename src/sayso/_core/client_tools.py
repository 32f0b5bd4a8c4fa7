"""What a client may declare as a tool it runs itself: the one check, made by the start verb for every interface.

A run's client tools are stored with it and read back with every read of the run: one that the
store cannot read back (parameters that are no JSON object) would break the run, its thread and
every interface that shows them, long after the client that sent it is gone. So whatever
declares the tools (REST's `client_tools`, AG-UI's `tools`, `Sayso.run(client_tools=...)`) is
checked here before anything is written, and a tool that does not fit refuses the whole message.
REST's body schema says the same sizes and name shape, so its API documents them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from ..exceptions import InvalidInput
from .finite import lone_surrogate, nul_character
from .inputs import schema_problem
from .requests import ClientTool

MAX_CLIENT_TOOLS = 64
"""How many tools one run may declare: more than any model is offered usefully, few enough to check each."""

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$"
"""A client tool's name: what every model provider takes as a tool name."""

DESCRIPTION_CHARS = 2000
"""The longest description a client tool may have."""

CONTEXT_CHARS = 20_000
"""The most context one client tool may carry (the context entries that name it, joined)."""

FIELD = "client_tools"
"""The `field` of every refusal here."""


def check_client_tools(tools: Sequence[ClientTool]) -> None:
    """Refuse client tools that could not be offered to a model, or stored and read back with their run.

    Each tool has a name of `NAME_PATTERN`'s shape, no two the same; parameters that are a JSON object and a
    valid JSON Schema (of the draft its `$schema` names, 2020-12 by default); a description and context within
    their sizes; and no text holding a NUL character or a lone surrogate, which no store keeps.

    Raises:
        InvalidInput: the first tool that does not fit, and why (`field` is `client_tools`).
    """
    if len(tools) > MAX_CLIENT_TOOLS:
        raise InvalidInput(f"{len(tools)} client tools declared; at most {MAX_CLIENT_TOOLS} may be", field=FIELD)
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        if not isinstance(tool, ClientTool):
            raise InvalidInput(f"client tool #{index + 1} is a {type(tool).__name__}, not a ClientTool", field=FIELD)
        _check_tool(index, tool)
        if tool.name in seen:
            raise InvalidInput(f"two client tools are named {tool.name!r}; each name may be declared once", field=FIELD)
        seen.add(tool.name)


def _check_tool(index: int, tool: ClientTool) -> None:
    name = tool.name
    if not isinstance(name, str) or re.fullmatch(NAME_PATTERN, name) is None:
        raise InvalidInput(
            f"client tool #{index + 1}: the name {_shown(name)} is not a tool name: 1 to 64 letters, digits, "
            "'_' or '-', starting with a letter or '_'",
            field=FIELD,
        )
    about = f"client tool {name!r}"
    if not isinstance(tool.description, str):
        raise InvalidInput(f"{about}: its description must be text", field=FIELD)
    if len(tool.description) > DESCRIPTION_CHARS:
        raise InvalidInput(
            f"{about}: its description has {len(tool.description)} characters; the limit is {DESCRIPTION_CHARS}",
            field=FIELD,
        )
    if tool.context is not None and not isinstance(tool.context, str):
        raise InvalidInput(f"{about}: its context must be text", field=FIELD)
    if tool.context is not None and len(tool.context) > CONTEXT_CHARS:
        raise InvalidInput(
            f"{about}: its context has {len(tool.context)} characters; the limit is {CONTEXT_CHARS}", field=FIELD
        )
    _check_parameters(about, tool.parameters)
    texts = {"description": tool.description, "context": tool.context, "parameters": tool.parameters}
    where = lone_surrogate(texts)
    if where is not None:
        raise InvalidInput(
            f"{about}: its {where} holds a lone surrogate, which is not Unicode text; send it as UTF-8", field=FIELD
        )
    where = nul_character(texts)
    if where is not None:
        raise InvalidInput(
            f"{about}: its {where} holds a NUL character (U+0000), which no store keeps; leave it out", field=FIELD
        )


def _check_parameters(about: str, parameters: object) -> None:
    """Parameters are a JSON object (the arguments' JSON Schema), which the store writes and reads back as JSON."""
    if not isinstance(parameters, Mapping):
        raise InvalidInput(
            f"{about}: its parameters must be a JSON Schema object, not {_json_type(parameters)}", field=FIELD
        )
    try:
        json.dumps(parameters, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"{about}: its parameters are not JSON: {exc}", field=FIELD) from None
    problem = schema_problem(dict(parameters))
    if problem is not None:
        raise InvalidInput(f"{about}: its parameters are not a valid JSON Schema: {problem}", field=FIELD)


def _json_type(value: object) -> str:
    """What a value is, in JSON's words (`a string`, `an array`), for a refusal to say."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a {type(value).__name__}"


def _shown(value: object) -> str:
    """A value a refusal names, cut short: a client may send a name of any length."""
    text = repr(value)
    return text if len(text) <= 70 else f"{text[:67]}..."
