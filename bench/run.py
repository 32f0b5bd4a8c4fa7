#!/usr/bin/env python3
"""Run sayso and both anchors on the approve-cycle workload, side by side, and report ratios.

  bench/run.py            # the whole bench (make bench): throughput at H=0/50/500 (median of
                          # --repeats runs, implementations interleaved), growth up to H=2000,
                          # footprint at 100,000 paused runs, one profile; writes bench/RESULTS.md
  bench/run.py --quick    # make bench-quick: H=0, three interleaved runs each, one H=500 point
                          # (sayso and LangGraph), a couple of minutes; the last line printed is
                          # one JSON object (medians, CPU ms per cycle, vs_langgraph_h500, the
                          # CLI's start-up ratios from bench/cli_start.py)

Every run is its own process pinned to core 0 (`taskset -c 0`, BENCH_PIN=0 to not pin), like the
anchors' published figures. Raw JSON lines go to bench/results/.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from importlib.metadata import version
from typing import Any

import cli_start

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = sys.executable
SCRIPTS = {
    "sayso": os.path.join(HERE, "sayso_cycle.py"),
    "sayso-warm": os.path.join(HERE, "sayso_cycle.py"),
    "langgraph": os.path.join(HERE, "anchors", "langgraph_cycle.py"),
    "pydantic-ai": os.path.join(HERE, "anchors", "pydanticai_cycle.py"),
    "sayso-pg": os.path.join(HERE, "sayso_cycle.py"),
    "langgraph-pg": os.path.join(HERE, "langgraph_pg_cycle.py"),
}
EXTRA = {"sayso-warm": ["--mode", "warm"]}
LABEL = {
    "sayso": "sayso",
    "sayso-warm": "sayso (warm)",
    "langgraph": "LangGraph",
    "pydantic-ai": "pydantic-ai",
    "sayso-pg": "sayso (PG)",
    "langgraph-pg": "LangGraph (PG)",
}


def pin() -> list[str]:
    if os.environ.get("BENCH_PIN", "1") != "1" or shutil.which("taskset") is None:
        return []
    return ["taskset", "-c", "0"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_one(
    impl: str, history: int, cycles: int, warmup: int, sink: Any, extra: list[str] | None = None
) -> dict[str, Any]:
    probe = [] if impl.startswith("sayso") or impl.endswith("-pg") else [os.path.join(HERE, "cpu_probe.py")]
    cmd = [
        *pin(),
        PY,
        *probe,
        SCRIPTS[impl],
        "--cycles",
        str(cycles),
        "--history",
        str(history),
        "--warmup",
        str(warmup),
        *EXTRA.get(impl, []),
        *(extra or []),
    ]
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res.stderr[-4000:]}")
    row = json.loads(res.stdout.strip().splitlines()[-1])
    row["impl"] = impl  # sayso --mode warm reports impl "sayso"
    row["wall_s"] = round(time.perf_counter() - t, 1)
    if sink is not None:
        sink.write(json.dumps(row) + "\n")
        sink.flush()
    log(
        f"  {LABEL[impl]:<14} H={history:<5} {row['cycles_per_s']:>7} cycles/s  "
        f"CPU {row.get('cpu_ms_per_cycle')} ms/cycle  p50 {row['p50_ms']:>8} ms  "
        f"({row['wall_s']} s)"
    )
    return row


WORKFLOW_SCRIPTS = {
    "sayso": os.path.join(HERE, "workflow_cycle.py"),
    "langgraph": os.path.join(HERE, "workflow_langgraph.py"),
}


def run_workflow(impl: str, cycles: int, warmup: int) -> dict[str, Any]:
    """One run of the workflow cycle (three nodes, one input pause) for sayso or LangGraph."""
    cmd = [*pin(), PY, WORKFLOW_SCRIPTS[impl], "--cycles", str(cycles), "--warmup", str(warmup)]
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res.stderr[-4000:]}")
    row: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    log(
        f"  {LABEL[impl]:<14} workflow {row['cycles_per_s']:>7} cycles/s  CPU {row['cpu_ms_per_cycle']} ms/cycle  "
        f"p50 {row['p50_ms']:>8} ms  ({round(time.perf_counter() - t, 1)} s)"
    )
    return row


def workflows(repeats: int, cycles: int) -> dict[str, Any]:
    """The workflow cycle, sayso and LangGraph in a rotating order, `repeats` times; medians and ratios."""
    log(f"workflow cycle: three nodes, one input pause, {cycles} cycles, {repeats} runs each")
    impls = ("sayso", "langgraph")
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rep in range(repeats):
        for impl in impls[rep % 2 :] + impls[: rep % 2]:
            rows[impl].append(run_workflow(impl, cycles, 10))
    medians = {impl: {k: med(rows[impl], k) for k in ("cycles_per_s", "cpu_ms_per_cycle", "p50_ms")} for impl in impls}
    return {
        "kind": "workflow",
        "cycles": cycles,
        "repeats": repeats,
        "medians": medians,
        "vs_langgraph": round(medians["sayso"]["cycles_per_s"] / medians["langgraph"]["cycles_per_s"], 3),
        "cpu_vs_langgraph": round(medians["langgraph"]["cpu_ms_per_cycle"] / medians["sayso"]["cpu_ms_per_cycle"], 3),
        "runs": rows,
    }


def json_of(script: str, what: str) -> dict[str, Any]:
    """Run a bench script in its own process (it pins itself); the JSON object its last line prints."""
    log(what)
    res = subprocess.run([PY, os.path.join(HERE, script)], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"{script} failed:\n{res.stderr[-4000:]}")
    row: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return row


def agent_pair() -> dict[str, Any]:
    """sayso's two `Agent.run` calls against a bare pydantic-ai pair, CPU ms, in one pinned process."""
    res = subprocess.run([*pin(), PY, os.path.join(HERE, "agent_pair.py")], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"agent_pair.py failed:\n{res.stderr[-4000:]}")
    row: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    log(f"  agent pair: sayso {row['sayso_cpu_ms']} ms, bare {row['bare_cpu_ms']} ms CPU, {row['ratio']}x")
    return row


def engine_costs() -> dict[str, Any]:
    """What pydantic-ai charges for one more capability and for a deferral raised by the tool, in one pinned process."""
    cmd = [*pin(), PY, os.path.join(HERE, "engine_costs.py")]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"engine_costs.py failed:\n{res.stderr[-4000:]}")
    row: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    log(f"  engine costs: {row['cpu_ms_per_pair']}")
    return row


def fsync_probe(n: int = 300) -> float:
    """ms per committed 1 KB insert with WAL + synchronous=FULL in the temp folder (what each fsynced commit costs)."""
    path = os.path.join(tempfile.gettempdir(), "bench_anchors", f"fsync-{os.getpid()}.sqlite")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    c = sqlite3.connect(path)
    try:
        c.execute("PRAGMA journal_mode=WAL")
        c.execute("PRAGMA synchronous=FULL")
        c.execute("CREATE TABLE t (x BLOB)")
        c.commit()
        t = time.perf_counter()
        for _ in range(n):
            c.execute("INSERT INTO t VALUES (?)", (b"x" * 1000,))
            c.commit()
        return (time.perf_counter() - t) / n * 1e3
    finally:
        c.close()
        for s in ("", "-wal", "-shm"):
            if os.path.exists(path + s):
                os.remove(path + s)


