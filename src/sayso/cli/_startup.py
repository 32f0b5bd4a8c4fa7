"""How a command starts quickly: the collector paused while it builds what it needs, which is then frozen.

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
    missed. The collector runs again as soon as the command does its work (and stays paused if a
    host had paused it), with what was built frozen first (`gc.freeze`): re-enabled as it was, its
    first young collection walked every object made while it was paused, and the next ones again
    as they were promoted (measured on `sayso decide`: 45 young and 4 middle collections taking
    ~0.1-0.3 s, one of them over 800,000 objects). The command owns its process, as `sayso serve`
    does when it freezes its heap (`sayso.server._heap`); a cycle that was garbage already at the
    freeze is kept for the process's life, a few objects for a command that ends.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
