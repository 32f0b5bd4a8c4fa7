"""`load_lazily`: a package's public names resolved on first use (PEP 562), the one way sayso does it.

A package that lists where each of its names lives imports that module only when the name is first
read, so importing the package costs only what its caller uses (`sayso --help` stays instant).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from importlib.util import resolve_name
from typing import Any


def load_lazily(namespace: MutableMapping[str, Any], table: Mapping[str, str], name: str) -> Any:
    """The value of `name` from the module `table` names (relative to the package owning `namespace`).

    An import statement's machinery (`__import__`), not `import_module`: `python -X importtime` then
    lists the module, as tests/cli/test_startup.py reads it. The value is kept in `namespace`, so the
    next look-up is a plain attribute.
    """
    package = namespace["__name__"]
    module = table.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(__import__(resolve_name(module, package), fromlist=[name]), name)
    namespace[name] = value
    return value
