"""Values JSON cannot carry: NaN and the infinities, and text holding a lone surrogate or a NUL character.

Python's `json` reads and writes NaN and the infinities all the same; a lone surrogate (a JSON
string may escape one) is no Unicode text and cannot be written as UTF-8 at all. JSON escapes a
NUL character (U+0000) too, but PostgreSQL's text cannot hold one: SQLite would keep what
PostgreSQL refuses, and a reason or a message written as text (a run's output) would fail the
run's next write, so text holding one is refused on every store alike.

What a person sends is refused so. What a model, a tool or a webhook's receiver produced is not
anyone's mistake to refuse: a run's output or error, a delivery's last error are stored with each
such character as U+FFFD (`storable_text`), on every store alike, and the run ends as it would have
(before, on PostgreSQL, the run's last write failed and left it running; a lone surrogate failed
SQLite's too). The messages keep a NUL exactly (their JSON escapes it); a lone surrogate, which
JSON cannot carry as UTF-8, becomes U+FFFD there too (`storable_value`).

Such a number in what a person decided cannot be stored as JSON (a record writes it as `null`),
matched against what was approved (NaN equals nothing), or sent on to a tool as the person meant
it; the decision rule refuses it (`decisions.check_decision`). Such text cannot even be measured
against the size limits, which refuse it first (`limits.check_decision`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, overload

from pydantic_core import to_jsonable_python

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
"""A NUL character, or a surrogate (in a `str`, a surrogate is always a lone one)."""


def non_finite(value: object, where: str = "") -> str | None:
    """Where `value` holds NaN or an infinity (`amount is NaN`), or `None` when every number in it is finite."""

    def leaf(item: object, at: str) -> str | None:
        if isinstance(item, float) and not math.isfinite(item):
            return f"{at or 'the value'} is {'NaN' if math.isnan(item) else 'infinite'}"
        return None

    return _first(value, where, leaf)


def lone_surrogate(value: object, where: str = "") -> str | None:
    """Where `value` holds text with a lone surrogate (`city`; `""` for the value itself), or `None` if nowhere."""
    return _first(value, where, _text_leaf(lambda text: any("\ud800" <= char <= "\udfff" for char in text)))


def nul_character(value: object, where: str = "") -> str | None:
    """Where `value` holds text with a NUL character (`city`; `""` for the value itself), or `None` if nowhere."""
    return _first(value, where, _text_leaf(lambda text: "\x00" in text))


def storable(text: str) -> bool:
    """Whether every store keeps `text` as it is: it holds no NUL character and no lone surrogate."""
    return _UNSTORABLE.search(text) is None


@overload
def storable_text(text: str) -> str: ...
@overload
def storable_text(text: None) -> None: ...
def storable_text(text: str | None) -> str | None:
    """`text` with each NUL character and lone surrogate replaced by U+FFFD, so every store keeps it (see above)."""
    return text if text is None or storable(text) else _UNSTORABLE.sub("\ufffd", text)


def storable_value(value: Any) -> Any:
    """A JSON-able `value` with `storable_text` applied to every text in it, keys included."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, Mapping):
        return {storable_value(k): storable_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_value(item) for item in value]
    return value


def json_storable(value: Any) -> Any:
    """`value` as JSON (pydantic's rules), text holding a lone surrogate with U+FFFD in its place (`storable_value`).

    What a tool or a workflow's node returns is no one's mistake to refuse for such text; what JSON has no form
    for at all (an object of an unknown class, a dict keyed by a frozenset) raises `ValueError` or `TypeError`.
    """
    found = to_jsonable_python(value, bytes_mode="base64")
    return storable_value(found) if lone_surrogate(found) else found


def _text_leaf(bad: Callable[[str], bool]) -> Callable[[object, str], str | None]:
    """A `leaf` for `_first` that finds text, or a mapping's key, that is `bad`."""

    def leaf(item: object, at: str) -> str | None:
        if isinstance(item, str):
            return at if bad(item) else None
        if isinstance(item, Mapping) and any(isinstance(key, str) and bad(key) for key in item):
            return at  # a key is named by the mapping that holds it
        return None

    return leaf


def _first(value: object, where: str, leaf: Callable[[object, str], str | None]) -> str | None:
    """The first finding of `leaf` in `value` or anything it holds, depth first; each item's path is `a.b.0`."""
    found = leaf(value, where)
    if found is not None:
        return found
    items: Any
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _first(item, f"{where}.{key}" if where else str(key), leaf)
        if found is not None:
            return found
    return None
