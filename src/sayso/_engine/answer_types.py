"""The Python type a tool asked its approval's feedback in, named on the request so the deciding process checks by it.

A request shows the JSON Schema of a `response_schema`, and every process can check an answer
against that; but a type may check more than its JSON Schema says (a pydantic validator, an aware
datetime). The body validates the feedback by the type when it runs again, after the approval was
recorded: an answer only the type refuses would then fail the run. So the request names the type
(`tools:Feedback`) and whoever decides it loads the type and checks the answer first
(`feedback_problems`); a type it cannot load (one defined inside a function, or in `__main__`,
asked by another process) refuses the answer rather than take it unchecked.
"""

from __future__ import annotations

import types
import typing
from collections import OrderedDict
from pathlib import Path
from typing import Any, get_args, get_origin

from .._core.decisions import Approve, Decision
from .._core.inputs import input_schema
from .._core.requests import ApprovalRequest, Request
from ..exceptions import ConfigError
from .imports import import_spec

_PLAIN: frozenset[object] = frozenset({str, int, float, bool, type(None), typing.Any})
"""Types whose JSON Schema checks all the type does."""
_OF_PLAIN: frozenset[object] = frozenset({list, dict, set, frozenset, tuple, typing.Union, types.UnionType})
"""Containers that add nothing to what their JSON Schema checks, when what they hold is plain."""

_SEEN: OrderedDict[str, object] = OrderedDict()
"""The types this process asked with, by the name on their requests: found again without an import (and the only
way to find one defined inside a function)."""
_SEEN_MAX = 512


def _plain(spec: object) -> bool:
    if spec in _PLAIN:
        return True
    return get_origin(spec) in _OF_PLAIN and all(a is Ellipsis or _plain(a) for a in get_args(spec))


def type_ref(spec: object) -> str | None:
    """The name the request gives the type `spec`, remembered in this process; `None` when its JSON Schema suffices.

    A class at a module's top level is named `module:qualname`, which another process imports from the
    config's folder; anything else gets a name only this process finds again.
    """
    if spec is None or isinstance(spec, dict) or _plain(spec):
        return None
    module, qualname = getattr(spec, "__module__", None), getattr(spec, "__qualname__", None)
    if isinstance(spec, type) and module and qualname and module != "__main__" and "<locals>" not in qualname:
        ref = f"{module}:{qualname}"
    else:
        ref = f"{module or ''}:{qualname or repr(spec)}@{id(spec):x}"  # this process's own
    _SEEN[ref] = spec
    _SEEN.move_to_end(ref)
    while len(_SEEN) > _SEEN_MAX:
        _SEEN.popitem(last=False)
    return ref


def _resolve(ref: str, base_dir: Path) -> object | None:
    if ref in _SEEN:
        return _SEEN[ref]
    if "@" in ref:
        return None
    try:
        found: object = import_spec(ref, base_dir=base_dir)
    except ConfigError:
        return None
    return found


def feedback_problems(request: Request, decision: Decision, *, base_dir: Path) -> dict[str, str] | None:
    """How an approval's feedback breaks the type the tool asked it in, by field path; empty when it fits.

    `None` when there is no such type to check by (not an approval's feedback, or the JSON Schema says it all).
    """
    if not isinstance(request, ApprovalRequest) or not isinstance(decision, Approve) or request.response_type is None:
        return None
    if decision.payload is None:
        return None  # no feedback to check: whether the tool needs some, its JSON Schema said
    ref = request.response_type
    spec: Any = _resolve(ref, base_dir)
    shown = ref.partition("@")[0].replace(":", ".")
    if spec is None:
        return {
            "": f"cannot be checked here: the tool checks it with {shown}, which this process cannot load; "
            "decide it through the process that runs the agent (sayso serve)"
        }
    try:
        return input_schema(spec).field_problems(decision.payload)
    except ConfigError as exc:
        return {"": f"cannot be checked here: {shown} is not a type any more ({exc})"}
