"""An instant CLI: `sayso --help` loads typer and rich, never the runtime's heavy stack (issue 27).

Commands that only read the store (`inbox`, `audit`, `grants`) open a store-only runtime: no engine,
no agents, no web stack; `inbox` on a SQLite store whose schema is current not even SQLAlchemy, nor the
store's write side or the runtime's kernel. `decide` on an agent's run loads no workflow engine.

The import graph is checked, not the clock: `python -X importtime` names every module a fresh
process imported, so a command that starts pulling in pydantic-ai or the web stack fails here on
any machine, however fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sayso.cli import app
from sayso.cli._app import app_for

from ..conftest import EXAMPLE

HEAVY = ("pydantic_ai", "fastapi", "sqlalchemy", "starlette", "a2a", "mcp", "fastmcp", "temporalio")
"""What `--help` must not import: the engine, the web stack, the store's database layer, the protocols, Temporal."""


def imported_by(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """Every module a fresh `python -X importtime ARGS` imported (its stderr lists each one)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=120, check=False, env=env
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
    """The check is no vacuous pass: importing the runtime's facade shows pydantic-ai among the modules."""
    modules = imported_by("-c", "from sayso._runtime import Sayso")
    assert "pydantic_ai" in modules


@pytest.fixture(scope="module")
def paused_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    """The starter project with one run paused on its refund approval (the store exists, its schema current),
    and the environment that points every command at that store."""
    folder = tmp_path_factory.mktemp("starter")
    env = {**os.environ, "SAYSO_STORE": f"sqlite:///{folder / 'sayso.db'}"}
    sayso = [sys.executable, "-m", "sayso"]
    subprocess.run([*sayso, "init", str(folder)], capture_output=True, check=True, timeout=120, env=env)
    config = str(folder / "sayso.yaml")
    done = subprocess.run(
        [*sayso, "run", config, "refund A-100 25", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    )
    assert json.loads(done.stdout)["status"] == "paused"
    return config, env


def test_inbox_reads_the_store_without_the_engine_or_sqlalchemy(paused_store: tuple[str, dict[str, str]]) -> None:
    """`sayso inbox` lists the open request through the store's inbox alone: no pydantic-ai, SQLAlchemy, Alembic
    or web module is imported, nor the store's write side or the runtime's kernel (`INBOX_NEVER`), and what it
    prints is the paused run's request."""
    config, env = paused_store
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sayso", "inbox", config, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
    )
    requests = json.loads(done.stdout)["requests"]
    assert [r["tool_name"] for r in requests] == ["refund"]
    modules = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "sayso._store._sql._listings" in modules  # the walk sees the store
    assert sorted(m for m in modules if m.split(".")[0] in (*HEAVY, "alembic")) == []
    assert sorted(modules & INBOX_NEVER) == []


INBOX_NEVER = {
    "sayso._store._port",
    "sayso._store._primitives",
    "sayso._store._ops",
    "sayso._store._dispatch",
    "sayso._store._verbs",
    "sayso._store._sql._base",
    "sayso._store._sql._prims",
    "sayso._store._sql._store",
    "sayso._runtime._kernel",
    "sayso._runtime._reading",
    "sayso._core.deciding",
    "sayso._core.resume",
}
"""What `sayso inbox` does without: the store's port, primitives, operations and business verbs (its SQL write
side), the runtime's kernel and reading verbs, and the decide rule with the resume plan beneath it."""


def test_decide_loads_only_what_resuming_an_agent_needs(paused_store: tuple[str, dict[str, str]]) -> None:
    """`sayso decide` approving an agent's paused run finishes it without loading the web stack, a protocol,
    Temporal, the in-memory store, the webhook signer (the starter sends no webhook), the workflow engine and
    its host (the starter has no workflows) or the verbs it does not call (`DECIDE_NEVER`)."""
    config, env = paused_store
    sayso = [sys.executable, "-m", "sayso"]
    paused = subprocess.run(
        [*sayso, "run", config, "refund A-100 25", "--json"], capture_output=True, text=True, check=True, env=env
    )
    request_id = json.loads(paused.stdout)["requests"][0]["id"]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sayso", "decide", config, request_id, "approve", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
    )
    assert json.loads(done.stdout)["status"] == "completed"
    modules = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "pydantic_ai" in modules and "sayso._runtime._facade" in modules  # the walk sees the engine
    unwanted = ("fastapi", "starlette", "a2a", "mcp", "fastmcp", "temporalio", "standardwebhooks")
    assert sorted(m for m in modules if m.split(".")[0] in unwanted) == []
    assert sorted(m for m in modules if m.startswith(("sayso._store._memory", "sayso.protocols", "sayso.server"))) == []
    workflow_engine = ("sayso.workflows._engine", "sayso.workflows._state", "sayso._runtime._workflow")
    assert sorted(m for m in modules if m.startswith(workflow_engine)) == []  # the starter has no workflows
    assert sorted(modules & DECIDE_NEVER) == []


