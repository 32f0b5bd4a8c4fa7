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

A long history (from `TRUSTED_FROM` bytes) is decoded through the trusted schema of `_trusted`,
which skips pydantic-ai's Python callbacks for what sayso itself wrote (about a third of a
decode); what it rejects is decoded by pydantic-ai's adapter, so both give the same messages. A
short one goes straight to the adapter: building the trusted schema (tens of ms, once per process)
would cost a one-shot command (`sayso decide`) more than it saves on a short thread.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pydantic_core import ValidationError

from .._core.finite import lone_surrogate, storable_value
from ._trusted import trusted_validator

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

TRUSTED_FROM = 256 * 1024
"""Histories of at least this many bytes of JSON (~200 short turns) are decoded through the trusted schema."""


def encode_messages(messages: Iterable[ModelMessage]) -> bytes:
    """One run segment's new messages as the JSON array stored for them.

    Text holding a lone surrogate (a model's reply may escape one) cannot be written as UTF-8: such
    a segment is written with U+FFFD in its place (`_core.finite`), not refused, so the run ends.
    """
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_core import PydanticSerializationError

    batch = list(messages)
    try:
        return ModelMessagesTypeAdapter.dump_json(batch)
    except PydanticSerializationError:
        if not lone_surrogate(ModelMessagesTypeAdapter.dump_python(batch, mode="json")):
            raise
    return json.dumps(storable_value(ModelMessagesTypeAdapter.dump_python(batch, mode="json"))).encode()


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
