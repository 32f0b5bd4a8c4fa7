#!/usr/bin/env python3
"""How long the `sayso` command takes to start, as ratios to `python -c "import pydantic_ai"` (issue 27).

  bench/cli_start.py            # medians of 5, interleaved; the last line is one JSON object

Each repetition times, one after another in fresh processes: the reference (`import pydantic_ai`),
`sayso --help`, `sayso inbox CONFIG` on a store with one paused run, `sayso decide` approving a
paused run (which then resumes and finishes), and `bench/bare_resume.py resume`: a process that does
only pydantic-ai's part of that resume (import it and `FunctionModel`, decode the history, run the
agent with the approval, commit), the floor pydantic-ai itself sets under `decide`'s ratio. The run
to decide is paused beforehand, untimed. The config is the no-API-key starter `sayso init` writes.
Ratios, not seconds, so a loaded machine still compares like with like.

sayso's own modules are byte-compiled first (`compileall`, what pip does when it installs a wheel), so both
sides load cached bytecode as installed packages do: pydantic-ai's site-packages hold their `.pyc`, while an
editable checkout under `PYTHONDONTWRITEBYTECODE=1` (as on the shared bench machine) never writes sayso's and
would recompile ~150 modules of its source in every timed process (~0.2x of `decide`'s ratio, ~0.08x of
`inbox`'s). `--from-source` measures the checkout as it is instead (`.pyc` written earlier, by this
script or anyone, are still used: delete `src/sayso/**/__pycache__` first to time the sources).
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

PY = sys.executable
SAYSO = os.path.join(os.path.dirname(PY), "sayso")
BARE_RESUME = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bare_resume.py")
ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}


CPU: dict[str, list[float]] = {}
"""CPU seconds (user + system) of each timed process, by name: steadier than wall time on a shared machine."""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(*args: str, name: str = "") -> tuple[float, str]:
    """Wall seconds of one fresh process, and what it printed (its CPU seconds go to `CPU[name]`)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(list(args), capture_output=True, text=True, env=ENV, check=False)
    took = time.perf_counter() - start
    if name:
        CPU.setdefault(name, []).append(_children_cpu() - cpu)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {done.returncode}: {done.stderr[-1000:]}")
    return took, done.stdout


def paused_request(config: str) -> str:
    """Pause a new run on the starter's refund approval; the id of the request it opened."""
    out = subprocess.run(
        [SAYSO, "run", config, "refund A-100 25", "--json"], capture_output=True, text=True, env=ENV, check=True
    ).stdout
    return str(json.loads(out)["requests"][0]["id"])


def compile_sayso() -> None:
    """Write the `.pyc` of every sayso module (as installing a wheel does) where the timed processes import it."""
    spec = importlib.util.find_spec("sayso")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("sayso is not importable by this Python")
    for folder in spec.submodule_search_locations:
        if not compileall.compile_dir(folder, quiet=1):
            raise SystemExit(f"could not byte-compile {folder}")


def measure(repeats: int, *, compiled: bool = True) -> dict[str, float]:
    """Medians of `repeats` interleaved rounds, in seconds and as ratios to importing pydantic-ai.

    `compiled`: sayso's bytecode written first (`compile_sayso`), as an installed package has it."""
    if compiled:
        compile_sayso()
    with tempfile.TemporaryDirectory(prefix="sayso-cli-start-") as folder:
        subprocess.run([SAYSO, "init", folder], capture_output=True, env=ENV, check=True)
        config = os.path.join(folder, "sayso.yaml")
        paused_request(config)  # `inbox` lists one open request
        bare_db = os.path.join(folder, "bare.sqlite")
        subprocess.run([PY, BARE_RESUME, "pause", bare_db], capture_output=True, env=ENV, check=True)
        seconds: dict[str, list[float]] = {"import": [], "help": [], "inbox": [], "decide": [], "bare_resume": []}
        for _ in range(repeats):
            request_id = paused_request(config)
            seconds["import"].append(timed(PY, "-c", "import pydantic_ai", name="import")[0])
            seconds["help"].append(timed(SAYSO, "--help", name="help")[0])
            seconds["inbox"].append(timed(SAYSO, "inbox", config, name="inbox")[0])
            took, out = timed(SAYSO, "decide", config, request_id, "approve", "--json", name="decide")
            if json.loads(out)["status"] != "completed":
                raise SystemExit(f"decide did not finish the run: {out[:500]}")
            seconds["decide"].append(took)
            seconds["bare_resume"].append(timed(PY, BARE_RESUME, "resume", bare_db, name="bare_resume")[0])
    med = {k: statistics.median(v) for k, v in seconds.items()}
    cpu = {k: statistics.median(v) for k, v in CPU.items()}
    return {
        "cli_import_pydantic_ai_s": round(med["import"], 3),
        "cli_help_s": round(med["help"], 3),
        "cli_inbox_s": round(med["inbox"], 3),
        "cli_decide_s": round(med["decide"], 3),
        "cli_help_vs_import": round(med["help"] / med["import"], 3),
        "cli_inbox_vs_import": round(med["inbox"] / med["import"], 3),
        "cli_decide_vs_import": round(med["decide"] / med["import"], 3),
        "cli_bare_resume_vs_import": round(med["bare_resume"] / med["import"], 3),
        "cli_help_cpu_vs_import": round(cpu["help"] / cpu["import"], 3),
        "cli_inbox_cpu_vs_import": round(cpu["inbox"] / cpu["import"], 3),
        "cli_decide_cpu_vs_import": round(cpu["decide"] / cpu["import"], 3),
        "cli_bare_resume_cpu_vs_import": round(cpu["bare_resume"] / cpu["import"], 3),
        "cli_repeats": repeats,
        "cli_sayso_compiled": compiled,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--from-source", action="store_true", help="do not byte-compile sayso first (a checkout as it is)")
    args = ap.parse_args()
    result = measure(args.repeats, compiled=not args.from_source)
    source = "byte-compiled" if result["cli_sayso_compiled"] else "from source"
    print(
        f"| command (median of {result['cli_repeats']}, sayso {source}) | seconds | vs `import pydantic_ai` | CPU vs |"
    )
    print("|---|---:|---:|---:|")
    print(f"| `python -c 'import pydantic_ai'` | {result['cli_import_pydantic_ai_s']} | 1.0 | 1.0 |")
    for name, command in (("help", "--help"), ("inbox", "inbox CONFIG"), ("decide", "decide CONFIG ID approve")):
        wall, cpu = result[f"cli_{name}_vs_import"], result[f"cli_{name}_cpu_vs_import"]
        print(f"| `sayso {command}` | {result[f'cli_{name}_s']} | {wall} | {cpu} |")
    wall, cpu = result["cli_bare_resume_vs_import"], result["cli_bare_resume_cpu_vs_import"]
    print(f"| pydantic-ai's part of that resume alone (`bench/bare_resume.py`) | | {wall} | {cpu} |")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
