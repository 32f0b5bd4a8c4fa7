"""Announcing runtime events to listeners, so that a listener's bug never breaks a run."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

logger = logging.getLogger("sayso.events")


def call_listeners(
    listeners: Sequence[Callable[[Any, dict[str, Any]], None]], event: str, data: dict[str, Any]
) -> None:
    """Call each listener with `event` and `data`; one that raises is logged, and the others still hear it.

    The event has already happened (the decision is committed, the pause is stored) when listeners
    are told, so a listener's error must not turn that step into a failure the caller would retry.
    """
    for listener in listeners:
        try:
            listener(event, data)
        except Exception:  # a boundary: any error of user code is logged, never raised into the run
            logger.exception("listener %r raised on %s; the run goes on", listener, event)