def pg_version() -> str:
    """The PostgreSQL server the PostgreSQL parts start (Debian's binaries), or 'missing'."""
    from glob import glob

    found = sorted(glob("/usr/lib/postgresql/*/bin/postgres"))
    if not found:
        return "missing"
    out = subprocess.run([found[-1], "--version"], capture_output=True, text=True, check=False).stdout
    return out.split(")", 1)[-1].strip().split(" ", 1)[0] or "?"  # "postgres (PostgreSQL) 15.18-0+deb12u1)"


def machine() -> dict[str, Any]:
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal"):
                mem = int(line.split()[1]) * 1024
    vers = {"postgresql": pg_version()}
    for p in (
        "sayso",
        "pydantic-ai-slim",
        "pydantic",
        "sqlalchemy",
        "asyncpg",
        "langgraph",
        "langgraph-checkpoint",
        "langgraph-checkpoint-sqlite",
        "langgraph-checkpoint-postgres",
        "psycopg",
        "langchain-core",
    ):
        try:
            vers[p] = version(p)
        except Exception:
            vers[p] = "missing"
    return {
        "commit": git_rev(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "mem_gib": round(mem / 2**30),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "versions": vers,
        "fsync_ms": round(fsync_probe(), 3),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "pinned": " ".join(pin()) or "no",
        "via_make": bool(os.environ.get("BENCH_VIA_MAKE")),
    }


def med(rows: list[dict[str, Any]], key: str) -> float:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else float("nan")


def git_rev() -> str:
    try:
        return subprocess.run(
            ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except Exception:
        return "?"


# ----------------------------------------------------------------------------------------- quick


def quick(args: argparse.Namespace) -> None:
    """H=0 only: each implementation `--quick-repeats` times, interleaved; medians, last line one JSON object."""
    impls = ("sayso", "langgraph", "pydantic-ai")
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rep in range(args.quick_repeats):
        for impl in impls[rep % 3 :] + impls[: rep % 3]:
            rows[impl].append(run_one(impl, 0, args.quick_cycles, 10, None))
    h500: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rep in range(args.quick_repeats):
        for impl in ("sayso", "langgraph")[rep % 2 :] + ("sayso", "langgraph")[: rep % 2]:
            h500[impl].append(run_one(impl, 500, args.quick_h500_cycles, 5, None))
    s500, lg500 = (med(h500[k], "cycles_per_s") for k in ("sayso", "langgraph"))
    pair = agent_pair()
    s, lg, pa = (med(rows[k], "cycles_per_s") for k in impls)
    cpu = {k: med(rows[k], "cpu_ms_per_cycle") for k in impls}
    sayso = rows["sayso"]
    flows = workflows(args.quick_repeats, args.quick_cycles)
    ws, wlg = (flows["medians"][k]["cycles_per_s"] for k in ("sayso", "langgraph"))
    print(f"| H=0, {args.quick_cycles} cycles, median of {args.quick_repeats} | sayso | LangGraph | pydantic-ai |")
    print("|---|---:|---:|---:|")
    print(f"| cycles/s | {s} | {lg} | {pa} |")
    print(f"| CPU ms/cycle | {cpu['sayso']} | {cpu['langgraph']} | {cpu['pydantic-ai']} |")
    p50 = {k: med(rows[k], "p50_ms") for k in impls}
    print(f"| p50 ms | {p50['sayso']} | {p50['langgraph']} | {p50['pydantic-ai']} |")
    print(
        f"| file growth B/cycle | {med(sayso, 'bytes_per_cycle')} | {med(rows['langgraph'], 'bytes_per_cycle')} "
        f"| {med(rows['pydantic-ai'], 'bytes_per_cycle')} |"
    )
    print(f"| workflow cycles/s | {ws} | {wlg} | – |")
    print(f"| H=500 cycles/s ({args.quick_h500_cycles} cycles) | {s500} | {lg500} | – |")
    wcpu = {k: flows["medians"][k]["cpu_ms_per_cycle"] for k in ("sayso", "langgraph")}
    print(f"| workflow CPU ms/cycle | {wcpu['sayso']} | {wcpu['langgraph']} | – |")
    print(
        f"\nsayso's agent pair {pair['sayso_cpu_ms']} ms CPU vs a bare pydantic-ai pair {pair['bare_cpu_ms']} ms: "
        f"{pair['ratio']}x (median of {pair['blocks']} interleaved blocks)"
    )
    cli = cli_start.measure(5)
    print(
        f"sayso --help {cli['cli_help_vs_import']}x, inbox {cli['cli_inbox_vs_import']}x, decide "
        f"{cli['cli_decide_vs_import']}x `import pydantic_ai` ({cli['cli_import_pydantic_ai_s']} s; medians of 5); "
        f"pydantic-ai's part of a resume alone {cli['cli_bare_resume_vs_import']}x"
    )
    print(
        json.dumps(
            {
                "history": 0,
                "cycles": args.quick_cycles,
                "repeats": args.quick_repeats,
                "sayso_cycles_per_s": s,
                "langgraph_cycles_per_s": lg,
                "pydantic_ai_cycles_per_s": pa,
                "vs_langgraph": round(s / lg, 3),
                "vs_pydantic_ai": round(s / pa, 3),
                "sayso_h500_cycles_per_s": s500,
                "langgraph_h500_cycles_per_s": lg500,
                "vs_langgraph_h500": round(s500 / lg500, 3),
                "cpu_vs_langgraph_h500": round(
                    med(h500["langgraph"], "cpu_ms_per_cycle") / med(h500["sayso"], "cpu_ms_per_cycle"), 3
                ),
                "cpu_ms_per_cycle": cpu["sayso"],
                "langgraph_cpu_ms_per_cycle": cpu["langgraph"],
                "pydantic_ai_cpu_ms_per_cycle": cpu["pydantic-ai"],
                "cpu_vs_langgraph": round(cpu["langgraph"] / cpu["sayso"], 3),
                "cpu_vs_pydantic_ai": round(cpu["pydantic-ai"] / cpu["sayso"], 3),
                "sayso_statements_per_cycle": med(sayso, "statements_per_cycle"),
                "sayso_transactions_per_cycle": med(sayso, "transactions_per_cycle"),
                "sayso_fsyncs_per_cycle": med(sayso, "fsyncs_per_cycle"),
                "sayso_commits_per_cycle": med(sayso, "commits_per_cycle"),
                "sayso_bytes_per_cycle": med(sayso, "bytes_per_cycle"),
                "sayso_payload_bytes_per_cycle": med(sayso, "payload_bytes_per_cycle"),
                "sayso_disk_write_bytes_per_cycle": med(sayso, "disk_write_bytes_per_cycle"),
                "sayso_p50_ms": med(sayso, "p50_ms"),
                "workflow_sayso_cycles_per_s": ws,
                "workflow_langgraph_cycles_per_s": wlg,
                "workflow_vs_langgraph": flows["vs_langgraph"],
                "workflow_cpu_ms_per_cycle": wcpu["sayso"],
                "workflow_langgraph_cpu_ms_per_cycle": wcpu["langgraph"],
                "workflow_cpu_vs_langgraph": flows["cpu_vs_langgraph"],
                "agent_pair_ratio": pair["ratio"],
                "agent_pair_cpu_ms": pair["sayso_cpu_ms"],
                "bare_agent_pair_cpu_ms": pair["bare_cpu_ms"],
            }
            | cli
        ),
        flush=True,
    )


# ------------------------------------------------------------------------------------------ full

CYCLES = {0: 600, 50: 300, 500: 100, 2000: 25}


def full(args: argparse.Namespace) -> None:
    started = dt.datetime.now(dt.UTC)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    stamp = started.strftime("%Y-%m-%dT%H%M")
    raw_path = os.path.join(HERE, "results", f"{stamp}.jsonl")
    log(f"machine probe ... raw results -> {os.path.relpath(raw_path, ROOT)}")
    info = machine()
    runs: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    scale = args.scale
    with open(raw_path, "w") as sink:
        sink.write(json.dumps({"machine": info, "argv": sys.argv, "started": started.isoformat()}) + "\n")
        for rep in range(args.repeats):
            for h in args.histories:
                n = max(5, int(CYCLES.get(h, 25) * scale))
                impls = (
                    ["sayso", "sayso-warm", "langgraph", "pydantic-ai"]
                    if h in args.throughput
                    else ["sayso", "langgraph", "pydantic-ai"]
                )
                log(f"rep {rep + 1}/{args.repeats}, H={h}, {n} cycles")
                for impl in impls[rep % len(impls) :] + impls[: rep % len(impls)]:  # rotate the order per rep
                    runs[(impl, h)].append(run_one(impl, h, n, 20 if h < 2000 else 5, sink))
        if not args.no_postgres:
            postgres_column(args, runs, sink, scale)
        foot, prof_md, extras = sections(args, sink, scale)
    info["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    with open(raw_path, "a") as sink:
        sink.write(json.dumps({"load_avg_end": info["load_avg_end"]}) + "\n")
    write_report(args, info, runs, foot, prof_md, started, raw_path, extras)


def sections(args: argparse.Namespace, sink: Any, scale: float) -> tuple[Any, list[str], dict[str, Any]]:
    """Everything after the throughput matrix: agent pair, load, scale, footprint, profiles, store costs."""
    extras: dict[str, Any] = {"agent_pair": agent_pair()}
    log("CLI start-up: bench/cli_start.py, medians of 5")
    extras["cli_start"] = {"kind": "cli_start", **cli_start.measure(5)}
    extras["engine_costs"] = engine_costs()
    extras["workflow"] = workflows(args.repeats, max(50, int(300 * scale)))
    if not args.no_temporal:
        extras["temporal"] = json_of("temporal_cycle.py", "the approve cycle on Temporal, 1 and 3 workers")
        log(f"  {json.dumps(extras['temporal']['rows'])}")
    if not args.no_load:
        extras["load"] = json_of("load.py", "server under load: bench/load.py (SQLite and PostgreSQL)")
    if not args.no_soak:
        extras["soak"] = json_of("soak.py", "soak: 20 clients for 30 minutes, the server's RSS start -> end")
        log(f"  {json.dumps(extras['soak'])}")
    if not args.no_scale:
        extras["scale_pg"] = json_of("scale_pg.py", "scale on PostgreSQL: 10 to 1,000,000 paused runs")
        log(f"  {json.dumps(extras['scale_pg']['summary'])}")
    foot = None
    if not args.no_footprint:
        log(f"footprint: 10 and {args.paused:,} paused runs")
        res = subprocess.run(
            [PY, os.path.join(HERE, "footprint.py"), "--paused", str(args.paused)],
            capture_output=True,
            text=True,
            check=False,
        )
        if res.returncode != 0:
            raise SystemExit(f"footprint failed:\n{res.stderr[-4000:]}")
        foot = json.loads(res.stdout.strip().splitlines()[-1])
        sink.write(json.dumps(foot) + "\n")
        log(f"  {json.dumps(foot['summary'])}")
    prof_md: list[str] = []
    if not args.no_profile:
        for h, n in ((0, int(300 * scale) or 50), (500, int(60 * scale) or 20)):
            log(f"profile H={h}")
            res = subprocess.run(
                [*pin(), PY, os.path.join(HERE, "profile_cycle.py"), "--cycles", str(n), "--history", str(h)],
                capture_output=True,
                text=True,
                check=False,
            )
            if res.returncode != 0:
                raise SystemExit(f"profile failed:\n{res.stderr[-4000:]}")
            lines = res.stdout.rstrip().splitlines()
            prof_md.append("\n".join(lines[:-1]).strip())
            sink.write(json.dumps({"profile": h, "markdown": prof_md[-1], **json.loads(lines[-1])}) + "\n")
        log("store round-trip costs")
        res = subprocess.run(
            [*pin(), PY, os.path.join(HERE, "store_overhead.py")], capture_output=True, text=True, check=False
        )
        if res.returncode != 0:
            raise SystemExit(f"store_overhead failed:\n{res.stderr[-4000:]}")
        extras["store_overhead"] = json.loads(res.stdout.strip().splitlines()[-1])
    for value in extras.values():
        sink.write(json.dumps(value) + "\n")
    return foot, prof_md, extras


PG_CYCLES = {0: 300, 500: 60}


def postgres_column(
    args: argparse.Namespace, runs: dict[tuple[str, int], list[dict[str, Any]]], sink: Any, scale: float
) -> None:
    """The same cycle on PostgreSQL: sayso and LangGraph's PostgresSaver on one throwaway server, interleaved."""
    from pg import postgres_server

    log("PostgreSQL column: a throwaway server (bench/pg.py)")
    with postgres_server(pin()) as server:
        for rep in range(args.repeats):
            for h, cycles in PG_CYCLES.items():
                n = max(5, int(cycles * scale))
                impls = ["sayso-pg", "langgraph-pg"]
                for impl in impls[rep % 2 :] + impls[: rep % 2]:
                    dsn = server.create_database(f"bench_{impl.replace('-', '_')}_{h}_{rep}")
                    extra = ["--dsn", dsn, "--pg-datadir", server.datadir]
                    runs[(impl, h)].append(run_one(impl, h, n, 10 if h < 500 else 5, sink, extra))


def write_report(
    args: argparse.Namespace,
    info: dict[str, Any],
    runs: dict[tuple[str, int], list[dict[str, Any]]],
    foot: dict[str, Any] | None,
    prof_md: list[str],
    started: dt.datetime,
    raw_path: str,
    extras: dict[str, Any],
) -> None:
    md = report(args, info, runs, foot, prof_md, started, raw_path, extras)
    with open(os.path.join(HERE, "RESULTS.md"), "w") as f:
        f.write(md)
    print(md.split("## Throughput", 1)[1].split("## Growth", 1)[0].strip() if "## Throughput" in md else md)
    log(f"wrote {os.path.relpath(os.path.join(HERE, 'RESULTS.md'), ROOT)}")


def render(args: argparse.Namespace) -> None:
    """Rebuild bench/RESULTS.md from a raw results file (e.g. after editing bench/ANALYSIS.md)."""
    runs: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    foot, prof_md, info, started = None, [], {}, dt.datetime.now(dt.UTC)
    extras: dict[str, Any] = {}
    with open(args.render) as f:
        for line in f:
            row = json.loads(line)
            if "machine" in row:
                info = {**row["machine"], "argv": row["argv"]}
                started = dt.datetime.fromisoformat(row["started"])
                if "--repeats" in row["argv"]:
                    args.repeats = int(row["argv"][row["argv"].index("--repeats") + 1])
            elif "load_avg_end" in row:
                info["load_avg_end"] = row["load_avg_end"]
            elif row.get("kind") == "footprint":
                foot = row
            elif row.get("kind") in (
                "store_overhead",
                "load",
                "scale_pg",
                "agent_pair",
                "workflow",
                "engine_costs",
                "soak",
                "cli_start",
                "temporal",
            ):
                extras[row["kind"]] = row
            elif "profile" in row:
                if "markdown" in row:
                    prof_md.append(row["markdown"])
            elif "cycles_per_s" in row:
                runs[(row["impl"], row["history"])].append(row)
    args.histories = sorted({h for _, h in runs})
    write_report(args, info, runs, foot, prof_md, started, args.render, extras)


def span(rows: list[dict[str, Any]], key: str) -> str:
    vals = [r[key] for r in rows if r.get(key) is not None]
    lo, hi = min(vals), max(vals)
    return f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g}"


def fmt(x: float, d: int = 1) -> str:
    return f"{x:,.{d}f}"


def report(  # noqa: C901
    args: argparse.Namespace,
    info: dict[str, Any],
    runs: dict[tuple[str, int], list[dict[str, Any]]],
    foot: dict[str, Any] | None,
    prof_md: list[str],
    started: dt.datetime,
    raw_path: str,
    extras: dict[str, Any],
) -> str:
    overhead, load, scale_pg, pair, flow, engine, cli = (
        extras.get(k)
        for k in ("store_overhead", "load", "scale_pg", "agent_pair", "workflow", "engine_costs", "cli_start")
    )
    cmd = "make bench" if info.get("via_make", os.environ.get("BENCH_VIA_MAKE")) else ""
    argv = info.get("argv", sys.argv)
    exact = shlex.join([os.path.relpath(PY, ROOT), os.path.relpath(__file__, ROOT), *argv[1:]])
    L: list[str] = []
    w = L.append
    w("# sayso benchmarks: the approve cycle, side by side with LangGraph and plain pydantic-ai\n")
    w("Generated by `bench/run.py`; the hand-written analysis at the end comes from `bench/ANALYSIS.md`.\n")
    w(f"- **Date**: {started.strftime('%Y-%m-%d %H:%M UTC')} (sayso commit `{info.get('commit') or git_rev()}`)")
    w(
        f"- **Command**: `{cmd + ' → ' if cmd else ''}{exact}` (each run a separate process: "
        f"`{' '.join(pin())} .venv/bin/python bench/<script>.py --cycles N --history H`)"
    )
    w(
        f"- **Machine**: {info['cpu']}, {info['cores']} cores, {info['mem_gib']} GiB RAM, Linux {info['kernel']}; "
        f"one fsynced SQLite commit (WAL, synchronous=FULL) takes {info['fsync_ms']} ms in the temp folder; "
        f"load average {info['load_avg']} at start, {info.get('load_avg_end', '?')} at the end "
        "(other work shares this VM, so compare ratios from the same run, not absolute numbers across runs)"
    )
    v = info["versions"]
    w(
        f"- **Software**: Python {info['python']}, SQLite {info['sqlite']}, "
        + ", ".join(f"{k} {x}" for k, x in v.items())
    )
    w(
        f"- **Runs**: every figure is the median of {args.repeats} runs (min–max in brackets); in each repetition the "
        "implementations run one after another, in a rotating order, so they see the same machine conditions. "
        f"Raw JSON lines: `{os.path.relpath(raw_path, ROOT)}`.\n"
    )

    w("## Throughput\n")
    w(
        "Cycles per second (one cycle = pause in one object, approve and resume in another that shares nothing in "
        "memory with it; every commit fsynced). Ratios are sayso's median over the anchor's median.\n"
    )
    w(
        "| H | cycles/run | sayso | sayso (warm) | LangGraph | pydantic-ai "
        "| **sayso ÷ LangGraph** | **sayso ÷ pydantic-ai** "
        "| warm ÷ LangGraph | warm ÷ pydantic-ai | p50-latency ratios: sayso vs LG / vs PA |"
    )
    w("|---:|---:|---|---|---|---|---:|---:|---:|---:|---|")

    def cell(impl: str, h: int) -> str:
        rs = runs.get((impl, h))
        if not rs:
            return "–"
        c = [r["cycles_per_s"] for r in rs]
        return f"{fmt(statistics.median(c))} ({fmt(min(c))}–{fmt(max(c))})"

    def ratio(a: str, b: str, h: int) -> float | None:
        if not runs.get((a, h)) or not runs.get((b, h)):
            return None
        return med(runs[(a, h)], "cycles_per_s") / med(runs[(b, h)], "cycles_per_s")

    def p50ratio(anchor: str, h: int) -> float | None:
        if not runs.get(("sayso", h)) or not runs.get((anchor, h)):
            return None
        return med(runs[(anchor, h)], "p50_ms") / med(runs[("sayso", h)], "p50_ms")

    def rtxt(x: float | None) -> str:
        return "–" if x is None else f"{x:.2f}×"

    for h in args.histories:
        if (("sayso", h)) not in runs:
            continue
        w(
            f"| {h} | {runs[('sayso', h)][0]['cycles']} | {cell('sayso', h)} | {cell('sayso-warm', h)} | "
            f"{cell('langgraph', h)} | {cell('pydantic-ai', h)} | **{rtxt(ratio('sayso', 'langgraph', h))}** | "
            f"**{rtxt(ratio('sayso', 'pydantic-ai', h))}** | {rtxt(ratio('sayso-warm', 'langgraph', h))} | "
            f"{rtxt(ratio('sayso-warm', 'pydantic-ai', h))} | {rtxt(p50ratio('langgraph', h))} / "
            f"{rtxt(p50ratio('pydantic-ai', h))} |"
        )
    w("")
    w(
        "The last column divides the anchor's median p50 cycle latency by sayso's: a cross-check that is less "
        "sensitive than cycles/s to pauses caused by other work on the machine.\n"
    )
    w(
        '"sayso" is two `Sayso` instances (own config, model object, engine and connections) in one process: A runs '
        'the message and pauses, B decides and resumes, as the anchors\' process A and B. "sayso (warm)" is one '
        "instance doing both. Both go through the whole public path: policy check, request committed before `run` "
        "returns it, decision recorded, pause consumed, run and thread loaded from SQLite, the approved call through "
        "the at-most-once ledger, the finished run committed.\n"
    )

    w("## Growth: bytes and time per cycle as H grows\n")
    w(
        "Byte columns use the anchors' definitions: *payload* = serialized bytes handed to SQLite in writes (sayso: "
        "BLOB parameters of INSERT/UPDATE, the pydantic-ai anchor's definition; LangGraph: checkpoint + metadata + "
        "writes), *disk write* = `write_bytes` of `/proc/self/io` (WAL frames and their later copy into the main "
        "file), *file growth* = growth of the database after `wal_checkpoint(TRUNCATE)`.\n"
    )
    w(
        "| impl | H | cycles/s | p50 ms | p50 pause / resume ms | payload B/cycle | disk write B/cycle "
        "| file growth B/cycle | CPU ms/cycle | fsynced commits/cycle | history loads/cycle |"
    )
    w("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for h in args.histories:
        for impl in ("sayso", "sayso-warm", "langgraph", "pydantic-ai"):
            rs = runs.get((impl, h))
            if not rs:
                continue
            # sayso counts fsynced commits at the driver; every commit of the anchors is fsynced
            commits = rs[0].get("fsyncs_per_cycle", rs[0].get("commits_per_cycle"))
            if commits is None:
                commits = rs[0]["checkpoints_per_cycle"] + rs[0]["put_writes_per_cycle"]
            w(
                f"| {LABEL[impl]} | {h} | {fmt(med(rs, 'cycles_per_s'))} | {fmt(med(rs, 'p50_ms'), 2)} | "
                f"{fmt(med(rs, 'p50_pause_ms'), 2)} / {fmt(med(rs, 'p50_resume_ms'), 2)} | "
                f"{fmt(med(rs, 'payload_bytes_per_cycle'), 0)} | {fmt(med(rs, 'disk_write_bytes_per_cycle'), 0)} | "
                f"{fmt(med(rs, 'bytes_per_cycle'), 0)} | {fmt(med(rs, 'cpu_ms_per_cycle'), 2)} | {commits:g} | "
                f"{rs[0].get('loads_per_cycle', '–')} |"
            )
    w("")
    s_rows = {h: runs[("sayso", h)] for h in args.histories if ("sayso", h) in runs}
    if s_rows:
        w("sayso alone, as a function of H (medians):\n")
        w(
            "| H | ms/cycle (1000 / cycles/s) | p50 ms | payload B/cycle | disk write B/cycle | file growth B/cycle "
            "| CPU ms/cycle: all / in `Agent.run` / in store calls | store wall ms/cycle "
            "| SQL transactions / statements / fsynced commits per cycle |"
        )
        w("|---:|---:|---:|---:|---:|---:|---|---:|---|")
        for h, rs in s_rows.items():
            w(
                f"| {h} | {fmt(1000 / med(rs, 'cycles_per_s'), 2)} | {fmt(med(rs, 'p50_ms'), 2)} | "
                f"{fmt(med(rs, 'payload_bytes_per_cycle'), 0)} | {fmt(med(rs, 'disk_write_bytes_per_cycle'), 0)} | "
                f"{fmt(med(rs, 'bytes_per_cycle'), 0)} | {fmt(med(rs, 'cpu_ms_per_cycle'), 2)} / "
                f"{fmt(med(rs, 'agent_cpu_ms_per_cycle'), 2)} / {fmt(med(rs, 'store_cpu_ms_per_cycle'), 2)} | "
                f"{fmt(statistics.median(r['store_ms_per_cycle']['total'] for r in rs), 2)} | "
                f"{span(rs, 'transactions_per_cycle')} / {span(rs, 'statements_per_cycle')} / "
                f"{span(rs, 'fsyncs_per_cycle')} |"
            )
        w("")
        w(
            "*In store calls* is the process CPU (every thread) inside the store's verbs: SQL, the writer "
            "thread, the fsyncs' system time, decoding the history and (de)serializing requests and decisions. "
            "*Store wall* adds the waits for the disk. SQL is counted at the sqlite3 driver: a transaction is a "
            "`BEGIN`; the run's first commit does not wait for the disk (WAL, `synchronous=NORMAL`), so 4 "
            "transactions make 3 fsynced commits.\n"
        )

    pg_rows = sorted({h for (impl, h) in runs if impl.endswith("-pg")})
    if pg_rows:
        w("## PostgreSQL column\n")
        w(
            "The same cycle on PostgreSQL: sayso's `SqlRunStore` (asyncpg) against LangGraph's `PostgresSaver` "
            "(`langgraph-checkpoint-postgres`, psycopg, LangGraph's default durability), each run in a fresh database "
            "on one throwaway server (`bench/pg.py`: `fsync=on`, `synchronous_commit=on`, pinned with the clients). "
            "Statements, commits and WAL fsyncs are what the server counted (`pg_stat_statements`, "
            "`pg_stat_database`, `pg_stat_wal`); *server CPU* is every postgres process's CPU time over the timed "
            "cycles. Medians of the runs; ratios are sayso over LangGraph.\n"
        )
        w(
            "| H | sayso cycles/s | LangGraph cycles/s | **sayso ÷ LangGraph** | CPU ms/cycle client (sayso / LG) "
            "| server CPU ms/cycle (sayso / LG) | p50 ms (sayso / LG) | statements | commits | WAL fsyncs "
            "| WAL B/cycle |"
        )
        w("|---:|---:|---:|---:|---|---|---|---|---|---|---|")
        for h in pg_rows:
            sp, lp = runs.get(("sayso-pg", h), []), runs.get(("langgraph-pg", h), [])
            if not sp or not lp:
                continue

            def both(key: str, d: int = 2, sp: list[dict[str, Any]] = sp, lp: list[dict[str, Any]] = lp) -> str:
                return f"{fmt(med(sp, key), d)} / {fmt(med(lp, key), d)}"

            w(
                f"| {h} | {fmt(med(sp, 'cycles_per_s'))} | {fmt(med(lp, 'cycles_per_s'))} | "
                f"**{med(sp, 'cycles_per_s') / med(lp, 'cycles_per_s'):.2f}×** | {both('cpu_ms_per_cycle')} | "
                f"{both('server_cpu_ms_per_cycle')} | {both('p50_ms')} | {both('statements_per_cycle', 1)} | "
                f"{both('commits_per_cycle', 1)} | {both('fsyncs_per_cycle', 1)} | {both('wal_bytes_per_cycle', 0)} |"
            )
        w("")

    if flow is not None:
        w("## Workflow cycle (issue 11)\n")
        w(
            "`bench/workflow_cycle.py` against `bench/workflow_langgraph.py`: a three-node workflow (`quote` → "
            "`confirm` → `finish`) whose `confirm` node stops for a person's structured input (sayso: `RequestInput` "
            "with a pydantic response schema; LangGraph: `StateGraph` with `interrupt()` and its `SqliteSaver`, WAL, "
            "`synchronous=FULL`). Process A runs to the pause, which is committed before it returns; process B, "
            "sharing nothing in memory with A, validates the answer, resumes and finishes the run. Both run the "
            f"same node bodies. Medians of {flow['repeats']} runs of {flow['cycles']} cycles, interleaved.\n"
        )
        w("| impl | cycles/s (min–max) | CPU ms/cycle | p50 ms | fsynced commits/cycle | file growth B/cycle |")
        w("|---|---|---:|---:|---:|---:|")
        for impl in ("sayso", "langgraph"):
            rs = flow["runs"][impl]
            w(
                f"| {LABEL[impl]} | {fmt(med(rs, 'cycles_per_s'))} ({span(rs, 'cycles_per_s')}) | "
                f"{fmt(med(rs, 'cpu_ms_per_cycle'), 2)} | {fmt(med(rs, 'p50_ms'), 2)} | "
                f"{rs[0].get('fsyncs_per_cycle', '–')} | {fmt(med(rs, 'bytes_per_cycle'), 0)} |"
            )
        w(
            f"\n**sayso ÷ LangGraph: {flow['vs_langgraph']:.2f}× in cycles/s, {flow['cpu_vs_langgraph']:.2f}× in CPU** "
            f"(goal ≥ 1.5×: {'met' if flow['vs_langgraph'] >= 1.5 else 'missed'}).\n"
        )

    if extras.get("temporal") is not None:
        w("## The approve cycle on Temporal (issue 26)\n")
        w(
            "`bench/temporal_cycle.py`: a Temporal dev server (`temporal server start-dev`), SQLite store; this "
            "process is the front (`engine: temporal`, as `sayso serve` is) and 1 or 3 `sayso worker` processes do "
            "the work. A cycle is `run` (the run's workflow starts, the segment activity pauses it) and "
            "`decide(Approve())` (the workflow's Update records and resumes it on a worker). p50/p99 over "
            "sequential cycles; cycles/s with several cycles at a time. Compare with the in-process figures above: "
            "every stop is several Temporal round trips and activity dispatches on top of sayso's own commits.\n"
        )
        w("| workers | p50 cycle ms | p99 cycle ms | p50 run ms | p50 decide ms | cycles/s | cycles at a time |")
        w("|---:|---:|---:|---:|---:|---:|---:|")
        for row in extras["temporal"]["rows"]:
            w(
                f"| {row['workers']} | {row['p50_cycle_ms']} | {row['p99_cycle_ms']} | {row['p50_run_ms']} | "
                f"{row['p50_decide_ms']} | {row['cycles_per_s']} | {row.get('concurrency', 8)} |"
            )
        w("")

    if load is not None:
        w("## Server under load\n")
        w(
            "`bench/load.py`: `sayso serve` pinned to one core, 50 concurrent clients on the other core, each looping "
            "`POST /v1/runs` (the run pauses on the approval) then `POST /v1/requests/{id}/decision` (approve: the run "
            "resumes and completes). *Closed loop*: the clients back to back, the throughput the server sustains; "
            "*open loop*: cycles started at 40 % and 70 % of that rate, at most 50 in flight. *Server core busy* is "
            "the server process's CPU time over wall time (the rest of the core went to other work on this shared "
            "VM).\n"
        )
        w(
            "| store | phase | decisions/s | decide p50 / p99 ms | run p50 / p99 ms | server CPU ms/cycle "
            "| server core busy | errors |"
        )
        w("|---|---|---:|---|---|---:|---:|---:|")
        for r in load["rows"]:
            phase = "closed loop, 50 clients" if r["phase"] == "closed" else f"open loop at {r['offered_per_s']}/s"
            w(
                f"| {r['store']} | {phase} | {r['decisions_per_s']} | {r['decide_p50_ms']} / {r['decide_p99_ms']} | "
                f"{r['run_p50_ms']} / {r['run_p99_ms']} | {r['server_cpu_ms_per_cycle']} | {r['server_cpu_share']} "
                f"| {r['errors']} |"
            )
        key = "server_idle_cpu_ms_per_s"
        idle = [f"{r['store']} {r[key]}" for r in load["rows"] if key in r]
        if idle:
            w(
                f"\nThe same server idle, before the clients start, in CPU ms per second: {', '.join(idle)} "
                "(uvicorn's tick, the expiry sweep, the outbox and MCP task pollers, paid under load too)."
            )
        syncs = [
            f"{'closed loop' if r['phase'] == 'closed' else 'open loop at ' + str(r['offered_per_s']) + '/s'} "
            f"{r['wal_syncs_per_cycle']}"
            for r in load["rows"]
            if "wal_syncs_per_cycle" in r
        ]
        if syncs:
            w(f"\nPostgreSQL's WAL syncs per cycle (every cycle of the phase): {', '.join(syncs)}.")
        w("")

    soak = extras.get("soak")
    if soak is not None:
        w("## Memory soak\n")
        w(
            f"`bench/soak.py`: `sayso serve` (SQLite) under {soak['clients']} clients for {soak['minutes']:g} minutes, "
            "each looping: a run that pauses, the inbox, the approval over REST, the thread read back. The server's "
            "resident memory (VmRSS), sampled every few seconds; *flat* means it grew by at most "
            f"{soak.get('max_last_mb', 3):g} MB over the last {soak.get('last_minutes', 10):g} minutes.\n"
        )
        w("| cycles | RSS start | after warm-up | end | growth after warm-up | last window | flat |")
        w("|---:|---:|---:|---:|---:|---:|---|")
        w(
            f"| {soak['cycles']:,} | {soak['rss_start_mb']} MB | {soak['rss_after_warmup_mb']} MB | "
            f"{soak['rss_end_mb']} MB | {soak['mb_per_min']} MB/min | {soak.get('last_window_mb', '–')} MB "
            f"| {'yes' if soak['flat'] else 'NO'} |"
        )
        w("")

    if scale_pg is not None:
        from scale_pg import table

        sm = scale_pg["summary"]
        w(f"## Scale: {sm['paused']:,} paused runs on PostgreSQL\n")
        w(
            "`bench/scale_pg.py` (`make bench` only): on a throwaway server, 10 runs are paused for real through "
            "`Sayso.run`; the store then grows to each size by bulk copies the server makes itself (`generate_series` "
            "joined with a real paused run: its threads, runs, pauses, requests and messages rows under fresh ids, "
            "the request body rewritten to name them). At each size a fresh pinned process opens two `Sayso` "
            "instances and measures through the public API, after a `CHECKPOINT`: `inbox(limit=50)` (the first page, "
            "as `GET /v1/requests` asks it), `result()` of random paused runs, a resume (`decide(..., Approve())` of "
            "a random open request, timed to the completed run, with a fresh pause made before each so the count "
            "stays the same) and its own RSS. Each size is measured twice, alternating with the same measurement "
            "of a second database that keeps 10 paused runs: the ratio compares the two under the same machine "
            "conditions.\n"
        )
        w(table(scale_pg["points"]) + "\n")
        w(f"![latency and memory as paused runs grow]({os.path.relpath(scale_pg['plot'], HERE)})\n")

    if foot is not None:
        s, b, sm = foot["small"], foot["large"], foot["summary"]
        sd = foot["large_seed"]
        w(f"## Footprint: {sm['paused']:,} paused runs in one SQLite store\n")
        w(
            f"Seeded by pausing {sd['real_pauses']} runs for real through `Sayso.run` ({sd['real_seconds']} s), then "
            f"bulk-copying their rows with SQL under new ids ({sd['copied']:,} copies in {sd['copy_seconds']} s; see "
            "`bench/footprint.py`). Everything measured goes through the public API, in a fresh process "
            "(pinned) that opens the store with two `Sayso` instances.\n"
        )
        if foot.get("note"):
            w(foot["note"] + "\n")
        w(f"| measure | {s['paused_runs']} paused | {b['paused_runs']:,} paused |")
        w("|---|---:|---:|")
        w(
            f"| size on disk | {foot['small_seed']['db_bytes'] / 2**20:,.2f} MiB | {sd['db_bytes'] / 2**20:,.1f} MiB "
            f"({sm['bytes_per_paused_run']:,} B per paused run) |"
        )
        w(f"| RSS after opening the store (idle) | {s['rss_idle'] / 2**20:.1f} MiB | {b['rss_idle'] / 2**20:.1f} MiB |")
        w(
            "| RSS after serving (200 first-page listings, 1,000 `result()`, the pauses and resumes below) "
            f"| {s['rss_served'] / 2**20:.1f} MiB (+{s['rss_growth'] / 2**20:.1f}) "
            f"| {b['rss_served'] / 2**20:.1f} MiB (+{b['rss_growth'] / 2**20:.1f}) |"
        )
        w(f"| `open_requests(limit=50)`, first call | {s['first_page_cold_ms']} ms | {b['first_page_cold_ms']} ms |")
        w(
            f"| `open_requests(limit=50)`, median of 100 (p99) | {s['first_page_ms']} ms ({s['first_page_p99_ms']}) "
            f"| {b['first_page_ms']} ms ({b['first_page_p99_ms']}) |"
        )
        w(f"| `result(run_id)` of a random paused run | {s['result_ms']} ms | {b['result_ms']} ms |")
        w(
            f"| resume one run: `decide(request_id, Approve())` → completed, median (min–max) | {s['resume_ms']} ms "
            f"({s['resume_ms_min_max'][0]}–{s['resume_ms_min_max'][1]}) | {b['resume_ms']} ms "
            f"({b['resume_ms_min_max'][0]}–{b['resume_ms_min_max'][1]}) |"
        )
        w(f"| pause one new run: `run(...)` → paused, median | {s['pause_ms']} ms | {b['pause_ms']} ms |")
        w("")

    if cli is not None:
        w("## CLI start-up (issue 27)\n")
        w(
            "`bench/cli_start.py`: fresh processes, one after another, five rounds; the medians as ratios to "
            '`python -c "import pydantic_ai"` measured in the same rounds. `inbox` lists one open request of the '
            "`sayso init` starter (SQLite); `decide` approves a paused run, which resumes and completes. "
            + (
                "sayso's modules are byte-compiled first, as installing it does (pydantic-ai's `.pyc` are).\n"
                if cli.get("cli_sayso_compiled")
                else "sayso is loaded from its sources as they are (`--from-source`).\n"
            )
        )
        w("| command | seconds (median) | ÷ `import pydantic_ai` | goal |")
        w("|---|---:|---:|---|")
        w(f"| `python -c 'import pydantic_ai'` | {cli['cli_import_pydantic_ai_s']} | 1.0 | – |")
        for key, label, goal in (
            ("help", "sayso --help", 0.25),
            ("inbox", "sayso inbox CONFIG", 0.5),
            ("decide", "sayso decide CONFIG ID approve", 1.3),
        ):
            w(f"| `{label}` | {cli[f'cli_{key}_s']} | {cli[f'cli_{key}_vs_import']} | ≤ {goal}× |")
        if "cli_bare_resume_vs_import" in cli:
            bare = cli["cli_bare_resume_vs_import"]
            w(f"| pydantic-ai's part of that resume alone (`bench/bare_resume.py`) | | {bare} | – |")
        w("")
    w("## Goals of issue 27 (reported, not asserted)\n")
    w(
        "Ratios are sayso's median cycles/s over the anchor's (CPU: the anchor's median CPU ms per cycle over "
        "sayso's, steadier when other work shares the machine).\n"
    )
    w("| goal | measured | verdict |")
    w("|---|---|---|")

    def verdict(ok: bool | None) -> str:
        return "–" if ok is None else ("**met**" if ok else "**missed**")

    def cpu_ratio(anchor: str, h: int) -> float | None:
        if not runs.get(("sayso", h)) or not runs.get((anchor, h)):
            return None
        return med(runs[(anchor, h)], "cpu_ms_per_cycle") / med(runs[("sayso", h)], "cpu_ms_per_cycle")

    for h, anchor, goal in (
        (0, "langgraph", 0.85),
        (0, "pydantic-ai", 0.85),
        (500, "langgraph", 1.0),
        (2000, "langgraph", 1.0),
        (2000, "pydantic-ai", 1.0),
    ):
        r, c = ratio("sayso", anchor, h), cpu_ratio(anchor, h)
        short = f"; needs {goal / r:.2f}× its speed" if r is not None and r < goal else ""
        w(
            f"| H={h} ≥ {goal}× {LABEL[anchor]} | {rtxt(r)} cycles/s, {rtxt(c)} CPU{short} | "
            f"{verdict(None if r is None else r >= goal)} |"
        )
    if pair is not None:
        w(
            f"| sayso's agent pair ≤ 1.2× a bare pydantic-ai pair | {pair['ratio']}× ({pair['sayso_cpu_ms']} vs "
            f"{pair['bare_cpu_ms']} ms CPU) | {verdict(pair['ratio'] <= 1.2)} |"
        )
    if engine is not None:
        c = engine["cpu_ms_per_pair"]
        w(
            f"| (what the pair's excess is made of, `engine_costs.py`) | a bare pair {c['bare']} ms; with one more "
            f"capability +{engine['capability_ms']} ms; deferring by a raised `ApprovalRequired` "
            f"+{engine['exception_ms']} ms; both +{engine['both_ms']} ms — no sayso code in any of them | "
            "pydantic-ai's cost |"
        )
    if s_rows:
        growth = {h: med(rs, "bytes_per_cycle") for h, rs in s_rows.items()}
        pay = {h: med(rs, "payload_bytes_per_cycle") for h, rs in s_rows.items()}
        disk = {h: med(rs, "disk_write_bytes_per_cycle") for h, rs in s_rows.items()}
        ok = all(x <= 10_240 for x in growth.values()) and all(x <= 10_240 for x in pay.values())
        w(
            f"| bytes/cycle ≤ 10 KB at every H (file growth; payload) | file growth "
            f"{', '.join(f'{fmt(x, 0)}' for x in growth.values())} B; "
            f"payload {', '.join(fmt(x, 0) for x in pay.values())} "
            f"B at H = {', '.join(map(str, growth))} | {verdict(ok)} (flat in H) |"
        )
        w(
            f"| (not a goal) disk write bytes/cycle | {', '.join(fmt(x, 0) for x in disk.values())} B | WAL pages + "
            "checkpoint copies: a floor of ~4 KiB per page per commit, far above 10 KB for every implementation |"
        )
        tx = {h: med(rs, "transactions_per_cycle") for h, rs in s_rows.items()}
        fs = {h: med(rs, "fsyncs_per_cycle") for h, rs in s_rows.items()}
        w(
            f"| ≤ 4 transactions and ≤ 3 fsynced commits per cycle | {', '.join(f'{x:g}' for x in tx.values())} "
            f"transactions, {', '.join(f'{x:g}' for x in fs.values())} fsynced commits | "
            f"{verdict(all(x <= 4 for x in tx.values()) and all(x <= 3 for x in fs.values()))} |"
        )
    if load is not None:
        for r in load["rows"]:
            if r["phase"] == "open":
                w(
                    f"| {r['store']} server: decide p99 ≤ 20 ms at a load one core sustains | "
                    f"p99 {r['decide_p99_ms']} ms (p50 {r['decide_p50_ms']}) at {r['decisions_per_s']} decisions/s | "
                    f"{verdict(r['decide_p99_ms'] is not None and r['decide_p99_ms'] <= 20)} |"
                )
    if cli is not None:
        for key, label, goal in (("help", "--help", 0.25), ("inbox", "inbox", 0.5), ("decide", "decide", 1.3)):
            r = cli[f"cli_{key}_vs_import"]
            w(f"| `sayso {label}` ≤ {goal}× `import pydantic_ai` | {r}× | {verdict(r <= goal)} |")
    if scale_pg is not None:
        sm = scale_pg["summary"]
        w(
            f"| {sm['paused']:,} paused on PostgreSQL: first inbox page ≤ 50 ms | {sm['first_page_ms']} ms "
            f"(first call {sm['first_page_cold_ms']} ms) | "
            f"{verdict(max(sm['first_page_ms'], sm['first_page_cold_ms']) <= 50)} |"
        )
        w(
            f"| {sm['paused']:,} paused on PostgreSQL: resume ≤ 1.2× that at 10 | {sm['resume_ms_large']} ms vs "
            f"{sm['resume_ms_small']} ms = {sm['resume_ratio']}× | {verdict(sm['resume_ratio'] <= 1.2)} |"
        )
        w(
            f"| {sm['paused']:,} paused on PostgreSQL: RSS flat | {sm['rss_served_mb_small']} → "
            f"{sm['rss_served_mb_large']} MiB after serving | "
            f"{verdict(sm['rss_served_mb_large'] - sm['rss_served_mb_small'] <= 50)} |"
        )
    if foot is not None:
        sm = foot["summary"]
        w(
            f"| (SQLite) {sm['paused']:,} paused: first inbox page ≤ 50 ms | {sm['first_page_ms']} ms "
            f"(first call {sm['first_page_cold_ms']} ms)"
            f" | {verdict(max(sm['first_page_ms'], sm['first_page_cold_ms']) <= 50)} |"
        )
        w(
            f"| (SQLite) {sm['paused']:,} paused: resume within 1.2× of at 10 | {sm['resume_ms_large']} ms vs "
            f"{sm['resume_ms_small']} ms = {sm['resume_ratio']}× | {verdict(sm['resume_ratio'] <= 1.2)} |"
        )
    w("")
    if prof_md:
        w("## Profile of the sayso cycle (generated)\n")
        w(
            "`bench/profile_cycle.py`: a CPU breakdown and cProfile over the timed loop of `sayso_cycle.py` "
            "(pinned), the time of every write transaction on the store's writer thread and of every store call. "
            "cProfile slows Python-heavy code, so read shares, not absolute figures.\n"
        )
        for p in prof_md:
            w(p.replace("#### ", "### ") + "\n")
    if overhead is not None:
        w("## What one store round trip costs (generated)\n")
        w(
            "`bench/store_overhead.py`: the same single-row read by primary key, and the same one-row UPDATE with "
            "its fsynced commit, done through each layer (median µs, pinned like the cycles).\n"
        )
        w("| operation | µs |\n|---|---:|")
        for name, us in overhead["rows"]:
            w(f"| {name} | {us:,.0f} |")
        w("")
    analysis = os.path.join(HERE, "ANALYSIS.md")
    if os.path.exists(analysis):
        with open(analysis) as f:
            w(f.read())
    return "\n".join(L) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="H=0 only, a few runs each; last line is a JSON object")
    ap.add_argument("--quick-cycles", type=int, default=300)
    ap.add_argument("--quick-repeats", type=int, default=3)
    ap.add_argument("--quick-h500-cycles", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--scale", type=float, default=1.0, help="multiply the cycles per run (H=0: 600, 50: 300, 500: 100, 2000: 25)"
    )
    ap.add_argument("--histories", type=int, nargs="+", default=[0, 50, 500, 2000])
    ap.add_argument(
        "--throughput", type=int, nargs="+", default=[0, 50, 500], help="histories that also run the warm variant"
    )
    ap.add_argument("--paused", type=int, default=100_000)
    ap.add_argument("--no-footprint", action="store_true")
    ap.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL column")
    ap.add_argument("--no-load", action="store_true", help="skip the server under load")
    ap.add_argument("--no-temporal", action="store_true", help="skip the approve cycle on Temporal")
    ap.add_argument("--no-soak", action="store_true", help="skip the 30-minute memory soak (bench/soak.py)")
    ap.add_argument("--no-scale", action="store_true", help="skip the 1,000,000 paused runs on PostgreSQL")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--render", metavar="RAW_JSONL", help="only rebuild bench/RESULTS.md from a raw results file")
    args = ap.parse_args()
    if args.render:
        render(args)
    elif args.quick:
        quick(args)
    else:
        full(args)


if __name__ == "__main__":
    main()
