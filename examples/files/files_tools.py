"""Tools of the file-manager demo, confined to a sandbox folder (SAYSO_SANDBOX, or ./sandbox here)."""

from __future__ import annotations

import os
from pathlib import Path

import sayso

SAMPLES = {
    "notes.txt": "Buy milk. Call the plumber.\n",
    "report-2025.txt": "Revenue grew 4% in 2025.\n",
    "report-2026.txt": "Revenue grew 6% in 2026.\n",
    "todo.md": "- water the plants\n- file the taxes\n",
}


def sandbox() -> Path:
    """The sandbox folder, created with a few sample files when missing."""
    folder = Path(os.environ.get("SAYSO_SANDBOX") or Path(__file__).parent / "sandbox")
    if not folder.exists():
        folder.mkdir(parents=True)
        for name, text in SAMPLES.items():
            (folder / name).write_text(text)
    return folder


def _inside(name: str) -> Path | None:
    root = sandbox().resolve()
    path = (root / name).resolve()
    return path if path.parent == root else None


@sayso.tool(read_only=True)
def list_files(prefix: str = "") -> str:
    """List the files in the sandbox whose names start with `prefix`, one per line.

    Args:
        prefix: only names starting with this; empty lists every file.
    """
    names = sorted(p.name for p in sandbox().iterdir() if p.is_file() and p.name.startswith(prefix))
    return "\n".join(names) if names else f"(no files starting with {prefix!r})"


@sayso.tool(read_only=True)
def read_file(name: str) -> str:
    """Read a file of the sandbox.

    Args:
        name: the file's name.
    """
    path = _inside(name)
    if path is None or not path.is_file():
        return f"No file named {name!r}."
    return path.read_text()


@sayso.tool(hint="Deleting a file cannot be undone.")
def delete_file(name: str) -> str:
    """Delete a file of the sandbox.

    Args:
        name: the file's name.
    """
    path = _inside(name)
    if path is None or not path.is_file():
        return f"No file named {name!r}."
    path.unlink()
    return f"Deleted {name}."
