#!/usr/bin/env python3
"""The server under load: 50 concurrent clients running and deciding over REST, on SQLite and PostgreSQL.

`sayso serve` runs in its own process pinned to one core (core 0; BENCH_PIN=0 to not pin), with a
scripted model and a no-op `delete_file` the policy gates. Each client loops: `POST /v1/runs`
("delete f-N": the run pauses on the approval), then `POST /v1/requests/{id}/decision` (approve:
the decision is recorded, the run resumes, the tool runs under the ledger and the run
completes). The load generator and PostgreSQL (bench/pg.py) run on the other core.

Two phases per store:

1. **closed loop**: 50 clients back to back for `--seconds`: the throughput one server core
   sustains (decisions/s) and the latencies at that saturation;
2. **open loop** at `--fractions` (default 40 % and 70 %) of that throughput: cycles start at a
   fixed rate, at most 50 in flight; p50/p99 of the decide request at loads the core sustains.

On PostgreSQL each phase also counts the server's WAL syncs per cycle (`pg_stat_wal`, every cycle the
phase ran, warm-up included): the fsyncs the server's writes cost, the outbox's bookkeeping included.

Prints a markdown table and one JSON line.

    .venv/bin/python bench/load.py [--stores sqlite postgres] [--clients 50] [--seconds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pg import postgres_server

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TOOLS = '''"""The load benchmark's tool: a no-op the interrupt policy gates."""


async def delete_file(name: str) -> str:
    """Delete a file."""
    return f"deleted {name}"
