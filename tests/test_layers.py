"""The layers, enforced: every module's imports (relative ones resolved, lazy ones included) point inward only.

Edges (`server/`, `protocols/`, `cli/`, `channels/`) reach sayso through the runtime's public verbs: never the
store, SQLAlchemy or the runtime's private modules, and never another edge. Nothing inside
(runtime, core, store, the engine seam) imports an edge; only the composition roots join them (the
package root the runtime to the A2A client, `sayso._serve` the HTTP interfaces). The protocol
packages never import each other. The core does no I/O. No module imports itself through others:
the import graph, counting imports inside functions and under `TYPE_CHECKING`, has no cycle.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "sayso"

EDGES = ("sayso.server", "sayso.protocols", "sayso.cli", "sayso.channels")
"""The interfaces: each a thin translation to the runtime's public verbs."""

COMPOSITION_ROOTS = ("sayso", "sayso.__main__", "sayso._serve")
"""Where the runtime meets its adapters (the default A2A client, the console script, `sayso serve`)."""

PROTOCOLS = ("sayso.protocols.a2a", "sayso.protocols.ag_ui", "sayso.protocols.mcp")

FORBIDDEN_IN_CORE = (
    "sqlalchemy",
    "aiosqlite",
    "asyncpg",
    "starlette",
    "fastapi",
    "httpx",
    "typer",
    "rich",
    "pydantic_ai",
    "a2a",
    "ag_ui",
    "sqlite3",
)
"""Third-party packages the pure core never imports: databases, web, CLI, the engine, protocols. (Pure libraries
such as pydantic, standardwebhooks and cel (CEL conditions), which only compute, are allowed.)"""


@dataclass(frozen=True)
class Import:
    """One imported module, resolved to its absolute dotted name."""

    target: str
    line: int


@dataclass(frozen=True)
class Module:
    """A module of the sayso package and everything it imports."""

    name: str
    path: Path
    imports: tuple[Import, ...]

    def where(self, imported: Import) -> str:
        return f"{self.path.relative_to(SRC)}:{imported.line} imports {imported.target}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _within(name: str, prefix: str) -> bool:
    """Whether module `name` is `prefix` or inside it."""
    return name == prefix or name.startswith(prefix + ".")


def _imports(path: Path, name: str, known: set[str]) -> Iterator[Import]:
    """Every module `path` imports, anywhere in it (under `TYPE_CHECKING` and in functions too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            submodules = [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in known]
            # `from . import _tree` inside the package imports only `_tree`: the package itself is
            # already being imported, as every module's enclosing packages are.
            if len(submodules) < len(node.names) or not _within(name, module):
                yield Import(module, node.lineno)
            for submodule in submodules:
                yield Import(submodule, node.lineno)


def _modules() -> list[Module]:
    paths = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    known = {_module_name(p) for p in paths}
    return [Module(_module_name(p), p, tuple(_imports(p, _module_name(p), known))) for p in paths]


MODULES = _modules()


def _layer(prefixes: tuple[str, ...]) -> list[Module]:
    return [m for m in MODULES if any(_within(m.name, p) for p in prefixes)]


def _inner() -> list[Module]:
    """Everything but the edges and the composition roots: runtime, core, store, engine seam, config."""
    return [m for m in MODULES if m.name not in COMPOSITION_ROOTS and not any(_within(m.name, e) for e in EDGES)]


def test_the_walk_finds_every_layer() -> None:
    """The walker sees modules of each layer and resolves relative imports, so no check passes vacuously."""
    for prefix in (*EDGES, *PROTOCOLS, "sayso._runtime", "sayso._core", "sayso._store"):
        assert _layer((prefix,)), f"no module found under {prefix}"
    [app] = [m for m in MODULES if m.name == "sayso.server._app"]
    assert "sayso._runtime" in {i.target for i in app.imports}, "relative imports are not resolved"
    assert len(_inner()) >= 20


@pytest.mark.parametrize("edge", EDGES)
def test_edges_use_only_the_runtimes_public_verbs(edge: str) -> None:
    """An edge imports neither the store nor SQLAlchemy nor a private module of the runtime package."""
    bad = [
        module.where(i)
        for module in _layer((edge,))
        for i in module.imports
        if _within(i.target, "sayso._store")
        or _within(i.target, "sqlalchemy")
        or i.target.startswith("sayso._runtime.")
    ]
    assert bad == []


def test_nothing_inside_imports_an_edge() -> None:
    """The runtime, core, store and engine never import the server, a protocol or the CLI."""
    inner = _inner()
    assert {"sayso._runtime._facade", "sayso._core.access", "sayso._store._port"} <= {m.name for m in inner}
    bad = [module.where(i) for module in inner for i in module.imports if any(_within(i.target, e) for e in EDGES)]
    assert bad == []


def test_protocol_packages_do_not_import_each_other() -> None:
    """A2A, AG-UI and MCP share only `sayso.protocols` helpers, never each other's modules."""
    bad = [
        module.where(i)
        for protocol in PROTOCOLS
        for module in _layer((protocol,))
        for i in module.imports
        if any(_within(i.target, other) for other in PROTOCOLS if other != protocol)
    ]
    assert bad == []


