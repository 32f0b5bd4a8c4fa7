#!/usr/bin/env python3
"""Where a sayso approve cycle spends its time.

Runs bench/sayso_cycle.py's loop in this process with:
  - a CPU breakdown per cycle: inside the two `Agent.run` calls, inside store calls (the SQL, the
    store's threads, (de)serializing), and the rest (sayso's runtime between them);
  - cProfile over the timed loop (event-loop thread only), self time grouped by package;
  - the time of every commit on the SQLite store's committer thread (the fsync), and of every write
    transaction that waited for another process's lock on its writer thread;
  - the wall time of every store call (from sayso_cycle.StoreTimes).

Prints a markdown report (and the cycle's JSON line as its last line).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sayso_cycle
from common import default_db, fresh_db

from sayso._store._sql import _tx

WORKER_S: dict[str, float] = defaultdict(float)
WORKER_CPU: dict[str, float] = defaultdict(float)
WORKER_N: dict[str, int] = defaultdict(int)


def _time_writer_thread() -> None:
    """Record the wall and thread CPU time of every job on the store's threads: commits, and writes that waited."""
    write, commit = _tx.SqliteDatabase._write, _tx._commit_here

    def timed(kind: str, job: Any) -> None:
        t, c = time.perf_counter(), time.thread_time()
        try:
            job()
        finally:
            WORKER_S[kind] += time.perf_counter() - t
            WORKER_CPU[kind] += time.thread_time() - c
            WORKER_N[kind] += 1

    def timed_write(self: Any, work: Any, durable: bool) -> Any:
        kind = "whole write, after another process's lock (writer thread)"
        out: list[Any] = []
        timed(kind, lambda: out.append(write(self, work, durable)))
        return out[0]

    def timed_commit(conn: Any) -> None:
        timed("fsynced commit of a durable write (committer thread)", lambda: commit(conn))

    _tx.SqliteDatabase._write = timed_write  # type: ignore[method-assign]  # a benchmark-only instrument
    _tx._commit_here = timed_commit  # a benchmark-only instrument


GROUPS = [
    ("sqlalchemy", "SQLAlchemy (core, compiler, result, async adaption)"),
    ("sqlite3", "sqlite3 (inline on the event loop)"),
    ("pydantic_ai", "pydantic-ai (agent graph, toolsets, messages)"),
    ("pydantic_graph", "pydantic-graph"),
    ("pydantic_core", "pydantic-core (validate/dump)"),
    ("pydantic", "pydantic"),
    ("sayso", "sayso"),
    ("anyio", "anyio"),
    ("selectors", "waiting in select() (for the store's committer thread / fsync)"),
    ("asyncio", "asyncio event loop"),
    ("opentelemetry", "opentelemetry"),
    ("logfire", "logfire"),
    ("bench", "bench harness"),
]


