"""Values JSON cannot carry: NaN and the infinities, and text holding a lone surrogate.

Python's `json` reads and writes NaN and the infinities all the same; a lone surrogate (a JSON
string may escape one) is no Unicode text and cannot be written as UTF-8 at all.

Such a number in what a person decided cannot be stored as JSON (a record writes it as `null`),
matched against what was approved (NaN equals nothing), or sent on to a tool as the person meant
it; the decision rule refuses it (`decisions.check_decision`). Such text cannot even be measured
against the size limits, which refuse it first (`limits.check_decision`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def non_finite(value: object, where: str = "") -> str | None:
    """Where `value` holds NaN or an infinity (`amount is NaN`), or `None` when every number in it is finite."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where or 'the value'} is {'NaN' if math.isnan(value) else 'infinite'}"
    items: Any
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = non_finite(item, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None


def lone_surrogate(value: object, where: str = "") -> str | None:
    """Where `value` holds text with a lone surrogate (`city`; `""` for the value itself), or `None` if nowhere."""
    if isinstance(value, str):
        return where if any("\ud800" <= char <= "\udfff" for char in value) else None
    items: Any
    if isinstance(value, Mapping):
        for key in value:
            if lone_surrogate(key) is not None:
                return where
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = lone_surrogate(item, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None
