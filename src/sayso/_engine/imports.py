"""Import specs (`package.module:name`): a module in the config file's folder needs no install."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import pkgutil
import sys
from pathlib import Path
from typing import Any

from ..exceptions import ConfigError


class ModuleFailed(ConfigError):
    """The spec names a module that is there, but importing it fails: the module is at fault, not the spec."""

    def __init__(self, message: str, *, fix: str) -> None:
        super().__init__(message)
        self.fix = fix

    @classmethod
    def raised(cls, module_name: str, spec: str, exc: BaseException) -> ModuleFailed:
        """The module's own error while it was imported."""
        return cls(
            f"importing {module_name!r} for {spec!r} raised {type(exc).__name__}: {exc}",
            fix=f"fix the module {module_name!r}: importing it fails "
            f"(python -c 'import {module_name}' in the config's folder shows where)",
        )


def import_spec(spec: str, *, base_dir: Path | None = None) -> Any:
    """Resolve `pkg.mod:attr` with `pkgutil.resolve_name`; a module in the config file's folder needs no install.

    The folder is searched for the spec's top-level module first (as if it led `sys.path`), without
    putting it on `sys.path` for everyone else: only the module the spec names is loaded from there.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"import spec {spec!r} must look like 'package.module:name'")
    try:
        if base_dir is not None:
            _load_from_folder(module_name.partition(".")[0], base_dir)
        importlib.import_module(module_name)  # first, so a failure while importing is told apart from a missing name
    except ImportError as exc:
        missing = exc.name or ""
        if missing and (module_name == missing or module_name.startswith(f"{missing}.")):
            raise ConfigError(f"cannot import {module_name!r} for {spec!r}: {exc}") from exc
        if isinstance(exc, ModuleNotFoundError) and missing:
            raise ModuleFailed(
                f"{module_name!r} (for {spec!r}) imports {missing!r}, which is not installed",
                fix=f"install the package that provides {missing!r} in the environment sayso runs in",
            ) from exc
        raise ModuleFailed.raised(module_name, spec, exc) from exc
    except Exception as exc:  # the user's module failed while importing: report it as their config's problem
        raise ModuleFailed.raised(module_name, spec, exc) from exc
    try:
        return pkgutil.resolve_name(spec)
    except AttributeError:
        raise ConfigError(f"module {module_name!r} has no {attr!r} (from {spec!r})") from None


def _load_from_folder(name: str, folder: Path) -> None:
    """Import the top-level module or package `name` from `folder` when it is there and not imported yet."""
    if name in sys.modules:
        return
    found = importlib.machinery.PathFinder.find_spec(name, [str(folder)])
    if found is None:
        return  # not in the folder: the spec names an installed module
    module = importlib.util.module_from_spec(found)
    if found.loader is None:  # a folder without `__init__.py` (a namespace package): its modules are found in it
        module.__path__ = list(found.submodule_search_locations or ())
        sys.modules[name] = module
        return
    sys.modules[name] = module
    try:
        found.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