def group_of(filename: str, funcname: str) -> str:
    f = filename.replace("\\", "/")
    if "select" in funcname and ("selectors" in f or funcname.startswith("<method 'poll'") or "epoll" in funcname):
        return "selectors"
    if f == "~":
        if "poll" in funcname or "select" in funcname:
            return "selectors"
        if "sqlite3" in funcname:
            return "sqlite3"
        if "pydantic_core" in funcname or "SchemaValidator" in funcname or "SchemaSerializer" in funcname:
            return "pydantic_core"
        return "builtins"
    for key, _ in GROUPS:
        if f"/{key}/" in f or f.endswith(f"/{key}.py"):
            return key
    if "/bench/" in f:
        return "bench"
    return "other (stdlib etc.)"


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    return await sayso_cycle.run(args)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=300)
    ap.add_argument("--history", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--mode", choices=["split", "warm"], default="split")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    _time_writer_thread()
    ns = argparse.Namespace(
        cycles=args.cycles,
        history=args.history,
        warmup=args.warmup,
        counted=0,
        mode=args.mode,
        dsn=None,
        pg_datadir=None,
        db=default_db(f"sayso-prof-H{args.history}"),
        keep_db=False,
        verify="last",
        profile=os.path.join(tempfile.gettempdir(), f"sayso-cycle-{os.getpid()}.prof"),
    )
    try:
        result = asyncio.run(main_async(ns))
    finally:
        fresh_db(ns.db)
    total_cycles = args.cycles + args.warmup
    n = args.cycles
    st = pstats.Stats(ns.profile)
    os.remove(ns.profile)
    loop_s = result["seconds"]

    by_group: dict[str, float] = defaultdict(float)
    for (filename, _line, funcname), (_cc, _nc, tt, _ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        by_group[group_of(filename, funcname)] += tt
    out = io.StringIO()
    w = out.write
    w(
        f"#### sayso cycle profile: H={args.history}, mode={args.mode}, {n} timed cycles, "
        f"{result['cycles_per_s']} cycles/s under cProfile (p50 {result['p50_ms']} ms)\n\n"
    )
    cpu, agent, store = result["cpu_ms_per_cycle"], result["agent_cpu_ms_per_cycle"], result["store_cpu_ms_per_cycle"]
    w("CPU per cycle by part (process CPU time, all threads; under cProfile, so larger than unprofiled):\n\n")
    w("| part | CPU ms/cycle | share |\n|---|---:|---:|\n")
    for label, ms in (
        ("the two `Agent.run` calls (pydantic-ai with sayso's gate)", agent),
        ("store calls (SQL, commits, history decode, JSON of requests and decisions)", store),
        ("the rest: sayso's runtime between them, the benchmark loop", cpu - agent - store),
    ):
        w(f"| {label} | {ms:.2f} | {ms / cpu:.0%} |\n")
    w(f"| **total** | {cpu:.2f} | 100% |\n\n")
    w("Event-loop thread, self time by package (cProfile; its own overhead inflates Python-heavy parts):\n\n")
    w("| package | ms/cycle | share |\n|---|---:|---:|\n")
    total = sum(by_group.values())
    labels = dict(GROUPS)
    for g, tt in sorted(by_group.items(), key=lambda kv: -kv[1]):
        if tt / total < 0.005:
            continue
        w(f"| {labels.get(g, g)} | {tt / n * 1e3:.2f} | {tt / total:.0%} |\n")
    w(f"| **total (profiled loop {loop_s / n * 1e3:.2f} ms/cycle wall)** | {total / n * 1e3:.2f} | 100% |\n\n")

    w("The store's threads (a durable write's commit, one hop; a whole write that waited for the lock), per cycle:\n\n")
    w("| transaction | per cycle | wall ms/cycle | thread CPU ms/cycle |\n|---|---:|---:|---:|\n")
    scale = 1 / total_cycles
    for k, s in sorted(WORKER_S.items(), key=lambda kv: -kv[1]):
        w(f"| {k} | {WORKER_N[k] * scale:.1f} | {s * scale * 1e3:.3f} | {WORKER_CPU[k] * scale * 1e3:.3f} |\n")
    w("\n(a write that need not wait for the disk runs inline on the event loop when it can, and is then not here)\n\n")

    w("Wall time per store call (includes the hop to the committer thread and the fsync), per cycle:\n\n")
    w("| store call | calls/cycle | ms/cycle |\n|---|---:|---:|\n")
    sm, sc = result["store_ms_per_cycle"], result["store_calls_per_cycle"]
    for k in sorted(sc, key=lambda k: -sm.get(k, 0)):
        w(f"| {k} | {sc[k]:g} | {sm[k]:.2f} |\n")
    w(f"| **total** | {sum(sc.values()):g} | {sm['total']:.2f} |\n\n")

    w(f"Top {args.top} functions by cumulative time (ms per cycle):\n\n```\n")
    rows = []
    for (filename, line, funcname), (_cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        short = filename.split("site-packages/")[-1].split("/src/")[-1]
        rows.append((ct, tt, nc, f"{short}:{line}({funcname})"))
    rows.sort(reverse=True)
    w(f"{'cum ms':>8} {'self ms':>8} {'calls':>7}  function\n")
    shown = 0
    for ct, tt, nc, name in rows:
        if any(s in name for s in ("base_events.py", "events.py", "runners.py", "sayso_cycle.py", "tasks.py")):
            continue
        w(f"{ct / n * 1e3:8.2f} {tt / n * 1e3:8.3f} {nc / n:7.1f}  {name}\n")
        shown += 1
        if shown >= args.top:
            break
    w("```\n")
    print(out.getvalue())
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
