"""Where a problem in `sayso.yaml` is: the line of every key, and schema errors said as `file:line: where: what`.

PyYAML's node marks give each mapping key and list item its line, so a refused config names the
line to fix, not only the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml


def config_path(path: Sequence[str | int]) -> str:
    """A config location as people write it: `agents.files.interrupt.tools[0]`."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else f".{step}" if text else step
    return text


def read_yaml(text: str) -> tuple[Any, dict[tuple[str | int, ...], int]]:
    """The document, and the line of every mapping key and list item in it (PyYAML's node marks)."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    lines: dict[tuple[str | int, ...], int] = {}
    if node is not None:
        _mark_lines(node, (), lines)
    return data, lines


def _mark_lines(node: yaml.Node, path: tuple[str | int, ...], lines: dict[tuple[str | int, ...], int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                step = (*path, str(key.value))
                lines.setdefault(step, key.start_mark.line + 1)
                _mark_lines(value, step, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            step = (*path, index)
            lines[step] = item.start_mark.line + 1
            _mark_lines(item, step, lines)


def line_of(lines: dict[tuple[str | int, ...], int], path: Sequence[str | int]) -> int | None:
    found: tuple[str | int, ...] = ()
    for step in path:
        if (*found, step) in lines:
            found = (*found, step)
    return lines.get(found)


_FIXES = {
    "extra_forbidden": "remove it, or correct its spelling (the configuration reference lists every field)",
    "missing": "add it",
}


def validation_line(file: Path, lines: dict[tuple[str | int, ...], int], error: Any) -> tuple[int, str]:
    """One schema problem as `file:line: where: what. Fix: how`, with its line to sort by."""
    loc = tuple(error["loc"])
    line = line_of(lines, loc)
    shown: list[str | int] = []
    written: tuple[str | int, ...] = ()
    for step in loc:
        if (*written, step) in lines:
            written = (*written, step)
            shown.append(step)
        elif not _is_union_branch(step):
            shown.append(step)
    where = config_path(shown) or "the config"
    message = str(error["msg"]).removeprefix("Value error, ")
    fix = _FIXES.get(str(error["type"]))
    return line or 1, f"  {file}:{line or 1}: {where}: {message}" + (f". Fix: {fix}." if fix else "")


def _is_union_branch(step: str | int) -> bool:
    """Whether a step of pydantic's error location names a union member (`str`, `ToolRuleConfig`), not a field."""
    return isinstance(step, str) and (step in ("str", "int", "float", "bool") or step[:1].isupper() or "[" in step)