@pytest.mark.parametrize("edge", EDGES)
def test_no_edge_imports_another(edge: str) -> None:
    """REST, the protocols and the CLI each translate to the runtime alone; what they share (who the caller
    is) lives in the runtime, and only `sayso._serve` mounts them together."""
    bad = [
        module.where(i)
        for module in _layer((edge,))
        for i in module.imports
        if any(_within(i.target, other) for other in EDGES if other != edge)
    ]
    assert bad == []


def _graph() -> dict[str, set[str]]:
    """Which sayso modules each sayso module imports (anywhere in it)."""
    known = {m.name for m in MODULES}
    return {m.name: {i.target for i in m.imports if i.target in known and i.target != m.name} for m in MODULES}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as the modules along it (the first again at the end), or `None`."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(name: str) -> list[str] | None:
        path.append(name)
        on_path.add(name)
        for target in sorted(graph[name]):
            if target in on_path:
                return [*path[path.index(target) :], target]
            if target not in done and (found := visit(target)) is not None:
                return found
        path.pop()
        on_path.discard(name)
        done.add(name)
        return None

    for name in sorted(graph):
        if name not in done and (found := visit(name)) is not None:
            return found
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The finder is no vacuous pass: it names a cycle where there is one, and none where there is none."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycles() -> None:
    """No sayso module imports itself through others, counting imports in functions and under `TYPE_CHECKING`.

    Arrows point one way: a part that must reach back (the engine's gate a delegate, a workflow its
    agent nodes) does it through a port the part above implements and hands down.
    """
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_core_does_no_io_and_imports_no_edge() -> None:
    """The pure core never imports a database, web, CLI, engine or protocol package."""
    core = _layer(("sayso._core",))
    assert len(core) >= 4
    bad = [module.where(i) for module in core for i in module.imports if i.target.split(".")[0] in FORBIDDEN_IN_CORE]
    assert bad == []


MAX_MODULE_LINES = 500
"""Issue 10's ~500-line bound on a module."""


def test_no_module_is_too_long() -> None:
    """Every module under src/sayso stays at most MAX_MODULE_LINES lines, so each holds one concept."""
    long = {
        str(path.relative_to(SRC)): n
        for path in sorted(PACKAGE.rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


MAX_FREE_FORM_DICTS = 90
"""Issue 21's bound on `dict[str, Any]` under src/: it is kept for truly free-form JSON (tool arguments,
payloads, a form's content, stored JSON read back); a shape sayso knows gets a type of its own."""


def test_untyped_dicts_do_not_grow_back() -> None:
    """`dict[str, Any]` is on at most MAX_FREE_FORM_DICTS lines of src/ (the lines `grep -rn` finds it on)."""
    found = {
        str(path.relative_to(SRC)): n
        for path in sorted(SRC.rglob("*.py"))
        if (n := sum("dict[str, Any]" in line for line in path.read_text(encoding="utf-8").splitlines()))
    }
    total = sum(found.values())
    worst = sorted(found.items(), key=lambda item: -item[1])[:8]
    assert total <= MAX_FREE_FORM_DICTS, (
        f"dict[str, Any] is on {total} lines of src/ (at most {MAX_FREE_FORM_DICTS}); type the known shapes "
        f"(a TypedDict, a dataclass, JsonSchemaValue for a JSON Schema). Most in: {worst}"
    )


def test_the_architecture_map_names_every_module() -> None:
    """ARCHITECTURE.md's Rooms section is what `scripts/rooms` generates from the modules' docstrings: a module
    added, moved or renamed without the map being rewritten fails here."""
    script = SRC.parent / "scripts" / "rooms"
    checked = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr


def test_the_top_level_holds_only_the_public_surface() -> None:
    """`src/sayso/` holds the public surface and packages: a private module belongs in the package of its concept."""
    files = sorted(p.name for p in PACKAGE.iterdir() if p.is_file())
    assert files == ["__init__.py", "__main__.py", "exceptions.py", "py.typed"]
