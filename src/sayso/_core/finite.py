"""Numbers JSON cannot carry: NaN and the infinities, which Python's `json` reads and writes all the same.

Such a number in what a person decided cannot be stored as JSON (a record writes it as `null`),
matched against what was approved (NaN equals nothing), or sent on to a tool as the person meant
it; the decision rule refuses it (`decisions.check_decision`).
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
