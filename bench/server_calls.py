#!/usr/bin/env python3
"""Python calls per lone cycle in `sayso serve`: a count of the server's work that a busy VM does not move.

The server's CPU per cycle swings by a fifth from one run to the next on a shared VM, more than
most changes to the server move it. Function calls do not: this runs `sayso serve` as
`bench/load.py` does (`load.sayso_server`, the same config) with cProfile on its event-loop thread
(installed by a `sitecustomize` on the server's `PYTHONPATH`, so nothing of sayso is changed),
warms it up, snapshots the profiler, runs `--cycles` cycles one at a time (`POST /v1/runs`, then
`POST /v1/requests/{id}/decision`), snapshots again and prints the difference per cycle: the total,
by package, and the functions called most. Background work in the window (pollers, the push
dispatcher, the sweeps) is counted with the cycles, as the server pays it.

Compare two versions by pointing `PYTHONPATH` at another checkout's `src`: the hook is prepended.

    .venv/bin/python bench/server_calls.py [--cycles 100] [--top 25]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import load

HOOK = '''"""bench/server_calls.py's hook: cProfile on `sayso serve`'s main thread, snapshotted when asked."""
import os, pickle, sys, threading, time

if os.environ.get("SERVER_CALLS_DIR") and "serve" in sys.argv:
    import cProfile

    _profile = cProfile.Profile()
    _profile.enable()

    def _key(code: object) -> str:
        return code if isinstance(code, str) else f"{code.co_filename}:{code.co_firstlineno}({code.co_name})"

    def _snapshot() -> dict[str, int]:
        # Each function's calls, and each caller's calls of a C function ("caller->callee").
        counts: dict[str, int] = {}
        for entry in _profile.getstats():
            key = _key(entry.code)
            counts[key] = counts.get(key, 0) + entry.callcount
            for sub in entry.calls or ():
                if isinstance(sub.code, str):
                    edge = f"{key}->{sub.code}"
                    counts[edge] = counts.get(edge, 0) + sub.callcount
        return counts

    def _watch() -> None:
        folder = os.environ["SERVER_CALLS_DIR"]
        for n in (1, 2):
            while not os.path.exists(os.path.join(folder, f"ask{n}")):
                time.sleep(0.02)
            with open(os.path.join(folder, f"snap{n}.tmp"), "wb") as f:
                pickle.dump(_snapshot(), f)
            os.rename(os.path.join(folder, f"snap{n}.tmp"), os.path.join(folder, f"snap{n}"))

    threading.Thread(target=_watch, daemon=True).start()
'''


def snapshot(folder: Path, n: int) -> dict[str, int]:
    (folder / f"ask{n}").touch()
    deadline = time.monotonic() + 30
    while not (folder / f"snap{n}").exists():
        if time.monotonic() > deadline:
            raise SystemExit("the server never answered the snapshot (is the hook on its PYTHONPATH?)")
        time.sleep(0.02)
    with open(folder / f"snap{n}", "rb") as f:
        counts: dict[str, int] = pickle.load(f)
    return counts


def package(key: str) -> str:
    """`pydantic_ai`, `sayso`, `stdlib`…, or `builtins` for C functions."""
    if key.startswith("<") or ":" not in key:
        return "builtins"
    path = key.rsplit(":", 1)[0]
    for marker in ("site-packages/", "/src/"):
        if marker in path:
            return path.split(marker, 1)[1].split("/", 1)[0].removesuffix(".py")
    return os.path.basename(os.path.dirname(path)) if "/lib/python3" not in path else "stdlib"


def short(key: str) -> str:
    for marker in ("site-packages/", "/src/", "/lib/python3.11/"):
        if marker in key:
            return key.split(marker, 1)[1]
    return key


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sayso-calls."))
    (folder / "sitecustomize.py").write_text(HOOK)
    os.environ["SERVER_CALLS_DIR"] = str(folder)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH")) if p)
    db = folder / "calls.db"
    with load.sayso_server(f"sqlite:///{db}") as (url, _pid), httpx.Client(base_url=url, timeout=30) as client:
        for n in range(args.warmup):
            load.lone_cycle(client, n)
        time.sleep(0.3)  # what the warm-up woke settles before the first snapshot
        before = snapshot(folder, 1)
        for n in range(args.cycles):
            load.lone_cycle(client, args.warmup + n)
        time.sleep(0.3)
        after = snapshot(folder, 2)
    delta = {k: (v - before.get(k, 0)) / args.cycles for k, v in after.items()}
    per_cycle = {k: v for k, v in delta.items() if "->" not in k}
    total = sum(per_cycle.values())
    # A C function's calls (getattr, isinstance…) are counted with the package of the Python code that made them.
    by_package: collections.Counter[str] = collections.Counter()
    for key, calls in delta.items():
        if "->" in key:
            by_package[package(key.split("->", 1)[0])] += calls
        elif package(key) != "builtins":
            by_package[package(key)] += calls
    by_package["builtins"] += total - sum(by_package.values())  # C functions called from C (or the loop itself)
    print(f"Python calls per lone cycle on the server's event-loop thread: {total:,.0f} ({args.cycles} cycles)\n")
    print("| package (with the C functions its code calls) | calls/cycle | share |\n|---|---:|---:|")
    for name, calls in by_package.most_common(12):
        print(f"| {name} | {calls:,.0f} | {100 * calls / total:.1f}% |")
    print("\n| function | calls/cycle |\n|---|---:|")
    for key, calls in sorted(per_cycle.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"| `{short(key)}` | {calls:,.0f} |")
    print(
        json.dumps(
            {
                "kind": "server_calls",
                "cycles": args.cycles,
                "calls_per_cycle": round(total),
                "by_package": {k: round(v) for k, v in by_package.most_common(12)},
            }
        )
    )


if __name__ == "__main__":
    main()
