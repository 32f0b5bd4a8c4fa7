"""Where a problem in `sayso.yaml` is: the line of every key, and schema errors said as `file:line: where: what`.

PyYAML's node marks give each mapping key and list item its line, so a refused config names the
line to fix, not only the field.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias

import yaml
from pydantic import BaseModel

from ..exceptions import ConfigError

EntryPath: TypeAlias = tuple[str | int, ...]
"""Where an entry is in the config, as pydantic's error locations say it: `("agents", "files", "tools", 0)`."""


class PlacedError(ConfigError):
    """Problems a check of the whole config found, each with the path of the entry at fault.

    pydantic places a model validator's error at the model it validates, which for the whole config is
    line 1; `validation_lines` reads these paths back, so each problem is reported at its entry's line.
    """

    def __init__(self, *problems: tuple[Sequence[str | int], str]) -> None:
        self.problems: tuple[tuple[EntryPath, str], ...] = tuple((tuple(at), message) for at, message in problems)
        super().__init__("; ".join(message for _, message in self.problems))

    def __reduce__(self) -> tuple[type[PlacedError], tuple[tuple[EntryPath, str], ...]]:
        return PlacedError, self.problems  # pickled with its problems, not the message they make


def config_path(path: Sequence[str | int]) -> str:
    """A config location as people write it: `agents.files.interrupt.tools[0]`."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else f".{step}" if text else step
    return text


_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser where PyYAML was built with it (its wheels are): ~10x faster than PyYAML's own, same documents."""


def read_yaml(text: str) -> tuple[Any, dict[tuple[str | int, ...], int]]:
    """The document, and the line of every mapping key and list item in it (PyYAML's node marks).

    Parsed by libyaml; a document it refuses is parsed again by PyYAML's own parser, whose error says
    what it expected and what it found (libyaml's says only `did not find expected ...`).

    Raises:
        yaml.YAMLError: the text is not one YAML document.
    """
    try:
        node, data = _parsed(text, _FAST_LOADER)
    except yaml.YAMLError:
        if _FAST_LOADER is yaml.SafeLoader:
            raise
        node, data = _parsed(text, yaml.SafeLoader)
    lines: dict[tuple[str | int, ...], int] = {}
    if node is not None:
        _mark_lines(node, (), lines)
    return data, lines


