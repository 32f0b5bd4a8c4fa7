"""An instant CLI: `sayso --help` loads typer and rich, never the runtime's heavy stack (issue 27).

The import graph is checked, not the clock: `python -X importtime` names every module a fresh
process imported, so a command that starts pulling in pydantic-ai or the web stack fails here on
any machine, however fast.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ..conftest import EXAMPLE

HEAVY = ("pydantic_ai", "fastapi", "sqlalchemy", "starlette", "a2a", "mcp", "fastmcp", "temporalio")
"""What `--help` must not import: the engine, the web stack, the store's database layer, the protocols, Temporal."""


def imported_by(*args: str) -> set[str]:
    """Every module a fresh `python -X importtime ARGS` imported (its stderr lists each one)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rpartition("|")[2].strip() for line in done.stderr.splitlines() if line.startswith("import time:")} - {
        "package"
    }


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("decide", "--help"),
        ("inbox", "--help"),
        ("audit", "verify", "--help"),
        ("policy", "test", "--help"),
        ("worker", "--help"),
        ("--version",),
    ],
    ids=" ".join,
)
def test_help_imports_nothing_heavy(args: tuple[str, ...]) -> None:
    """`sayso --help`, a command's help and `--version` import no engine, web, database or protocol module."""
    modules = imported_by("-m", "sayso", *args)
    assert "typer" in modules and "sayso.cli._app" in modules  # the walk sees the CLI itself
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == []


def test_a_runtime_without_an_engine_never_imports_temporal() -> None:
    """Building and opening a `Sayso` for a config that names no engine loads no Temporal module."""
    script = "\n".join(
        [
            "import asyncio, sayso",
            "async def main():",
            f"    async with sayso.Sayso.from_yaml({str(EXAMPLE)!r}): pass",
            "asyncio.run(main())",
        ]
    )
    modules = imported_by("-c", script)
    assert "sayso._runtime._facade" in modules
    assert not {m for m in modules if m.split(".")[0] == "temporalio" or m.startswith("sayso._temporal")}


def test_the_walk_sees_a_heavy_import() -> None:
    """The check is no vacuous pass: importing the runtime shows pydantic-ai and SQLAlchemy among the modules."""
    modules = imported_by("-c", "import sayso._runtime")
    assert {"pydantic_ai", "sqlalchemy"} <= modules


def test_import_sayso_is_light_and_every_public_name_resolves() -> None:
    """`import sayso` alone loads none of the heavy stack; every name of `__all__` then imports from it, `dir`
    lists them all, and an unknown name is an AttributeError."""
    assert not {m for m in imported_by("-c", "import sayso") if m.split(".")[0] in HEAVY}
    script = """
import json, sayso
names = {}
for name in sayso.__all__:
    exec(f"from sayso import {name} as value", globals())
    names[name] = getattr(sayso, name) is value and value is not None
try:
    sayso.NoSuchName
    unknown = "resolved"
except AttributeError as exc:
    unknown = str(exc)
print(json.dumps({"names": names, "dir": sorted(set(sayso.__all__) - set(dir(sayso))), "unknown": unknown}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    seen = json.loads(done.stdout)
    assert len(seen["names"]) == len(__import__("sayso").__all__) > 50
    assert [name for name, ok in seen["names"].items() if not ok] == []
    assert seen["dir"] == []
    assert "NoSuchName" in seen["unknown"]


def test_the_default_a2a_client_is_registered_without_the_runtime() -> None:
    """The package root still plugs the A2A client into the runtime's port, even when the runtime is imported
    directly (as the CLI does), so a config naming a remote delegate loads."""
    from sayso._runtime import DEFAULT_REMOTE_AGENTS

    assert DEFAULT_REMOTE_AGENTS, "no default A2A client registered"
    assert type(DEFAULT_REMOTE_AGENTS[-1]()).__name__ == "A2ARemoteAgents"
