"""How a command starts quickly: the collector paused while it builds what it needs, which is then frozen.

Kept free of every other import so the `sayso` package can pause the collector before it loads
typer, rich and pydantic.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import PurePath


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a command imports and builds what it needs.

    Importing the runtime and pydantic-ai allocates hundreds of thousands of objects that all live
    on (modules, classes, validators); each burst made CPython run collections that walk every one
    of them, ~10-15 % of a short command's CPU. Nothing they build is garbage, so nothing is
    missed. The collector runs again as soon as the command does its work (and stays paused if a
    host had paused it), with what was built frozen first (`gc.freeze`): re-enabled as it was, its
    first young collection walked every object made while it was paused, and the next ones again
    as they were promoted (measured on `sayso decide`: ~90-110 ms of CPU in its collections, ~10 ms
    frozen; at exit the interpreter's last collections skip them too). Only a command that owns
    its process freezes (`owns_process`), as `sayso serve` does with its heap
    (`sayso.server._heap`): a cycle that was garbage already at the freeze is kept for the
    process's life, a few objects for a command that ends, but a host calling the CLI in-process
    (typer's test runner, an application) would keep its own garbage.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if owns_process():
            gc.freeze()
        gc.enable()


def owns_process() -> bool:
    """Whether this process was started as the `sayso` command (its console script or `python -m sayso`)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None:
        return bool(spec.name == "sayso.__main__")
    return PurePath(getattr(main, "__file__", "") or "").name == "sayso"
