"""`sayso check`: a config's problems as loading finds them, and whether its store answers, printed with their fix.

With `engine: temporal`, whether its cluster answers and a worker polls its task queue is said too.

Apart from `_app` so the command's module stays one screen per command; `check` hands it the consoles.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from ..exceptions import ConfigError, SaysoError, SchemaTooNew

if TYPE_CHECKING:
    from .._config.checks import ConfigProblem
    from .._config.file import Config


def check_config_file(path: str, *, as_json: bool, out: Console, err: Console) -> bool:
    """Print the problems of the config at `path`; whether it is ready (no errors).

    A config that does not load (its YAML, its shape) is said without building or opening anything. A
    config that loads is checked as loading checks it, then its store is reached, unless a problem of
    the store's URL or folder already stops it from opening.
    """
    from .._config.checks import check_config
    from .._config.file import load_config

    try:
        loaded = load_config(path)
    except ConfigError as exc:
        if as_json:
            print(json.dumps({"ok": False, "error": str(exc), "problems": []}, ensure_ascii=False))
        else:
            err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return False
    problems = check_config(loaded)
    if not any(p.where == "store" and p.severity == "error" for p in problems):
        problems += _unreachable_store(loaded)
    if loaded.engine.temporal is not None:
        problems += _unreachable_temporal(loaded)
    failed = any(p.severity == "error" for p in problems)
    if as_json:
        shown = [{**asdict(p), "file": str(p.file) if p.file else None} for p in problems]
        print(json.dumps({"ok": not failed, "problems": shown}, ensure_ascii=False))
        return not failed
    for problem in problems:
        colour = {"error": "red", "warning": "yellow", "note": "cyan"}[problem.severity]
        text = escape(str(problem)).replace(f"{problem.severity}:", f"[{colour}]{problem.severity}:[/{colour}]", 1)
        (err if problem.severity == "error" else out).print(text, highlight=False, soft_wrap=True)
    counts = {s: sum(p.severity == s for p in problems) for s in ("error", "warning", "note")}
    summary = ", ".join(f"{n} {s}(s)" for s, n in counts.items() if n)
    if failed:
        err.print(f"[red]{escape(path)}: {summary}[/red]", highlight=False, soft_wrap=True)
        return False
    agents = ", ".join(loaded.agents)
    if loaded.workflows:
        agents += f"; workflows: {', '.join(loaded.workflows)}"
    tail = f"; {summary}" if summary else ""
    out.print(f"[green]{escape(path)} is ready[/green] (agents: {agents}){tail}", highlight=False, soft_wrap=True)
    return True


def _unreachable_store(config: Config) -> list[ConfigProblem]:
    """The store as an error when it cannot be reached: a config whose store is down was said to be ready.

    The store is reached, not opened (`Inbox.reach`): within a few seconds, and nothing is created or
    migrated, so checking a config leaves no SQLite file and no tables behind.
    """
    import anyio

    from .._config.checks import ConfigProblem
    from .._core.store_urls import StoreUrl, read_store_url
    from .._runtime import Inbox

    try:
        anyio.run(Inbox(config).reach)
    except SaysoError as exc:  # a StoreError: unreachable, not a database, or no answer in time
        store = read_store_url(config.store_url(), base_dir=config.base_dir)
        # SQLite's reasons say what to change, as does a schema a newer sayso migrated; a database server's
        # (`Connection refused`) do not.
        said = isinstance(exc, SchemaTooNew) or (isinstance(store, StoreUrl) and store.backend == "sqlite")
        fix = "" if said else "start the database, or point the store (store:, or SAYSO_STORE) at one that answers"
        line = config.line_of(("store",))
        return [
            ConfigProblem(severity="error", where="store", message=str(exc), fix=fix, file=config.source, line=line)
        ]
    return []


def _unreachable_temporal(config: Config) -> list[ConfigProblem]:
    """The Temporal cluster as an error when it or its namespace is out of reach; a warning when no worker polls.

    A config whose cluster was down, or that named no namespace of it, was said to be ready. Nothing
    is started or sent: the cluster is asked who polls the task queue, as a front asks before it
    hands a run over.
    """
    import functools

    import anyio

    from .._config.checks import ConfigProblem

    settings = config.engine.temporal
    assert settings is not None
    found = functools.partial(ConfigProblem, file=config.source, line=config.line_of(("engine", "temporal")))
    try:
        from .._temporal import TemporalFront
    except ImportError:
        fix = "pip install 'sayso[temporal]'"
        return [found(severity="error", where="engine.temporal", message="needs the Temporal extra", fix=fix)]
    try:
        polled = anyio.run(TemporalFront(settings).reach)
    except SaysoError as exc:  # a StoreError: out of reach, no answer in time, or no such namespace
        fix = "start the cluster, or point engine.temporal (address, namespace) at one that answers"
        return [found(severity="error", where="engine.temporal", message=str(exc), fix=fix)]
    if polled:
        return []
    message = f"no worker polls task queue {settings.task_queue!r} yet: runs and decisions are refused until one does"
    fix = "start `sayso worker` with this config"
    return [found(severity="warning", where="engine.temporal.task_queue", message=message, fix=fix)]
