"""What an id looks like: every id sayso hands out fits `ID_PATTERN`, so an id given to sayso must too.

One rule for every edge: REST refuses a run, request, grant or thread id that does not fit (422) and
the CLI an id argument or option (exit 2), each before anything is looked up; the start verb refuses a
thread id that does not fit (`check_thread_id`) whatever interface sent it (Python, AG-UI, MCP), before
anything is written. An id holding a NUL or other odd text would otherwise reach the store, and
PostgreSQL cannot even look a NUL up.
"""

from __future__ import annotations

import re

from ..exceptions import InvalidInput

ID_PATTERN = r"^[A-Za-z0-9_.:\-]{1,64}$"
"""What a client-chosen thread id may look like, and every id sayso hands out does."""

ID_SHAPE = "1 to 64 letters, digits, '_', '.', ':' or '-'"
"""`ID_PATTERN` in words, for a refusal to say what an id looks like."""


def is_id(value: str) -> bool:
    """Whether `value` fits `ID_PATTERN` as a whole (a trailing newline too is refused, as REST refuses it)."""
    return re.fullmatch(ID_PATTERN, value) is not None


def check_thread_id(thread_id: str) -> None:
    """Refuse a client-chosen thread id that is not an id: the thread would be stored under it, and named by it.

    Raises:
        InvalidInput: `thread_id` does not fit `ID_PATTERN` (`field` is `thread_id`).
    """
    if not isinstance(thread_id, str) or not is_id(thread_id):
        shown = repr(thread_id)
        shown = shown if len(shown) <= 70 else f"{shown[:67]}..."
        raise InvalidInput(
            f"{shown} is not a thread id: one is {ID_SHAPE}; leave it out to start a new thread", field="thread_id"
        )