DECIDE_NEVER = {
    "sayso._runtime._verbs.start",
    "sayso._runtime._verbs.answer",
    "sayso._runtime._verbs.cancel",
    "sayso._runtime._verbs.recover",
    "sayso._runtime._verbs.escalate",
    "sayso._runtime._verbs.expire",
    "sayso._runtime._watch",
    "sayso._runtime._links",
    "sayso._core.links",
    "sayso._runtime._outbox",
    "sayso._runtime._notices",
}
"""The facade's verbs `sayso decide` does not call, which `Sayso`'s methods import when first called: starting a
run, answering a pause, cancelling, recovery, expiry and escalation, watching, mailed links, and the outbox's
claims for a webhook sender."""


@pytest.mark.parametrize("args", [("audit", "verify"), ("audit", "list"), ("grants", "list"), ("stats",)], ids=" ".join)
def test_reading_commands_build_no_agent(paused_store: tuple[str, dict[str, str]], args: tuple[str, ...]) -> None:
    """The audit, grant and approval-statistics listings read the store without the engine, the web stack or a
    protocol."""
    config, env = paused_store
    modules = imported_by("-m", "sayso", *args, config, env=env)
    assert "sayso._store._sql._store" in modules
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY and m.split(".")[0] != "sqlalchemy") == []


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
    from sayso import Config
    from sayso._runtime import DEFAULT_REMOTE_AGENTS

    assert DEFAULT_REMOTE_AGENTS, "no default A2A client registered"
    assert type(DEFAULT_REMOTE_AGENTS[-1](Config.model_validate({"agents": {"a": {}}}))).__name__ == "A2ARemoteAgents"


def test_the_store_and_core_adapters_are_built_when_first_used() -> None:
    """Importing the store (what every command that reads it does) builds none of the core's type adapters:
    `sayso inbox` decodes requests, never a decision, a vote, a run's client tools or a remote task, so it
    does not pay for their validators. Once used, each decodes what it encoded."""
    script = """
import json
from sayso import _store
from sayso._core.audit_events import AUDIT_EVENT_ADAPTER
from sayso._core.decisions import DECISION_ADAPTER, Approve
from sayso._core.requests import CLIENT_TOOLS_ADAPTER, REQUEST_ADAPTER, ClientTool
from sayso._core.votes import VOTE_ADAPTER, Vote
from sayso._store._records import RemoteTask
from sayso._store._verbs._runs import REMOTE_TASK_ADAPTER
adapters = {"audit": AUDIT_EVENT_ADAPTER, "decision": DECISION_ADAPTER, "client_tools": CLIENT_TOOLS_ADAPTER,
            "request": REQUEST_ADAPTER, "vote": VOTE_ADAPTER, "remote_task": REMOTE_TASK_ADAPTER}
built = sorted(name for name, adapter in adapters.items() if adapter.pydantic_complete)
values = [
    (DECISION_ADAPTER, Approve(scope="thread")),
    (CLIENT_TOOLS_ADAPTER, (ClientTool(name="pick"),)),
    (VOTE_ADAPTER, Vote(request_id="req_1", principal="ana", decision="approve", round=0, voted_at=1.0)),
    (REMOTE_TASK_ADAPTER, RemoteTask(url="http://127.0.0.1:1/", task_id="t", context_id="c")),
]
same = [adapter.validate_json(adapter.dump_json(value)) == value for adapter, value in values]
print(json.dumps({"built": built, "same": same}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert seen["built"] == []
    assert seen["same"] == [True, True, True, True]


COLLECTOR_PROBE = """
import gc, json, sys
from sayso.cli._startup import collector_paused
if sys.argv[1] == "host-paused":
    gc.disable()
