"""Subject functions of the file-manager demo: what a remembered decision covers."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any


def folder(tool_name: str, tool_input: dict[str, Any]) -> dict[str, str]:
    """A remembered delete covers the folder of the file, never the whole sandbox."""
    parent = str(PurePosixPath(str(tool_input.get("name", ""))).parent)
    where = "the sandbox's top folder" if parent == "." else f"folder {parent}/"
    return {"key": f"folder:{parent}", "label": where}
