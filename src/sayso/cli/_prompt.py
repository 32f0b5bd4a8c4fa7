"""Reading a line at `sayso chat`'s prompts: one Ctrl-C leaves at once, on whichever thread the prompt runs."""

from __future__ import annotations

import os
import select
import signal
import sys
import threading

from rich.console import Console

from ._holding import LINES


def read_line(console: Console, prompt: str) -> str:
    """A line typed at `prompt`; Ctrl-C raises `KeyboardInterrupt` at once.

    The event loop's own SIGINT handler would only cancel the run's task, which a prompt blocked
    in `input()` notices after the next Enter; at a prompt, one Ctrl-C means leave now.
    """
    if threading.current_thread() is not threading.main_thread():
        # A held form, asked in a worker thread (`ask_held`): a read that can be given up.
        console.print(prompt, end="")
        return LINES.readline()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        console.print(prompt, end="")
        _until_typed()
        return console.input()
    finally:
        signal.signal(signal.SIGINT, previous)


def _until_typed() -> None:
    """Wait for a line at a terminal, looking for a Ctrl-C at least four times a second.

    `input()` alone may not notice one until the next Enter: Python runs a signal's handler on the
    main thread only, between instructions, so a SIGINT that the kernel hands to another thread (the
    store's writer, a worker), or that lands after the last check but before the read blocks, only
    sets a flag while the read waits on. Under load one Ctrl-C in a few hundred was left so.
    """
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a file (a test's stdin): `input()` reads it at once
    if not os.isatty(fd):
        return  # a pipe or file: no Ctrl-C arrives through it, and Python's buffer may already hold the line
    while not select.select([fd], [], [], 0.25)[0]:
        pass