frozen = gc.get_freeze_count()
with collector_paused():
    paused = not gc.isenabled()
    import sayso._store
    built = [[i] for i in range(1000)]
after = {"paused_inside": paused, "enabled": gc.isenabled(), "newly_frozen": gc.get_freeze_count() - frozen}
class Cycle:
    other: object
a, b = Cycle(), Cycle()
a.other, b.other = b, a
del a, b
after["collected_later"] = gc.collect() >= 2
print(json.dumps(after))
"""


@pytest.mark.parametrize("entry", ["the sayso command", "a host process", "a host that paused the collector"])
def test_a_command_freezes_what_it_built_while_the_collector_was_paused(entry: str, tmp_path: Path) -> None:
    """A command's imports are built with the collector paused; run as the `sayso` command, they are then frozen
    out of later collections (the collector no longer walks them on every pass), and garbage made afterwards is
    still collected. A host calling the CLI in-process keeps its heap as it was: nothing frozen, the collector
    back on, or still off if the host had turned it off."""
    script = tmp_path / ("sayso" if entry == "the sayso command" else "host.py")
    script.write_text(COLLECTOR_PROBE)
    mode = "host-paused" if entry == "a host that paused the collector" else "collecting"
    done = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert seen["paused_inside"] is True
    assert seen["enabled"] is (mode == "collecting")
    if entry == "the sayso command":
        assert seen["newly_frozen"] > 1000  # the store's modules and the lists built under the pause
    else:
        assert seen["newly_frozen"] <= 0  # frozen objects may only die meanwhile
    assert seen["collected_later"] is True


@pytest.mark.parametrize(
    "args",
    [
        ("inbox", "--help"),
        ("run",),
        ("decide", str(EXAMPLE), "not-an-id", "approve"),
        ("grants", "--help"),
        ("audit", "verify", "--help"),
        ("check", str(EXAMPLE)),
    ],
    ids=" ".join,
)
def test_a_command_is_built_alone_and_answers_as_in_the_whole_app(args: tuple[str, ...]) -> None:
    """`sayso CMD ...` builds only CMD's options (typer builds every command it is given before it dispatches),
    and says what the whole app says: the same help, the same usage error, the same exit code."""
    alone = app_for(args)
    assert [c.callback.__name__ for c in alone.registered_commands if c.callback] + [
        g.name for g in alone.registered_groups
    ] == [args[0]]
    whole, only = CliRunner().invoke(app, list(args)), CliRunner().invoke(alone, list(args))
    assert (only.exit_code, only.stdout, only.stderr) == (whole.exit_code, whole.stdout, whole.stderr)


@pytest.mark.parametrize("args", [(), ("--help",), ("--version",), ("inbx", "x")], ids=lambda a: " ".join(a) or "none")
def test_no_command_named_gets_the_whole_app(args: tuple[str, ...]) -> None:
    """Without a command first, `sayso` is the whole app: `--help` lists every command, a typo gets click's
    `No such command ... Did you mean`."""
    assert app_for(args) is app
