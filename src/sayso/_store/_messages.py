"""The message log's codec: pydantic-ai messages as the JSON arrays the store keeps, one per run segment.

Every backend writes and reads a thread's history only through these functions. pydantic-ai is
imported when a history is first encoded or decoded, not when the store is: commands that only
list requests (`sayso inbox`) never load the engine.

A history is decoded in one pass (the batches' arrays joined into one) with the garbage
collector paused. Decoding allocates tens of thousands of objects at once that all live on
(the run reads them), and each burst of allocations makes CPython's generational collector run:
at H=2000 about one full collection per decode, each walking every object the process holds
(~100 ms with pydantic-ai's schemas loaded), which cost more than the decode itself. Paused, the
burst counts as one young collection; nothing the decode builds is garbage, so nothing is missed.

A message is written without the fields that hold their default (`None`, `0`, `""`, `False`,
`"complete"`): pydantic-ai writes every field, and about two thirds of a reply's are at their
default, so a history took twice the bytes, and a decode, which pays per key, ~30% more time at
H=500 and H=2000. Decoding fills each missing field with the same default, so the messages read
back are equal. Only a message's, a part's and a usage's own scalar fields are left out, never a
tag the decoder picks a class by, a default made by a factory (a timestamp), or anything inside
a tool's arguments or content (where a missing key means something else than `null`).

A long history (from `TRUSTED_FROM` bytes) is decoded through the trusted schema of `_trusted`,
which skips pydantic-ai's Python callbacks for what sayso itself wrote (about a third of a
decode); what it rejects is decoded by pydantic-ai's adapter, so both give the same messages. A
short one goes straight to the adapter: building the trusted schema (tens of ms, once per process)
would cost a one-shot command (`sayso decide`) more than it saves on a short thread.
"""

from __future__ import annotations

import dataclasses
import gc
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pydantic_core import ValidationError

from .._core.finite import lone_surrogate, storable_value
from ._trusted import trusted_validator

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

TRUSTED_FROM = 128 * 1024
"""Histories of at least this many bytes of JSON (~200 short turns) are decoded through the trusted schema."""

_TAGS = frozenset({"kind", "part_kind", "tool_kind"})
"""Fields the decoder picks a message's or a part's class by: always written."""

_SCALARS = (type(None), bool, int, str)
"""Defaults compared by value (floats are not: -0.0 equals 0.0 and would read back as 0.0)."""


def encode_messages(messages: Iterable[ModelMessage]) -> bytes:
    """One run segment's new messages as the JSON array stored for them.

    Text holding a lone surrogate (a model's reply may escape one) cannot be written as UTF-8: such
    a segment is written with U+FFFD in its place (`_core.finite`), not refused, so the run ends.
    """
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_core import PydanticSerializationError

    batch = list(messages)
    unwritten = _at_default(batch)
    try:
        return ModelMessagesTypeAdapter.dump_json(batch, exclude=unwritten)
    except PydanticSerializationError:
        if not lone_surrogate(ModelMessagesTypeAdapter.dump_python(batch, mode="json")):
            raise
    written = ModelMessagesTypeAdapter.dump_python(batch, mode="json", exclude=unwritten)
    return json.dumps(storable_value(written)).encode()


def _at_default(batch: Sequence[ModelMessage]) -> dict[int, Any]:
    """What of `batch` holds its default and is not written (see above), as pydantic's `exclude` takes it."""
    unwritten: dict[int, Any] = {}
    for i, message in enumerate(batch):
        fields: dict[str | int, Any] = dict.fromkeys(_defaults_held(message), True)
        parts = {j: dict.fromkeys(held, True) for j, part in enumerate(message.parts) if (held := _defaults_held(part))}
        if parts:
            fields["parts"] = parts
        usage = getattr(message, "usage", None)
        if usage is not None and (held := _defaults_held(usage)):
            fields["usage"] = dict.fromkeys(held, True)
        if fields:
            unwritten[i] = fields
    return unwritten


def _defaults_held(value: Any) -> list[str]:
    """The names of `value`'s scalar fields that hold their default."""
    return [
        name
        for name, default in _scalar_defaults(type(value))
        if (held := getattr(value, name, _MISSING)) is default or (type(held) is type(default) and held == default)
    ]


_MISSING = object()


_SCALAR_DEFAULTS: dict[type, tuple[tuple[str, object], ...]] = {}


def _scalar_defaults(cls: type) -> tuple[tuple[str, object], ...]:
    """A dataclass's fields whose default is a scalar (not a factory's), tags aside: those a decode fills in alike.

    A subclass (a part of a registered tool kind) is read back as its base where the kind is not registered:
    a field is left out only where every base that declares it has the same default.
    """
    known = _SCALAR_DEFAULTS.get(cls)
    if known is None:
        fields = dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ()
        bases = [
            {f.name: f for f in dataclasses.fields(base)} for base in cls.__mro__[1:] if dataclasses.is_dataclass(base)
        ]
        known = tuple(
            (f.name, f.default)
            for f in fields
            if f.init
            and f.name not in _TAGS
            and type(f.default) in _SCALARS
            and all(_same(f.default, base[f.name].default) for base in bases if f.name in base)
        )
        _SCALAR_DEFAULTS[cls] = known
    return known


def _same(default: object, other: object) -> bool:
    return type(default) is type(other) and default == other


def decode_messages(body: bytes) -> list[ModelMessage]:
    """One stored batch back as messages."""
    return decode_history([body])


def decode_history(bodies: Sequence[bytes]) -> list[ModelMessage]:
    """A thread's stored batches as one list of messages, decoded in one pass over their JSON arrays."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    if not bodies:
        return []
    if len(bodies) == 1:
        body = bytes(bodies[0])
    else:
        # Each batch is a JSON array: joining their insides gives one array of the whole history.
        inner = [bytes(b).strip()[1:-1].strip() for b in bodies]
        body = b"[" + b",".join(i for i in inner if i) + b"]"
    with _collector_paused():
        trusted = trusted_validator() if len(body) >= TRUSTED_FROM else None
        if trusted is not None:
            try:
                messages: list[ModelMessage] = trusted.validate_json(body)
                return messages
            except ValidationError:
                pass  # a shape only pydantic-ai's own callbacks decode (see _trusted): its adapter decodes it all
        return ModelMessagesTypeAdapter.validate_json(body)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for one burst of allocations that all survive (see above)."""
    if not gc.isenabled():  # someone else paused it: theirs to resume
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
