#!/usr/bin/env python3
"""sayso on the "workflow cycle" workload (see workflow_common.py): three nodes, one input pause.

The workflow `order`: START → quote → confirm → finish. `confirm` yields `RequestInput` with the
message, the quote as payload and `Confirmation` as the response schema. One cycle:

1. **process A** (one `Sayso` instance, its own engine and connections): `app_a.run(order,
   agent="order")`. The run and thread are created, `quote` runs and its output is saved,
   `confirm` asks, and the pause (its `input` request and the workflow's state) is committed
   before `run` returns the request.
2. **process B** (a second `Sayso` instance built from its own config, sharing nothing in memory
   with A but the file): `app_b.decide(request_id, Provide(value=answer))` checks the answer
   against the schema, records it, consumes the pause, loads the workflow's state, replays
   `confirm` with the answer (validated into `Confirmation`), saves its output, runs `finish`
   and commits the finished run.

Every cycle is checked: the pause carries the quote, the result is the expected text; in the
warm-up cycles a separate sqlite3 connection confirms the request is on disk before the resume.
After the timed loop a fresh instance reloads every run and checks it completed with the
expected output and nothing is left open.

`--mode warm` uses one instance for both halves. Prints one JSON line with the fields of
workflow_langgraph.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import statistics
import sys
import time
from collections.abc import Generator
from importlib.metadata import version
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Counters
from workflow_common import (
    CONFIRM_MESSAGE,
    Confirmation,
    answer,
    db_size,
    default_db,
    expected,
    fresh_db,
    make_quote,
    order,
    pragma,
    receipt,
)

from sayso import Config, InputRequest, Provide, RequestInput, Sayso, ScriptedModel, Workflow
from sayso._engine.scripted import Script
from sayso.workflows import START


def quote(node_input: dict[str, Any]) -> dict[str, Any]:
    return make_quote(node_input)


def confirm(node_input: dict[str, Any]) -> Generator[Any, Any, dict[str, Any]]:
    confirmation = yield RequestInput(CONFIRM_MESSAGE, payload=node_input, response_schema=Confirmation)
    return {"quote": node_input, "confirmation": confirmation}


def finish(node_input: dict[str, Any]) -> str:
    return receipt(node_input["quote"], Confirmation.model_validate(node_input["confirmation"]))


def bench_config(db: str) -> Config:
    """A fresh config for one Sayso instance: its own workflow object and (unused) agent."""
    idle = ScriptedModel(Script(name="idle", rules=[], fallback="idle"))
    return Config.model_validate(
        {
            "store": f"sqlite:///{db}",
            "agents": {"idle": {"model": idle, "ask_user": False}},
            "workflows": {"order": Workflow("order", edges=[(START, quote, confirm, finish)])},
        }
    )


async def run(args: argparse.Namespace) -> dict[str, Any]:  # noqa: C901 - one benchmark, read top to bottom
    fresh_db(args.db)
    counters = Counters()
    counters.attach_all()  # before any connection opens: every sqlite3 connection of this process is counted
    app_a = Sayso(bench_config(args.db))
    app_b = app_a if args.mode == "warm" else Sayso(bench_config(args.db))
    await app_a.__aenter__()
    if app_b is not app_a:
        await app_b.__aenter__()

    total = args.warmup + args.counted + args.cycles
    runs: list[str] = []

    async def one_cycle(n: int, check: bool) -> tuple[float, float]:
        t0 = time.perf_counter()
        paused = await app_a.run(json.dumps(order(n)), agent="order")
        if paused.status != "paused" or len(paused.requests) != 1:
            raise AssertionError(f"expected a pause, got {paused!r}")
        request = paused.requests[0]
        if not isinstance(request, InputRequest) or request.payload != make_quote(order(n)):
            raise AssertionError(f"expected the confirm request with the quote, got {request!r}")
        t1 = time.perf_counter()
        if check:  # outside the timed path: the request must already be on disk
            raw = sqlite3.connect(args.db)
            found = raw.execute(
                "SELECT count(*) FROM requests r JOIN pauses p ON p.pause_id = r.pause_id "
                "WHERE r.request_id = ? AND r.status = 'open' AND p.status = 'open'",
                (request.request_id,),
            ).fetchone()[0]
            raw.close()
            if found != 1:
                raise AssertionError("input request not persisted before it was reported")
            t1 = time.perf_counter()
        done = await app_b.decide(request.request_id, Provide(value=answer(n)))
        if done.run.status != "completed" or done.run.output != expected(n):
            raise AssertionError(f"bad final state: {done!r}")
        t2 = time.perf_counter()
        runs.append(paused.run_id)
        return t1 - t0, t2 - t1

    for n in range(args.warmup):
        await one_cycle(n, check=True)

    # Counted cycles: every statement the driver runs is traced, which costs time, so these are
    # not the timed ones (every cycle runs the same statements).
    timed_from = args.warmup + args.counted
    c0 = counters.snapshot()
    counters.enable()
    for n in range(args.warmup, timed_from):
        await one_cycle(n, check=False)
    counters.disable()
    c1 = counters.snapshot()
    counted = max(args.counted, 1)

    size0 = db_size(args.db)
    pauses, resumes = [], []
    prof = None
    if args.profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    started, cpu_started = time.perf_counter(), time.process_time()
    for n in range(timed_from, total):
        p, r = await one_cycle(n, check=False)
        pauses.append(p)
        resumes.append(r)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    if prof is not None:
        prof.disable()
        prof.dump_stats(args.profile)
    size1 = db_size(args.db)

    # Independent check from a fresh instance: every run completed with its output, nothing open.
    async with Sayso(bench_config(args.db)) as check:
        for n, run_id in enumerate(runs):
            result = await check.result(run_id)
            if (result.status, result.output) != ("completed", expected(n)):
                raise AssertionError(f"run {run_id} ended as {result!r}")
        assert await check.open_requests(limit=10) == []

    await app_a.__aexit__(None, None, None)
    if app_b is not app_a:
        await app_b.__aexit__(None, None, None)

    n = args.cycles
    cycles = [p + r for p, r in zip(pauses, resumes, strict=True)]
    return {
        "impl": "sayso",
        "workload": "workflow",
        "cycles": n,
        "seconds": round(seconds, 3),
        "cycles_per_s": round(n / seconds, 1),
        "cpu_ms_per_cycle": round(cpu_seconds / n * 1e3, 3),
        "bytes_per_cycle": round((size1 - size0) / n),
        # Counted at the sqlite3 driver over `--counted` cycles (see Counters).
        "commits_per_cycle": round((c1[2] - c0[2]) / counted, 2),
        "fsyncs_per_cycle": round((c1[5] - c0[5]) / counted, 2),
        "transactions_per_cycle": round((c1[1] - c0[1]) / counted, 2),
        "statements_per_cycle": round((c1[0] - c0[0]) / counted, 2),
        "payload_bytes_per_cycle": round((c1[3] - c0[3]) / counted),
        "p50_ms": round(statistics.median(cycles) * 1e3, 3),
        "p99_ms": round(sorted(cycles)[min(n - 1, int(n * 0.99))] * 1e3, 3),
        "p50_pause_ms": round(statistics.median(pauses) * 1e3, 3),
        "p50_resume_ms": round(statistics.median(resumes) * 1e3, 3),
        "variant": {"mode": args.mode},
        "warmup": args.warmup,
        "sqlite": {
            "version": sqlite3.sqlite_version,
            "journal_mode": pragma(args.db, "journal_mode"),
            "synchronous": 2,
        },
        "versions": {
            "python": platform.python_version(),
            "sayso": version("sayso"),
            "pydantic": version("pydantic"),
            "sqlalchemy": version("sqlalchemy"),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=20, help="untimed, fully checked cycles first")
    parser.add_argument(
        "--counted", type=int, default=20, help="untimed cycles whose SQL is counted at the driver, after the warmup"
    )
    parser.add_argument("--mode", choices=["split", "warm"], default="split", help="split: A pauses, B resumes")
    parser.add_argument("--db", default=None, help="SQLite file (deleted first); default under the temp folder")
    parser.add_argument("--keep-db", action="store_true", help="leave the SQLite file behind")
    parser.add_argument("--profile", default=None, help="write cProfile stats of the timed loop to this file")
    args = parser.parse_args()
    if args.cycles < 1:
        parser.error("--cycles must be >= 1")
    args.db = args.db or default_db("sayso-workflow")
    try:
        result = asyncio.run(run(args))
    finally:
        if not args.keep_db:
            fresh_db(args.db)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    sys.exit(main())
