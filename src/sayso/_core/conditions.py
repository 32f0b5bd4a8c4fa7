"""Conditions as policy: CEL expressions over a call's arguments, its principal and its thread, compiled once.

A rule's `when:` is compiled when the config loads (a syntax error is a config error there) and
evaluated for each call with three variables: `args` (the call's arguments as the model sent
them), `principal` (`name`, `groups`) and `thread` (`id`, `agent`). A reason may quote values in
braces (`amount {args.amount} > 100`), each brace a CEL expression of its own. What a condition
names is checked against the tool's argument schema at load (`referenced_fields`), so a typo is
a config error, not a rule that never holds. Evaluating is pure: no I/O, the same answer for the
same call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic.json_schema import JsonSchemaValue
from typing_extensions import TypedDict

if TYPE_CHECKING:
    import cel

VARIABLES: dict[str, frozenset[str] | None] = {
    "args": None,
    "principal": frozenset({"name", "groups"}),
    "thread": frozenset({"id", "agent"}),
}
"""The variables a condition may name, with the fields each has (`None`: the tool's arguments, per its schema)."""

_STRINGS = re.compile(r"""(?s)[rRbB]{0,2}('''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""")
_SELECTION = re.compile(r"(?<![\w.])([A-Za-z_]\w*)((?:\s*\.\s*[A-Za-z_]\w*)*)")
_BOUND = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")
_BRACES = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


class PrincipalVariable(TypedDict):
    """`principal`: whom the run acts for (the thread's owner), and the config's groups they are in."""

    name: str
    groups: list[str]


class ThreadVariable(TypedDict):
    """`thread`: the person's chat, and the agent (as a path) that made the call."""

    id: str
    agent: str


class CallVariables(TypedDict):
    """What a condition reads for one call."""

    args: dict[str, Any]
    principal: PrincipalVariable
    thread: ThreadVariable


class ConditionError(ValueError):
    """A condition or a reason's placeholder that is not valid CEL."""


@lru_cache(maxsize=1024)
def _compiled(source: str) -> cel.Program:
    import cel  # here: the CEL binding loads a REPL's dependencies too, which `sayso inbox` need not pay

    try:
        return cel.compile(source)
    except ValueError as exc:
        raise ConditionError(str(exc).replace("<input>", "the expression")) from None


@dataclass(frozen=True)
class Expression:
    """A CEL expression, compiled once (the same source shares one program across rules and reloads)."""

    source: str
    program: cel.Program = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "program", _compiled(self.source))

    def evaluate(self, variables: CallVariables) -> Any:
        """The expression's value; raises `EvaluationError` when it cannot be evaluated for these values."""
        try:
            return self.program.execute(dict(variables))
        except Exception as exc:  # the Rust binding raises KeyError, TypeError, ValueError, RuntimeError
            raise EvaluationError(f"{self.source!r}: {_said(exc)}") from None


class EvaluationError(Exception):
    """A condition that could not be evaluated for one call (a missing field, a type mismatch)."""


def _said(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"no such field {exc.args[0]!r}" if exc.args else "no such field"
    return str(exc).split(". ", 1)[0]


@dataclass(frozen=True)
class Reason:
    """A reason's text, with `{expression}` placeholders filled from the call (`{{` and `}}` stand for braces)."""

    template: str
    parts: tuple[str | Expression, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts: list[str | Expression] = []
        at = 0
        for found in _BRACES.finditer(self.template):
            parts.append(self.template[at : found.start()])
            token = found.group(0)
            parts.append(token[0] if found.group(1) is None else Expression(found.group(1).strip()))
            at = found.end()
        parts.append(self.template[at:])
        object.__setattr__(self, "parts", tuple(p for p in parts if p != ""))

    @property
    def expressions(self) -> tuple[Expression, ...]:
        return tuple(p for p in self.parts if isinstance(p, Expression))

    def render(self, variables: CallVariables) -> str:
        """The reason for this call; a placeholder that cannot be evaluated shows as `{expression?}`."""
        shown: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                shown.append(part)
                continue
            try:
                shown.append(_text(part.evaluate(variables)))
            except EvaluationError:
                shown.append(f"{{{part.source}?}}")
        return "".join(shown)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | dict):
        return json.dumps(value, default=str)
    return str(value)


def call_variables(
    args: Mapping[str, Any], *, principal: str | None, groups: tuple[str, ...], thread_id: str, agent: str
) -> CallVariables:
    """The variables a condition reads for one call."""
    return CallVariables(
        args=dict(args),
        principal=PrincipalVariable(name=principal or "", groups=list(groups)),
        thread=ThreadVariable(id=thread_id, agent=agent),
    )


def referenced_fields(source: str) -> list[tuple[str, ...]]:
    """The variables and field paths an expression selects (`args.refund.amount` → `("args", "refund", "amount")`).

    Read from the source with string literals blanked out; names bound by a macro
    (`args.items.all(i, i.price > 0)`'s `i`) are left out, since they are not variables.
    """
    text = _STRINGS.sub("''", source)
    bound = set(_BOUND.findall(text))
    found: list[tuple[str, ...]] = []
    for match in _SELECTION.finditer(text):
        head = match.group(1)
        steps = tuple(s.strip() for s in match.group(2).split(".") if s.strip())
        if head in bound or head in _KEYWORDS or (not steps and _is_call(text, match.end())):
            continue
        # The last step followed by `(` is a method (`args.name.startsWith(...)`), not a field.
        if steps and _is_call(text, match.end()):
            steps = steps[:-1]
        found.append((head, *steps))
    return found


_KEYWORDS = frozenset({"true", "false", "null", "in", "has", "int", "uint", "double", "string", "bytes", "bool"})


def _is_call(text: str, end: int) -> bool:
    return text[end:].lstrip().startswith("(")


def unknown_references(source: str, args_schema: JsonSchemaValue | None) -> list[str]:
    """What an expression names that the call does not have: `args.amout`, `principal.team`, `user.name`.

    `args_schema` is the tool's argument JSON schema (`None` when not known before the agent runs:
    an MCP server's or a client's tool, whose `args` fields are then not checked). A field below an
    object whose schema lists no `properties` (or allows others) is not checked either.
    """
    problems: list[str] = []
    for path in referenced_fields(source):
        head, rest = path[0], path[1:]
        if head not in VARIABLES:
            problems.append(f"{head!r} is not a variable (a condition reads args, principal and thread)")
            continue
        fields = VARIABLES[head]
        if fields is not None:
            if rest and rest[0] not in fields:
                problems.append(f"{head}.{rest[0]} is not a field of {head} (it has {', '.join(sorted(fields))})")
            continue
        if args_schema is None:
            continue
        schema: Any = args_schema
        for depth, step in enumerate(rest):
            props = schema.get("properties") if isinstance(schema, dict) else None
            if not isinstance(props, dict) or schema.get("additionalProperties") not in (None, False):
                break
            if step not in props:
                where = ".".join(("args", *rest[:depth]))
                known = ", ".join(sorted(props)) or "none"
                problems.append(f"{where}.{step} is not an argument of the tool ({where} has: {known})")
                break
            schema = props[step]
    return problems
