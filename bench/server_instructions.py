#!/usr/bin/env python3
"""Instructions per lone cycle in `sayso serve`, counted by valgrind: the server's work in C as well as in Python.

`bench/server_calls.py` counts the Python calls of a lone cycle; a change that moves work into C
(an event loop, an HTTP parser, a store driver) or changes what C does per call is invisible to it,
and the server's CPU time swings by a fifth between runs on a shared VM. This runs `sayso serve` as
`bench/load.py` does (`load.sayso_server`, the same config, SQLite) under `valgrind --tool=callgrind`,
runs `--warmup` cycles, zeroes the counters (`callgrind_control -z`), runs `--cycles` cycles one at a
time, and dumps the count: every thread's user-space instructions in that window. The kernel's
share (fsync, thread switches, `epoll`) and cache misses are left out, as in `bench/instructions.py`.

The server's timers (the sweeps, the senders' polls, the MCP task worker) run by the clock, and under
valgrind's ~50x slowdown a cycle takes most of a second, so they would count as part of it: the
script then counts an idle `--idle` seconds as well and subtracts that rate over the cycles' window.
Two runs of the same code agree within ~2 %.

Compare two versions by pointing `PYTHONPATH` at another checkout's `src`, or by installing or
removing a dependency between two runs (the event loop is uvloop where it is installed).

    .venv/bin/python bench/server_instructions.py [--cycles 40] [--warmup 15] [--idle 20]   # ~3-4 min
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import load


def dump(pid: int, out: str) -> int:
    """Callgrind's count since the last zero, from a dump it writes now."""
    before = set(glob.glob(f"{out}.*"))
    subprocess.run(["callgrind_control", "-d", str(pid)], check=True, capture_output=True)
    deadline = time.monotonic() + 60
    while not (new := set(glob.glob(f"{out}.*")) - before):
        if time.monotonic() > deadline:
            raise SystemExit("callgrind wrote no dump")
        time.sleep(0.2)
    (path,) = new
    for _ in range(300):  # the dump is written in pieces: read it once its totals line is there
        with open(path) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
        time.sleep(0.2)
    raise SystemExit(f"no total in {path}")


def zero(pid: int) -> None:
    subprocess.run(["callgrind_control", "-z", str(pid)], check=True, capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=15)
    ap.add_argument("--idle", type=float, default=20.0, help="seconds of idle server counted, to subtract its timers")
    args = ap.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    folder = tempfile.mkdtemp(prefix="sayso-instr.")
    out = os.path.join(folder, "callgrind.out")
    os.environ["PYTHONHASHSEED"] = "0"  # the same set and dict orders from run to run
    wrap = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-line=no"]
    try:
        with (
            load.sayso_server(f"sqlite:///{folder}/instr.db", wrap=wrap, start_seconds=900) as (url, pid),
            httpx.Client(base_url=url, timeout=300) as client,
        ):
            for n in range(args.warmup):
                load.lone_cycle(client, n)
            time.sleep(2)  # what the warm-up woke settles first
            zero(pid)
            started = time.monotonic()
            for n in range(args.cycles):
                load.lone_cycle(client, args.warmup + n)
            window = time.monotonic() - started
            cycles = dump(pid, out)
            zero(pid)
            idle_started = time.monotonic()
            time.sleep(args.idle)
            idle = dump(pid, out) / (time.monotonic() - idle_started)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    per_cycle = (cycles - idle * window) / args.cycles
    print(
        f"{per_cycle / 1e6:.2f} M instructions per lone cycle in the server ({args.cycles} cycles in {window:.0f} s "
        f"under valgrind, less its idle {idle / 1e6:.2f} M/s; {cycles / args.cycles / 1e6:.2f} M with it)"
    )
    print(
        json.dumps(
            {
                "kind": "server_instructions",
                "cycles": args.cycles,
                "instructions_per_cycle": round(per_cycle),
                "idle_instructions_per_s": round(idle),
                "window_s": round(window, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