'''

SCRIPT = """name: load
rules:
  - user: '^delete (?P<name>\\S+)$'
    call: delete_file
    args: {name: "{name}"}
  - tool: delete_file
    reply: "Done: {result}."
"""

CONFIG = """store: {store}
models:
  scripted: {{scripted: script.yaml}}
agents:
  files:
    model: scripted
    ask_user: false
    tools: [load_tools:delete_file]
    interrupt:
      tools: [delete_file]
entry: files
"""


def cores(which: int) -> list[str]:
    if os.environ.get("BENCH_PIN", "1") != "1" or shutil.which("taskset") is None:
        return []
    return ["taskset", "-c", str(which)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """CPU time of one process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def sayso_server(store: str, wrap: Sequence[str] = (), start_seconds: float = 60) -> Iterator[tuple[str, int]]:
    """`sayso serve` on a bench config in a temp folder, pinned to core 0; its URL and pid.

    `wrap`: a command that runs the server and execs it in place (valgrind), so the pid is still the server's.
    """
    folder = tempfile.mkdtemp(prefix="sayso-load.")
    with open(os.path.join(folder, "load_tools.py"), "w") as f:
        f.write(TOOLS)
    with open(os.path.join(folder, "script.yaml"), "w") as f:
        f.write(SCRIPT)
    with open(os.path.join(folder, "sayso.yaml"), "w") as f:
        f.write(CONFIG.format(store=store))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAYSO_")}
    sayso = os.path.join(os.path.dirname(sys.executable), "sayso")
    proc = subprocess.Popen(
        [*cores(0), *wrap, sayso, "serve", os.path.join(folder, "sayso.yaml"), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_seconds
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"sayso serve exited: {proc.stderr.read() if proc.stderr else ''}")
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("sayso serve did not start")
            time.sleep(0.1)
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(folder, ignore_errors=True)


def lone_cycle(client: httpx.Client, n: int) -> None:
    """One cycle with nothing else in flight: run ("delete f-N"), approve, and check that the run completed."""
    run = client.post("/v1/runs", json={"message": f"delete f-{n}"}).json()
    decided = client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json={"kind": "approve"})
    if decided.json()["run"]["status"] != "completed":
        raise SystemExit(f"the cycle did not complete: {decided.text}")


def pool_limits(clients: int) -> httpx.Limits:
    """The clients' connection pool: idle connections dropped before uvicorn's 5 s keep-alive closes them.

    With both at 5 s a client could send on a connection the server was closing, and the run died
    with `httpx.ReadError` in the load generator, not in sayso.
    """
    return httpx.Limits(max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=2.0)


class Recorder:
    def __init__(self) -> None:
        self.decide: list[float] = []
        self.run: list[float] = []
        self.errors = 0
        self.recording = False
        self.completed = 0  # every cycle that ended well, recorded or not (warm-up included)


async def one_cycle(client: httpx.AsyncClient, n: int, rec: Recorder) -> None:
    try:
        await _cycle(client, n, rec)
    except httpx.TransportError:
        rec.errors += 1  # counted in the table's errors column, never a dead run


async def _cycle(client: httpx.AsyncClient, n: int, rec: Recorder) -> None:
    t0 = time.perf_counter()
    run = await client.post("/v1/runs", json={"message": f"delete f-{n}"})
    t1 = time.perf_counter()
    body = run.json()
    if run.status_code != 200 or body.get("status") != "paused":
        rec.errors += 1
        return
    decided = await client.post(f"/v1/requests/{body['requests'][0]['id']}/decision", json={"kind": "approve"})
    t2 = time.perf_counter()
    if decided.status_code != 200 or decided.json()["run"]["status"] != "completed":
        rec.errors += 1
        return
    rec.completed += 1
    if rec.recording:
        rec.run.append(t1 - t0)
        rec.decide.append(t2 - t1)


async def closed_loop(url: str, pid: int, clients: int, seconds: float, warmup: float) -> dict[str, Any]:
    """`clients` clients back to back: the throughput the server sustains, and the latencies at it."""
    rec = Recorder()
    limits = pool_limits(clients)
    counter = iter(range(10**9))
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        stop = time.perf_counter() + warmup + seconds

        async def worker() -> None:
            while time.perf_counter() < stop:
                await one_cycle(client, next(counter), rec)

        async def window() -> tuple[float, float]:
            await asyncio.sleep(warmup)
            rec.recording, cpu0, t0 = True, cpu_seconds(pid), time.perf_counter()
            await asyncio.sleep(seconds)
            rec.recording = False
            return cpu_seconds(pid) - cpu0, time.perf_counter() - t0

        measured, *_ = await asyncio.gather(window(), *(worker() for _ in range(clients)))
    cpu, elapsed = measured
    return summary("closed", rec, elapsed, cpu, clients=clients)


async def open_loop(url: str, pid: int, rate: float, clients: int, seconds: float, warmup: float) -> dict[str, Any]:
    """Cycles started at a fixed rate (at most `clients` in flight): latencies at a load the core sustains."""
    rec = Recorder()
    limits = pool_limits(clients)
    in_flight = asyncio.Semaphore(clients)
    skipped = 0
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        tasks: set[asyncio.Task[None]] = set()

        async def guarded(n: int) -> None:
            async with in_flight:
                await one_cycle(client, n, rec)

        start = time.perf_counter()
        cpu0 = cpu = elapsed = measured_from = 0.0
        n = 0
        while True:
            now = time.perf_counter()
            if not rec.recording and now - start >= warmup:
                rec.recording, cpu0, measured_from = True, cpu_seconds(pid), now
            if rec.recording and now - measured_from >= seconds:
                rec.recording, elapsed = False, now - measured_from
                cpu = cpu_seconds(pid) - cpu0
                break
            if in_flight.locked():
                skipped += 1
            else:
                task = asyncio.create_task(guarded(n))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            n += 1
            await asyncio.sleep(max(0.0, start + n / rate - time.perf_counter()))
        await asyncio.gather(*tasks)
    return {**summary("open", rec, elapsed, cpu, clients=clients), "offered_per_s": round(rate, 1), "skipped": skipped}


def summary(phase: str, rec: Recorder, elapsed: float, cpu: float, *, clients: int) -> dict[str, Any]:
    decided = sorted(rec.decide)
    ran = sorted(rec.run)
    count = len(decided)

    def pct(values: list[float], q: float) -> float | None:
        return round(values[min(len(values) - 1, int(len(values) * q))] * 1e3, 2) if values else None

    return {
        "phase": phase,
        "clients": clients,
        "decisions": count,
        "decisions_per_s": round(count / elapsed, 1) if elapsed else 0.0,
        "decide_p50_ms": round(statistics.median(decided) * 1e3, 2) if decided else None,
        "decide_p99_ms": pct(decided, 0.99),
        "run_p50_ms": round(statistics.median(ran) * 1e3, 2) if ran else None,
        "run_p99_ms": pct(ran, 0.99),
        "server_cpu_ms_per_cycle": round(cpu / count * 1e3, 3) if count else None,
        "server_cpu_share": round(cpu / elapsed, 2) if elapsed else None,
        "errors": rec.errors,
        "cycles_run": rec.completed,
    }


def idle_cpu(pid: int, seconds: float = 5.0) -> float:
    """The server's CPU with nothing asked of it, in ms per second: its own timers and pollers, paid under load too."""
    time.sleep(2.0)  # start-up's last work settles
    cpu0 = cpu_seconds(pid)
    time.sleep(seconds)
    return round((cpu_seconds(pid) - cpu0) * 1000 / seconds, 2)


def measure(store: str, args: argparse.Namespace, wal_syncs: Callable[[], float] | None = None) -> list[dict[str, Any]]:
    """The closed loop and the open loops on one store; `wal_syncs` (PostgreSQL): the server's WAL syncs so far."""

    def counted(phase: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
        before = wal_syncs() if wal_syncs else 0.0
        row = asyncio.run(phase)
        if wal_syncs and row["cycles_run"]:
            row["wal_syncs_per_cycle"] = round((wal_syncs() - before) / row["cycles_run"], 2)
        return row

    with sayso_server(store) as (url, pid):
        idle = idle_cpu(pid)
        closed = counted(closed_loop(url, pid, args.clients, args.seconds, args.warmup))
        rows = [{**closed, "server_idle_cpu_ms_per_s": idle}]
        for fraction in args.fractions:
            rate = max(1.0, closed["decisions_per_s"] * fraction)
            rows.append(counted(open_loop(url, pid, rate, args.clients, args.seconds, args.warmup)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stores", nargs="+", choices=["sqlite", "postgres"], default=["sqlite", "postgres"])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument(
        "--fractions",
        type=float,
        nargs="+",
        default=[0.4, 0.7],
        help="open-loop rates as shares of the closed-loop one",
    )
    args = ap.parse_args()
    if cores(1):  # the load generator (and PostgreSQL) on the other core
        os.sched_setaffinity(0, {1})
    rows: list[dict[str, Any]] = []
    for store in args.stores:
        if store == "sqlite":
            folder = tempfile.mkdtemp(prefix="sayso-load-db.")
            try:
                rows += [{"store": "sqlite", **r} for r in measure(f"sqlite:///{folder}/load.db", args)]
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        else:
            with postgres_server(cores(1)) as server:
                dsn = server.create_database("sayso_load")
                rows += [
                    {"store": "postgresql", **r}
                    for r in measure(dsn, args, lambda: server.counters("sayso_load")["wal_syncs"])
                ]
    print(
        "| store | phase | clients | decisions/s | decide p50 / p99 ms | run p50 / p99 ms | server CPU ms/cycle "
        "| server core busy | errors |"
    )
    print("|---|---|---:|---:|---|---|---:|---:|---:|")
    for r in rows:
        phase = "closed loop" if r["phase"] == "closed" else f"open loop at {r['offered_per_s']}/s"
        print(
            f"| {r['store']} | {phase} | {r['clients']} | {r['decisions_per_s']} | {r['decide_p50_ms']} / "
            f"{r['decide_p99_ms']} | {r['run_p50_ms']} / {r['run_p99_ms']} | {r['server_cpu_ms_per_cycle']} | "
            f"{r['server_cpu_share']} | {r['errors']} |"
        )
    for r in rows:
        if "wal_syncs_per_cycle" in r:
            phase = "closed loop" if r["phase"] == "closed" else f"open loop at {r['offered_per_s']}/s"
            print(f"{r['store']}, {phase}: {r['wal_syncs_per_cycle']} WAL syncs per cycle")
    for r in rows:
        if "server_idle_cpu_ms_per_s" in r:
            print(f"{r['store']}: the idle server costs {r['server_idle_cpu_ms_per_s']} ms of CPU per second")
    print(json.dumps({"kind": "load", "rows": rows}), flush=True)


if __name__ == "__main__":
    main()
