"""How a command starts quickly: the garbage collector paused while it imports and builds what it needs.

Kept free of every other import so the `sayso` package can pause the collector before it loads
typer, rich and pydantic.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a command imports and builds what it needs.

    Importing the runtime and pydantic-ai allocates hundreds of thousands of objects that all live
    on (modules, classes, validators); each burst made CPython run collections that walk every one
    of them, ~10-15 % of a short command's CPU. Nothing they build is garbage, so nothing is
    missed; the collector runs again as soon as the command does its work (and stays paused if a
    host had paused it).
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
