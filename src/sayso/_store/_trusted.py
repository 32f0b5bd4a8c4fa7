"""A faster decoder for the history sayso wrote itself: pydantic-ai's message schema without its Python callbacks.

pydantic-ai validates a message history written by anyone, in any of its past shapes: which class
a part becomes is decided by a Python function for every part (to honour registered tool kinds
and to translate legacy retry parts), and every response's usage goes through a Python wrapper
(to default legacy fields and keep unknown keys). Each such call makes pydantic-core hand the
part or usage over as Python objects, then validate them again: at H=2000 these callbacks are
about a third of a decode.

The trusted schema is the same schema with those callbacks swapped for what pydantic-core does
natively: parts picked by their `part_kind`, usage validated by its own dataclass schema. It only
accepts what it decodes exactly as pydantic-ai would, and rejects the rest, which is then decoded
by pydantic-ai's adapter (`decode_history` in `_messages`):

- a part is picked by `part_kind` only where pydantic-ai's function would pick the same: a part
  whose `tool_kind` is set (a registered kind may make it a typed subclass) or whose kind is the
  legacy `retry-prompt` is rejected;
- usage with keys its dataclass does not declare (kept as attributes by pydantic-ai) or legacy
  token fields set to null is rejected.

A message's and a user prompt's `__post_init__` (a Python call for every message of the history,
~15 % of a decode) are not run again either: they check what pydantic-ai checked when it built the
message sayso wrote, and change nothing for the parts this schema accepts (they promote only a part
whose `tool_kind` is set, which it rejects). The two checks that could fail on parts put into a
message after it was built, a speech part's speaker and a compaction part's place, are kept: a
history holding either kind of part is rejected, so pydantic-ai's adapter checks it.

Everything else in pydantic-ai's schema (every other validator and `__post_init__`, bytes as
base64) is kept as it is. Where pydantic-ai's schema is not the shape expected here, no trusted
schema is built and every decode goes through pydantic-ai's adapter, as before.
"""

from __future__ import annotations

import functools
from collections.abc import Set as AbstractSet
from typing import Any

from pydantic_core import SchemaValidator

_SKIPPED_TAGS = frozenset({"retry-prompt", "speech", "compaction"})
"""Part tags left to pydantic-ai: legacy retry parts (it translates them), and the parts a message's own
`__post_init__` checks (not run here)."""

_UNCHECKED = ("ModelRequest", "ModelResponse", "UserPromptPart")
"""The classes of `pydantic_ai.messages` whose `__post_init__` the trusted schema does not run (see above)."""


@functools.cache
def trusted_validator() -> SchemaValidator | None:
    """The validator of the trusted schema, or None where pydantic-ai's schema is not the expected shape."""
    from pydantic_ai import messages
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    ModelMessagesTypeAdapter.validate_json(b"[]")  # the adapter builds its schema on first use
    discriminators = {
        getattr(messages, "_model_request_part_discriminator", None),
        getattr(messages, "_model_response_part_discriminator", None),
    } - {None}
    rewrite = _Rewrite(discriminators, unchecked={getattr(messages, name) for name in _UNCHECKED})
    schema = rewrite.schema(ModelMessagesTypeAdapter.core_schema)
    if rewrite.unsafe or not rewrite.unions or not rewrite.usages:
        return None
    return SchemaValidator(schema, {"ser_json_bytes": "base64", "val_json_bytes": "base64"})  # pydantic-ai's config


class _Rewrite:
    """One copy-on-write pass over a core schema (the adapter's own is shared with pydantic-ai, never changed)."""

    def __init__(self, discriminators: set[Any], *, unchecked: AbstractSet[type] = frozenset()) -> None:
        self.discriminators = discriminators
        self.unchecked = unchecked
        self.unions = 0
        self.usages = 0
        self.unsafe = False  # a `tool_kind` field this pass cannot restrict: picking by `part_kind` is not safe

    def schema(self, node: Any) -> Any:
        if isinstance(node, list):
            items = [self.schema(item) for item in node]
            return node if all(a is b for a, b in zip(items, node, strict=True)) else items
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        if kind == "tagged-union" and node.get("discriminator") in self.discriminators:
            self.unions += 1
            choices = {tag: self.schema(c) for tag, c in node["choices"].items() if tag not in _SKIPPED_TAGS}
            return {**node, "discriminator": "part_kind", "choices": choices}
        if kind == "function-wrap" and _is_usage_validator(node.get("function")):
            return self._usage(node)
        if kind == "dataclass-field" and node.get("name") == "tool_kind":
            return self._tool_kind(node)
        fields = {key: self.schema(value) for key, value in node.items()}
        if kind == "dataclass" and node.get("post_init") and node.get("cls") in self.unchecked:
            return {**fields, "post_init": False}
        return node if all(fields[key] is node[key] for key in node) else fields

    def _usage(self, node: dict[str, object]) -> dict[str, object]:
        """The usage dataclass's own schema, rejecting keys it does not declare (pydantic-ai keeps them)."""
        inner = node.get("schema")
        if not (isinstance(inner, dict) and inner.get("type") == "dataclass"):
            return node
        args = inner.get("schema")
        if not (isinstance(args, dict) and args.get("type") == "dataclass-args"):
            return node
        self.usages += 1
        return {**inner, "schema": {**self.schema(args), "extra_behavior": "forbid"}}

    def _tool_kind(self, node: dict[str, object]) -> dict[str, object]:
        """A base part's `tool_kind` accepts only null: a set one is for pydantic-ai's registry to resolve."""
        field = node.get("schema")
        if not isinstance(field, dict) or field.get("type") != "default":
            self.unsafe = True
            return node
        inner = field.get("schema")
        if isinstance(inner, dict) and inner.get("type") == "literal":
            return node  # a typed subclass's own kind, reached only through its typed tag
        if field.get("default") is not None or not (isinstance(inner, dict) and inner.get("type") == "nullable"):
            self.unsafe = True
            return node
        return {**node, "schema": {**field, "schema": {"type": "none"}}}


def _is_usage_validator(function: Any) -> bool:
    """pydantic-ai's wrapper around every usage dataclass (legacy defaults, unknown keys kept)."""
    fn = function.get("function") if isinstance(function, dict) else function
    return getattr(fn, "__module__", None) == "pydantic_ai.usage" and getattr(fn, "__name__", None) == "validate"
