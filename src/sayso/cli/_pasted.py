"""The commands sayso prints for a person to paste (`sayso decide …`, `chat --thread …`): they run in any shell.

Each names this very sayso by its absolute path (a pasted `sayso` would find another, or none, on a
PATH without the venv) and the config by its absolute path (one typed relative to a folder failed
with "cannot read config" pasted in another).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path


def sayso_command() -> str:
    """How to run this very sayso from any shell, venv activated or not: its absolute path.

    The running `sayso` script when that is what runs; else this interpreter with `-m sayso`.
    """
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "sayso" and script.is_file():
        return shlex.quote(str(script.resolve()))
    return shlex.join([sys.executable, "-m", "sayso"])


def config_word(config: str) -> str:
    """The config's path as a printed command names it: absolute, so the command runs pasted in any folder."""
    return shlex.quote(os.path.abspath(config))
