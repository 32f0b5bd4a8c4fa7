#!/usr/bin/env python3
"""Instructions per approve cycle, sayso against the two anchors, counted by valgrind: a yardstick load does not move.

    .venv/bin/python bench/instructions.py                  # H=0, 20 and 80 cycles of each; ~5-9 min on 2 cores
    .venv/bin/python bench/instructions.py --history 500 --cycles 5 20
    .venv/bin/python bench/instructions.py --only sayso --baseline ../other/src   # an A/B of two sayso versions

The throughput ratios (`bench/run.py`) are what the issues' goals are stated in, but on a shared
VM one process's CPU per cycle moves by 10-40 % between runs, which hides any change worth a few
percent. `valgrind --tool=callgrind` counts the instructions a process executes, whatever else
the machine does: the same script, inputs and build give the same count to a fraction of a
percent. Each script runs twice (`--cycles A B`) and the difference of the two counts over `B - A`
is its cost per cycle, so start-up, imports, seeding and warm-up cancel out. The cost it leaves out
is the kernel's (fsync, thread switches, `epoll`) and cache misses: instructions are a floor of CPU
time, not a measure of it. Compare like with like: two versions of sayso (`--baseline`) run the same
code shape, and their ratio says how much work a change saved. Across implementations the ratio is
not a CPU ratio: LangGraph's cycle executes ~2.6x fewer instructions than sayso's yet takes ~0.6x its
CPU time (more of it is the kernel's and cache misses), pydantic-ai's ~0.85x for ~0.7x.

sayso is `bench/sayso_cycle.py` with `--verify last` (the anchors check the last thread only; checking
every timed thread would count one more history load per cycle). `PYTHONHASHSEED=0` keeps set and
dict orders the same from run to run; what is left of the noise (random ids) is ~1 %. The runs go in
parallel, two at a time (valgrind is single-threaded), under ~50x slowdown. Needs Debian's `valgrind`.

Prints one JSON line: millions of instructions per cycle for each, and sayso's ratio to each anchor.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = {
    "sayso": [os.path.join(HERE, "sayso_cycle.py"), "--verify", "last", "--counted", "0"],
    "pydantic_ai": [os.path.join(HERE, "anchors", "pydanticai_cycle.py")],
    "langgraph": [os.path.join(HERE, "anchors", "langgraph_cycle.py")],
}
TOTAL = re.compile(r"Collected\s*:\s*(\d+)|I\s+refs:\s*([\d,]+)")


def instructions(name: str, cycles: int, args: argparse.Namespace, folder: str) -> int:
    """Instructions the whole process executed for `cycles` timed cycles (callgrind's total)."""
    script = SCRIPTS["sayso" if name == "baseline" else name]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if name == "baseline":
        env["PYTHONPATH"] = os.path.abspath(args.baseline)
    out = os.path.join(folder, f"{name}-{cycles}.callgrind")
    db = os.path.join(folder, f"{name}-{cycles}.sqlite")
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        *script,
        "--cycles",
        str(cycles),
        "--warmup",
        str(args.warmup),
        "--history",
        str(args.history),
        "--db",
        db,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    for match in TOTAL.finditer(done.stderr):
        return int((match.group(1) or match.group(2)).replace(",", ""))
    raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--history", type=int, default=0, help="prior user/assistant pairs in each thread")
    ap.add_argument("--cycles", type=int, nargs=2, default=[20, 80], metavar=("A", "B"), help="the two run lengths")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--only", nargs="+", choices=sorted(SCRIPTS), default=sorted(SCRIPTS))
    ap.add_argument("--baseline", default=None, metavar="SRC", help="also count sayso imported from this src folder")
    args = ap.parse_args()
    low, high = args.cycles
    if not 0 < low < high:
        ap.error("--cycles A B needs 0 < A < B")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="sayso-instructions.") as folder, ThreadPoolExecutor(2) as pool:
        names = [*args.only, *(["baseline"] if args.baseline else [])]
        runs = {(name, n): pool.submit(instructions, name, n, args, folder) for name in names for n in (low, high)}
        per_cycle = {name: (runs[name, high].result() - runs[name, low].result()) / (high - low) for name in names}
    result: dict[str, object] = {"kind": "instructions", "history": args.history, "cycles": [low, high]}
    result.update({f"{name}_minstr_per_cycle": round(v / 1e6, 3) for name, v in per_cycle.items()})
    if "sayso" in per_cycle:
        for anchor in ("pydantic_ai", "langgraph", "baseline"):
            if anchor in per_cycle:
                result[f"sayso_vs_{anchor}"] = round(per_cycle["sayso"] / per_cycle[anchor], 3)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
