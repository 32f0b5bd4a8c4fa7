#!/usr/bin/env python3
"""The first approve cycle a fresh `sayso serve` answers, against the ones after it.

The person who meets a server right after it started (a deploy, a restart, a new replica) pays
for whatever the process builds on first use. This starts `--servers` fresh servers one after
another (`load.sayso_server`, the load benchmark's config, a new SQLite file each), and on each
runs `--cycles` cycles one at a time (`POST /v1/runs`, then `POST /v1/requests/{id}/decision`,
checked to complete). It prints, as medians over the servers, the first cycle's run and decide
latencies and those of the cycles after the second, and how long each server took from its
spawn to a healthy `/healthz` (polled every 0.1 s, so to within 0.1 s).

Compare two versions by pointing `PYTHONPATH` at another checkout's `src`.

    .venv/bin/python bench/first_cycle.py [--servers 5] [--cycles 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import load


def one_server(folder: Path, n: int, cycles: int) -> tuple[float, list[tuple[float, float]]]:
    """Seconds from spawn to healthy, and each cycle's (run ms, decide ms) on a fresh server."""
    spawned = time.perf_counter()
    with load.sayso_server(f"sqlite:///{folder / f'first-{n}.db'}") as (url, _pid):
        ready = time.perf_counter() - spawned
        with httpx.Client(base_url=url, timeout=60) as client:
            times = []
            for i in range(cycles):
                began = time.perf_counter()
                run = client.post("/v1/runs", json={"message": f"delete f-{i}"}).json()
                ran = time.perf_counter()
                decided = client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json={"kind": "approve"})
                done = time.perf_counter()
                if decided.json()["run"]["status"] != "completed":
                    raise SystemExit(f"the cycle did not complete: {decided.text}")
                times.append((1000 * (ran - began), 1000 * (done - ran)))
    return ready, times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", type=int, default=5)
    ap.add_argument("--cycles", type=int, default=8)
    args = ap.parse_args()
    if args.cycles < 4:
        raise SystemExit("--cycles must be at least 4: the first, then the steady ones after the second")
    folder = Path(tempfile.mkdtemp(prefix="sayso-first."))
    ready, first_run, first_decide, later_run, later_decide = [], [], [], [], []
    for n in range(args.servers):
        seconds, times = one_server(folder, n, args.cycles)
        ready.append(seconds)
        first_run.append(times[0][0])
        first_decide.append(times[0][1])
        later_run.append(statistics.median(t[0] for t in times[2:]))
        later_decide.append(statistics.median(t[1] for t in times[2:]))
        said = " ".join(f"{r:.0f}/{d:.0f}" for r, d in times)
        print(f"server {n}: ready after {seconds:.1f} s; run / decide ms: {said}")
    row = {
        "kind": "first_cycle",
        "servers": args.servers,
        "ready_s": round(statistics.median(ready), 2),
        "first_run_ms": round(statistics.median(first_run), 1),
        "first_decide_ms": round(statistics.median(first_decide), 1),
        "later_run_ms": round(statistics.median(later_run), 1),
        "later_decide_ms": round(statistics.median(later_decide), 1),
    }
    print(
        f"\nmedians of {args.servers} fresh servers: ready after {row['ready_s']} s; first run {row['first_run_ms']} ms"
        f" (later {row['later_run_ms']}), first decide {row['first_decide_ms']} ms (later {row['later_decide_ms']})"
    )
    print(json.dumps(row))


if __name__ == "__main__":
    main()
