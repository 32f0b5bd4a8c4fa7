#!/usr/bin/env python3
"""sayso's footprint with many paused runs in one SQLite store.

  footprint.py --paused 100000            # seed both stores, measure both, print one JSON line

Seeding (not timed, not through the measured API):
  1. `--sample` runs (default 200) are paused for real through `Sayso.run` (H=0, the approve-cycle
     request), so every table holds genuine rows written by the runtime.
  2. The rest are bulk copies of those rows made with plain SQL in one transaction: for each copy,
     new thread/run/pause/request ids (same format as the runtime's: prefix + 128 random bits),
     the `threads`, `runs`, `pauses`, `requests` and `messages` rows of one sample run inserted
     again under the new ids, with the request body re-serialized through sayso's own
     `REQUEST_ADAPTER` so it names its new ids and a distinct `created_at` (copies are spread
     one millisecond apart, older than the real ones). The message log is copied byte for byte.

Measured, each in a fresh process that only opens the store (pinned like the rest of the bench):
  - size on disk after `wal_checkpoint(TRUNCATE)`;
  - resident memory (VmRSS): after `Sayso` has opened the store ("idle"), then after serving:
    listing the first inbox page 200 times, `result()` of 1,000 random paused runs, and the
    resumes below;
  - `await app.open_requests(limit=50)`: first (cold) call and the median of 100 warm calls;
  - resume latency: `await app_b.decide(request_id, Approve())` of a random paused run, from a
    second `Sayso` instance (the cycle's "process B"), median of `--resumes` samples. Before each
    sample a new pause is made through `app_a.run` (untimed), so the store holds the same number
    of paused runs at every sample.
Both stores (10 and N paused runs) are measured the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import secrets
import sqlite3
import statistics
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import bench_config, db_size, default_db, fresh_db, rss_bytes, user_request

from sayso import Approve, Sayso
from sayso._core.requests import REQUEST_ADAPTER


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_urlsafe(16)}"


async def seed(db: str, paused: int, sample: int) -> dict[str, Any]:
    fresh_db(db)
    t0 = time.perf_counter()
    real = min(sample, paused)
    async with Sayso(bench_config(db)) as app:
        for n in range(real):
            r = await app.run(user_request(n))
            assert r.status == "paused"
    t_real = time.perf_counter() - t0
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    rows: dict[str, list[dict[str, Any]]] = {}
    for table in ("threads", "runs", "pauses", "requests", "messages"):
        rows[table] = [dict(r) for r in conn.execute(f"SELECT * FROM {table}")]
    samples = []
    for run in rows["runs"]:
        samples.append(
            {
                "thread": next(t for t in rows["threads"] if t["thread_id"] == run["thread_id"]),
                "run": run,
                "pause": next(p for p in rows["pauses"] if p["run_id"] == run["run_id"]),
                "request": next(q for q in rows["requests"] if q["run_id"] == run["run_id"]),
                "messages": [m for m in rows["messages"] if m["thread_id"] == run["thread_id"]],
            }
        )
    copies = paused - real
    oldest = min(q["created_at"] for q in rows["requests"])
    t1 = time.perf_counter()
    batch: dict[str, list[dict[str, Any]]] = {k: [] for k in rows}

    def flush() -> None:
        for table, items in batch.items():
            if items:
                cols = list(items[0])
                conn.executemany(
                    f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                    [tuple(i[c] for c in cols) for i in items],
                )
                items.clear()

    with conn:
        for i in range(copies):
            s = samples[i % len(samples)]
            tid, rid, pid, qid = new_id("thr"), new_id("run"), new_id("pau"), new_id("req")
            created = oldest - (copies - i) * 0.001
            batch["threads"].append({**s["thread"], "thread_id": tid, "active_run_id": rid, "created_at": created})
            batch["runs"].append(
                {
                    **s["run"],
                    "run_id": rid,
                    "thread_id": tid,
                    "pause_id": pid,
                    "created_at": created,
                    "updated_at": created,
                }
            )
            batch["pauses"].append({**s["pause"], "pause_id": pid, "run_id": rid, "created_at": created})
            req = REQUEST_ADAPTER.validate_json(s["request"]["body"])
            req = dataclasses.replace(req, request_id=qid, run_id=rid, thread_id=tid, created_at=created)
            batch["requests"].append(
                {
                    **s["request"],
                    "request_id": qid,
                    "pause_id": pid,
                    "run_id": rid,
                    "thread_id": tid,
                    "created_at": created,
                    "body": REQUEST_ADAPTER.dump_json(req),
                }
            )
            for m in s["messages"]:
                batch["messages"].append({**m, "thread_id": tid, "run_id": rid})
            if len(batch["runs"]) >= 10_000:
                flush()
        flush()
    conn.close()
    t_copy = time.perf_counter() - t1
    check = sqlite3.connect(db)
    n_open = check.execute(
        "SELECT count(*) FROM requests r JOIN pauses p ON p.pause_id = r.pause_id "
        "WHERE r.status = 'open' AND p.status = 'open'"
    ).fetchone()[0]
    check.close()
    assert n_open == paused, (n_open, paused)
    return {
        "paused": paused,
        "real_pauses": real,
        "copied": copies,
        "real_seconds": round(t_real, 2),
        "copy_seconds": round(t_copy, 2),
        "db_bytes": db_size(db),
    }


async def measure(db: str, resumes: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["rss_before_open"] = rss_bytes()
    raw = sqlite3.connect(db)
    paused0 = raw.execute("SELECT count(*) FROM runs WHERE status = 'paused'").fetchone()[0]
    raw.close()
    async with Sayso(bench_config(db)) as app_a, Sayso(bench_config(db)) as app_b:
        out["rss_idle"] = rss_bytes()
        t = time.perf_counter()
        page = await app_a.open_requests(limit=50)
        out["first_page_cold_ms"] = round((time.perf_counter() - t) * 1e3, 3)
        assert len(page) == min(50, paused0)
        warm = []
        for _ in range(100):
            t = time.perf_counter()
            page = await app_a.open_requests(limit=50)
            warm.append(time.perf_counter() - t)
        out["first_page_ms"] = round(statistics.median(warm) * 1e3, 3)
        out["first_page_p99_ms"] = round(sorted(warm)[98] * 1e3, 3)
        for _ in range(100):
            await app_a.open_requests(limit=50)
        # serve: look up random paused runs (SQLite picks them, so the harness never holds 100k ids in memory)
        raw = sqlite3.connect(db)
        run_ids = [
            r[0] for r in raw.execute("SELECT run_id FROM runs WHERE status = 'paused' ORDER BY random() LIMIT 1000")
        ]
        raw.close()
        t = time.perf_counter()
        for rid in run_ids:
            res = await app_a.result(rid)
            assert res.status == "paused" and len(res.requests) == 1
        out["result_ms"] = round((time.perf_counter() - t) / len(run_ids) * 1e3, 3)
        # resumes at a constant number of paused runs: each pause is followed by the resume of an older one.
        # The requests to decide are picked before the loop: a scan of the whole table right before each
        # timed resume (as this did once) made the resume pay for the scan's cache misses (+2.4 ms at 100k).
        raw = sqlite3.connect(db)
        pick = "SELECT request_id FROM requests WHERE status = 'open' ORDER BY random() LIMIT ?"
        picked = [r[0] for r in raw.execute(pick, (resumes,))]
        raw.close()
        lat, pause_lat = [], []
        for n, rid in enumerate(picked):
            t = time.perf_counter()
            fresh = await app_a.run(user_request(10_000_000 + n))
            pause_lat.append(time.perf_counter() - t)
            assert fresh.status == "paused"
            t = time.perf_counter()
            d = await app_b.decide(rid, Approve())
            lat.append(time.perf_counter() - t)
            assert d.run.status == "completed", d
        raw = sqlite3.connect(db)
        (count,) = raw.execute("SELECT count(*) FROM runs WHERE status = 'paused'").fetchone()
        raw.close()
        assert count == paused0, (count, paused0)
        out["resume_samples_ms"] = [round(x * 1e3, 3) for x in lat]
        out["pause_samples_ms"] = [round(x * 1e3, 3) for x in pause_lat]
        out["resume_ms"] = round(statistics.median(lat) * 1e3, 3)
        out["resume_ms_min_max"] = [round(min(lat) * 1e3, 3), round(max(lat) * 1e3, 3)]
        out["pause_ms"] = round(statistics.median(pause_lat) * 1e3, 3)
        out["rss_served"] = rss_bytes()
    out["paused_runs"] = paused0
    out["rss_growth"] = out["rss_served"] - out["rss_idle"]
    return out


def sub(args: list[str]) -> dict[str, Any]:
    pin = ["taskset", "-c", "0"] if os.environ.get("BENCH_PIN", "1") == "1" else []
    res = subprocess.run(
        [*pin, sys.executable, os.path.abspath(__file__), *args], check=False, capture_output=True, text=True
    )
    if res.returncode != 0:
        raise SystemExit(f"footprint.py {' '.join(args)} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("phase", nargs="?", choices=["all", "seed", "measure"], default="all")
    ap.add_argument("--paused", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=10)
    ap.add_argument("--sample", type=int, default=200, help="pauses made for real before bulk copying")
    ap.add_argument("--resumes", type=int, default=40, help="resume samples per measuring process")
    ap.add_argument("--rounds", type=int, default=3, help="measuring processes per store, alternating")
    ap.add_argument("--db", default=None)
    ap.add_argument("--keep-db", action="store_true")
    args = ap.parse_args()
    if args.phase == "seed":
        print(json.dumps(asyncio.run(seed(args.db, args.paused, args.sample))))
        return
    if args.phase == "measure":
        print(json.dumps(asyncio.run(measure(args.db, args.resumes))))
        return
    result: dict[str, Any] = {"impl": "sayso", "kind": "footprint"}
    dbs = {}
    try:
        for label, n in (("small", args.small), ("large", args.paused)):
            dbs[label] = args.db + f".{label}" if args.db else default_db(f"sayso-footprint-{n}")
            result[f"{label}_seed"] = sub(
                ["seed", "--db", dbs[label], "--paused", str(n), "--sample", str(args.sample)]
            )
        # Measure the two stores alternately (small, large, small, large, ...), each time in a fresh
        # process, so that drifting load on the machine hits both alike; latencies pool every sample.
        rounds: dict[str, list[dict[str, Any]]] = {"small": [], "large": []}
        for _ in range(args.rounds):
            for label in ("small", "large"):
                rounds[label].append(sub(["measure", "--db", dbs[label], "--resumes", str(args.resumes)]))
    finally:
        if not args.keep_db:
            for db in dbs.values():
                fresh_db(db)
    for label, rs in rounds.items():
        first = dict(rs[0])
        res = [x for r in rs for x in r["resume_samples_ms"]]
        pau = [x for r in rs for x in r["pause_samples_ms"]]
        first.update(
            rounds=len(rs),
            resume_ms=round(statistics.median(res), 3),
            resume_ms_min_max=[min(res), max(res)],
            pause_ms=round(statistics.median(pau), 3),
            first_page_ms=round(statistics.median(r["first_page_ms"] for r in rs), 3),
            first_page_cold_ms=max(r["first_page_cold_ms"] for r in rs),
            first_page_p99_ms=max(r["first_page_p99_ms"] for r in rs),
            result_ms=round(statistics.median(r["result_ms"] for r in rs), 3),
            rss_idle=max(r["rss_idle"] for r in rs),
            rss_served=max(r["rss_served"] for r in rs),
            rss_growth=max(r["rss_growth"] for r in rs),
        )
        result[label] = first
    s, big = result["small"], result["large"]
    result["summary"] = {
        "paused": args.paused,
        "db_bytes": result["large_seed"]["db_bytes"],
        "bytes_per_paused_run": round(result["large_seed"]["db_bytes"] / args.paused),
        "rss_idle_mb": round(big["rss_idle"] / 2**20, 1),
        "rss_served_mb": round(big["rss_served"] / 2**20, 1),
        "rss_growth_mb": round(big["rss_growth"] / 2**20, 1),
        "rss_served_small_mb": round(s["rss_served"] / 2**20, 1),
        "first_page_ms": big["first_page_ms"],
        "first_page_cold_ms": big["first_page_cold_ms"],
        "first_page_ms_small": s["first_page_ms"],
        "resume_ms_small": s["resume_ms"],
        "resume_ms_large": big["resume_ms"],
        "resume_ratio": round(big["resume_ms"] / s["resume_ms"], 2),
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
