#!/usr/bin/env python3
"""Run an anchor script unchanged and add the CPU time of its timed loop to its JSON line.

    cpu_probe.py bench/anchors/pydanticai_cycle.py --cycles 600 --history 0

The anchors are verbatim copies and report only wall time (`seconds`, measured with
`time.perf_counter()` around the timed loop). This wrapper records `time.process_time()` beside
every `time.perf_counter()` call the script makes, runs it as `__main__`, then finds the two
calls `seconds` apart, last first (the loop's start and end) and reports the process CPU time between them
as `cpu_ms_per_cycle` (every thread of the process: the savers' background threads count too).
One extra clock read per `perf_counter` call is the only cost, well under 1 µs.
"""

from __future__ import annotations

import bisect
import contextlib
import io
import json
import runpy
import sys
import time

_perf = time.perf_counter
_cpu = time.process_time
STAMPS: list[tuple[float, float]] = []


def _recording_perf_counter() -> float:
    now = _perf()
    STAMPS.append((now, _cpu()))
    return now


def cpu_of_window(seconds: float) -> float | None:
    """CPU seconds between the last pair of recorded calls `seconds` apart (to the JSON's rounding).

    The loop's end is the last such pair's end: the scripts read the clock little after it.
    """
    times = [t for t, _ in STAMPS]
    for j in range(len(STAMPS) - 1, 0, -1):
        end = times[j]
        i = bisect.bisect_left(times, end - seconds - 0.0005, hi=j)
        while i < j and end - times[i] >= seconds - 0.0005:
            if round(end - times[i], 3) == round(seconds, 3):
                return STAMPS[j][1] - STAMPS[i][1]
            i += 1
    return None


def main() -> None:
    script, *argv = sys.argv[1:]
    sys.argv = [script, *argv]
    time.perf_counter = _recording_perf_counter
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise
    time.perf_counter = _perf
    lines = out.getvalue().strip().splitlines()
    row = json.loads(lines[-1])
    cpu = cpu_of_window(row["seconds"])
    row["cpu_ms_per_cycle"] = None if cpu is None else round(cpu / row["cycles"] * 1e3, 3)
    for line in lines[:-1]:
        print(line)
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