def read_yaml_file(file: Path, what: str) -> tuple[Any, dict[tuple[str | int, ...], int]]:
    """`read_yaml` of a file sayso is given (`what`: a config, a script), each way it cannot be read said so.

    Raises:
        ConfigError: the file cannot be read, is not UTF-8 text, or is not one YAML document.
    """
    try:
        return read_yaml(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {str(file)!r}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {str(file)!r} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {str(file)!r} is not valid YAML:\n{yaml_problem(file, exc)}") from None


def load_yaml(text: str) -> Any:
    """The YAML document `text` holds (`read_yaml` without the lines).

    Raises:
        yaml.YAMLError: the text is not one YAML document.
    """
    return read_yaml(text)[0]


def _parsed(text: str, loader_class: type[yaml.SafeLoader]) -> tuple[yaml.Node | None, Any]:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return node, loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


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


def yaml_problem(file: Path, exc: yaml.YAMLError) -> str:
    """A YAML syntax error as `file:line: error: what. Fix: how`, in place of PyYAML's `<unicode string>` text."""
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML refuses (a NUL, a control character)
        return _unreadable(file, exc)
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else 1
    what = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None and context_mark.line + 1 != line:
        what += f" ({context} on line {context_mark.line + 1})"
    column = f", column {mark.column + 1}" if mark is not None else ""
    return (
        f"  {file}:{line}: error: not valid YAML{column}: {what}. Fix: check that line and the one before for an "
        "unclosed bracket or quote, a missing space after ':', or indentation that does not line up"
    )


def validation_lines(
    file: Path, lines: dict[tuple[str | int, ...], int], error: Any, *, root: type[BaseModel] | None = None
) -> list[tuple[int, str]]:
    """One schema error as `validation_line`s: one per problem a `PlacedError` names, at its entry."""
    placed = (error.get("ctx") or {}).get("error")
    if not isinstance(placed, PlacedError):
        return [validation_line(file, lines, error, root=root)]
    return [
        validation_line(file, lines, {**error, "loc": (*error["loc"], *at), "msg": message}, root=root)
        for at, message in placed.problems
    ]


def _unreadable(file: Path, exc: yaml.reader.ReaderError) -> str:
    """The line of a character YAML refuses, counted in the file (PyYAML gives only `position N` of a string)."""
    try:
        line = file.read_text(encoding="utf-8").count("\n", 0, exc.position) + 1
    except (OSError, ValueError):
        line = 1
    character = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
    return (
        f"  {file}:{line}: error: not valid YAML: the character {character} may not appear in it ({exc.reason}). "
        "Fix: remove it; a file with such characters may not be the config you meant"
    )


def validation_line(
    file: Path, lines: dict[tuple[str | int, ...], int], error: Any, *, root: type[BaseModel] | None = None
) -> tuple[int, str]:
    """One schema problem as `file:line: error: where: what. Fix: how`, with its line to sort by.

    Given the config's `root` model, a misspelt field or value gets a did-you-mean.
    """
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
    fix = _did_you_mean(error, root) or _FIXES.get(str(error["type"]))
    tail = f". Fix: {fix}" + ("" if fix.endswith("?") else ".") if fix else ""
    return line or 1, f"  {file}:{line or 1}: error: {where}: {message}{tail}"


def _did_you_mean(error: Any, root: type[BaseModel] | None) -> str | None:
    """`did you mean 'model'?` for a field name or a choice that is close to one the config takes."""
    kind, loc = str(error["type"]), tuple(error["loc"])
    if kind == "literal_error" and isinstance(error.get("input"), str):
        choices = re.findall(r"'([^']*)'", str((error.get("ctx") or {}).get("expected", "")))
        close = difflib.get_close_matches(error["input"], choices, n=1, cutoff=0.6)
        return f"did you mean {close[0]!r}?" if close else None
    if kind != "extra_forbidden" or root is None or not loc or not isinstance(loc[-1], str):
        return None
    known = _fields_at(root, loc[:-1])
    close = difflib.get_close_matches(loc[-1], sorted(known), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? Or remove it" if close else None


def _fields_at(root: type[BaseModel], path: Sequence[str | int]) -> set[str]:
    """The field names of the models that can stand at `path` (pydantic's error location) under `root`."""
    here: list[Any] = [root]
    for step in path:
        ahead: list[Any] = []
        for kind in _options(here):
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                if isinstance(step, str) and step in kind.model_fields:
                    ahead.append(kind.model_fields[step].annotation)
                elif step == kind.__name__:  # pydantic names the union member it tried
                    ahead.append(kind)
            elif typing.get_origin(kind) is dict and isinstance(step, str):
                ahead.append(typing.get_args(kind)[1])
            elif typing.get_origin(kind) is list and isinstance(step, int):
                ahead.append(typing.get_args(kind)[0])
        if ahead or not isinstance(step, str):
            here = ahead
        # else: a step naming a union's branch by its tag (`Entry`): the same types stand there
    return {name for k in _options(here) if isinstance(k, type) and issubclass(k, BaseModel) for name in k.model_fields}


def _options(kinds: list[Any]) -> list[Any]:
    """Each type, with unions and `Annotated` opened up."""
    out: list[Any] = []
    for kind in kinds:
        origin = typing.get_origin(kind)
        if origin is typing.Annotated:
            out.extend(_options([typing.get_args(kind)[0]]))
        elif origin is typing.Union or origin is types.UnionType:
            out.extend(_options(list(typing.get_args(kind))))
        else:
            out.append(kind)
    return out


def _is_union_branch(step: str | int) -> bool:
    """Whether a step of pydantic's error location names a union member (`str`, `ToolRuleConfig`), not a field."""
    return isinstance(step, str) and (step in ("str", "int", "float", "bool") or step[:1].isupper() or "[" in step)
