#!/usr/bin/env python3
"""Scale on PostgreSQL: the inbox, a resume and memory from 10 to 1,000,000 paused runs (make bench only).

On a throwaway server (bench/pg.py), `--sizes[0]` runs (10) are paused for real through
`Sayso.run`. The store then grows to each next size by bulk copies made by the server itself in
one statement per table (`generate_series` joined with one real paused run): its `threads`,
`runs`, `pauses`, `requests` and `messages` rows under fresh ids, the request body rewritten
(`jsonb_set`) to name its new ids, copies older than the real runs and 1 ms apart.

At each size a fresh process (pinned) opens two `Sayso` instances on the store and measures, all
through the public API, after a `CHECKPOINT` (so no background flush of the bulk load runs
meanwhile), `--rounds` times, alternating with the same measurement of a second store that keeps
10 paused runs, so every size has a baseline taken under the same machine conditions: its RSS
after opening and after serving; `inbox(limit=50)` (the first page, as REST's
`GET /v1/requests` asks it) and `open_requests(limit=50)`, first call and median; `result()` of
random paused runs; and the resume latency: a fresh run is paused through `app_a.run` (untimed),
then a random open request is decided through `app_b.decide(..., Approve())` and timed to the
completed run, so the store holds the same number of paused runs at every sample.

Prints a markdown table, writes the plot (`--plot`, PNG) and prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import bench_config, rss_bytes, user_request
from pg import postgres_server

from sayso import Approve, Sayso

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 100_000

_COPY = [
    "INSERT INTO threads (thread_id, owner, agent, active_run_id, created_at) "
    "SELECT g.tid, t.owner, t.agent, g.rid, g.created FROM g, threads t WHERE t.thread_id = %(thread)s",
    "INSERT INTO runs (run_id, thread_id, agent, status, prompt, client_tools, principal, resume_pause_id, pause_id, "
    "output, error, lease_holder, lease_expires_at, created_at, updated_at, revision, parent_run_id, parent_call_id, "
    "agent_path) SELECT g.rid, g.tid, r.agent, r.status, r.prompt, r.client_tools, r.principal, r.resume_pause_id, "
    "g.pid, r.output, r.error, r.lease_holder, r.lease_expires_at, g.created, g.created, r.revision, r.parent_run_id, "
    "r.parent_call_id, r.agent_path FROM g, runs r WHERE r.run_id = %(run)s",
    "INSERT INTO pauses (pause_id, run_id, status, created_at) "
    "SELECT g.pid, g.rid, p.status, g.created FROM g, pauses p WHERE p.pause_id = %(pause)s",
    "INSERT INTO requests (request_id, pause_id, position, run_id, thread_id, agent_path, kind, status, created_at, "
    "expires_at, body) SELECT g.qid, g.pid, q.position, g.rid, g.tid, q.agent_path, q.kind, q.status, g.created, "
    "q.expires_at, convert_to(jsonb_set(jsonb_set(jsonb_set(jsonb_set(convert_from(q.body, 'UTF8')::jsonb, "
    "'{request_id}', to_jsonb(g.qid)), '{run_id}', to_jsonb(g.rid)), '{thread_id}', to_jsonb(g.tid)), "
    "'{created_at}', to_jsonb(g.created))::text, 'UTF8') FROM g, requests q WHERE q.request_id = %(request)s",
    "INSERT INTO messages (thread_id, seq, run_id, count, body) "
    "SELECT g.tid, m.seq, g.rid, m.count, m.body FROM g, messages m WHERE m.thread_id = %(thread)s",
]


def connect(dsn: str) -> Any:
    import psycopg

    return psycopg.connect(dsn, autocommit=True)


async def pause_real(dsn: str, count: int) -> float:
    """Pause `count` runs through the public API; seconds taken."""
    t = time.perf_counter()
    async with Sayso(bench_config(dsn)) as app:
        for n in range(count):
            assert (await app.run(user_request(n))).status == "paused"
    return time.perf_counter() - t


def paused_count(dsn: str) -> int:
    with connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM pauses WHERE status = 'open'").fetchone()
    return int(row[0])


def grow(dsn: str, size: int) -> float:
    """Bulk-copy paused runs until the store holds `size`; seconds taken."""
    t = time.perf_counter()
    with connect(dsn) as conn:
        tpl = conn.execute(
            "SELECT r.run_id, r.thread_id, r.pause_id, q.request_id, q.created_at FROM runs r "
            "JOIN requests q ON q.pause_id = r.pause_id WHERE r.status = 'paused' ORDER BY q.created_at DESC LIMIT 1"
        ).fetchone()
        oldest = conn.execute("SELECT min(created_at) FROM requests").fetchone()[0]
        ids = {"run": tpl[0], "thread": tpl[1], "pause": tpl[2], "request": tpl[3]}
        have = paused_count(dsn)
        while have < size:
            n = min(BATCH, size - have)
            with conn.transaction():
                conn.execute(
                    "CREATE TEMP TABLE g ON COMMIT DROP AS SELECT i, "
                    "'thr_' || md5(random()::text || i) AS tid, 'run_' || md5(random()::text || i) AS rid, "
                    "'pau_' || md5(random()::text || i) AS pid, 'req_' || md5(random()::text || i) AS qid, "
                    "(%(oldest)s - (%(offset)s + i) * 0.001)::float8 AS created FROM generate_series(1, %(n)s) AS i",
                    {"oldest": oldest, "offset": have, "n": n},
                )
                for sql in _COPY:
                    conn.execute(sql, ids)
            have += n
        conn.execute("ANALYZE")
    return time.perf_counter() - t


def checkpoint(dsn: str) -> None:
    with connect(dsn) as conn:
        conn.execute("CHECKPOINT")


def db_bytes(dsn: str) -> int:
    with connect(dsn) as conn:
        conn.execute("CHECKPOINT")
        return int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])


async def measure(dsn: str, resumes: int, pages: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with connect(dsn) as conn:
        paused = int(conn.execute("SELECT count(*) FROM pauses WHERE status = 'open'").fetchone()[0])
        run_ids = [
            r[0] for r in conn.execute("SELECT run_id FROM runs WHERE status = 'paused' ORDER BY random() LIMIT 200")
        ]
    out["paused"] = paused
    async with Sayso(bench_config(dsn)) as app_a, Sayso(bench_config(dsn)) as app_b:
        out["rss_idle"] = rss_bytes()
        for name, call in (
            ("inbox", lambda: app_a.inbox(limit=50)),
            ("open_requests", lambda: app_a.open_requests(limit=50)),
        ):
            t = time.perf_counter()
            first = await call()
            out[f"{name}_cold_ms"] = round((time.perf_counter() - t) * 1e3, 3)
            listed = first.requests if name == "inbox" else first  # type: ignore[union-attr]
            assert len(listed) == min(50, paused), (name, len(listed))
            warm = []
            for _ in range(pages):
                t = time.perf_counter()
                await call()
                warm.append(time.perf_counter() - t)
            warm.sort()
            out[f"{name}_ms"] = round(statistics.median(warm) * 1e3, 3)
            out[f"{name}_p99_ms"] = round(warm[min(len(warm) - 1, int(len(warm) * 0.99))] * 1e3, 3)
        t = time.perf_counter()
        for rid in run_ids:
            res = await app_a.result(rid)
            assert res.status == "paused" and len(res.requests) == 1
        out["result_ms"] = round((time.perf_counter() - t) / len(run_ids) * 1e3, 3)
        lat, pause_lat = [], []
        picks: list[str] = []
        if paused > 1_000:  # one random sample up front: a random row of a million costs a scan each time
            with connect(dsn) as conn:
                rows = conn.execute(
                    "SELECT request_id FROM requests WHERE status = 'open' ORDER BY random() LIMIT %s", (resumes,)
                )
                picks = [r[0] for r in rows]
        for n in range(resumes):
            t = time.perf_counter()
            fresh = await app_a.run(user_request(20_000_000 + n))
            pause_lat.append(time.perf_counter() - t)
            if picks:
                request_id = picks[n]
            else:
                with connect(dsn) as conn:
                    (request_id,) = conn.execute(
                        "SELECT request_id FROM requests WHERE status = 'open' AND request_id <> %s "
                        "ORDER BY random() LIMIT 1",
                        (fresh.requests[0].request_id,),
                    ).fetchone()
            t = time.perf_counter()
            done = await app_b.decide(request_id, Approve())
            lat.append(time.perf_counter() - t)
            assert done.run.status == "completed", done
        out["resume_ms"] = round(statistics.median(lat) * 1e3, 3)
        out["resume_ms_min_max"] = [round(min(lat) * 1e3, 3), round(max(lat) * 1e3, 3)]
        out["pause_ms"] = round(statistics.median(pause_lat) * 1e3, 3)
        out["rss_served"] = rss_bytes()
    out["rss_growth"] = out["rss_served"] - out["rss_idle"]
    return out


def plot(points: list[dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [p["paused"] for p in points]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for key, label in (
        ("inbox_ms", "first inbox page (median)"),
        ("open_requests_ms", "open_requests(limit=50) (median)"),
        ("resume_ms", "resume: decide → completed (median)"),
        ("baseline_resume_ms", "resume with 10 paused runs, measured alternately"),
        ("pause_ms", "pause: run → paused (median)"),
        ("result_ms", "result(run_id)"),
    ):
        style = ":" if key.startswith("baseline") else "-"
        left.plot(sizes, [p[key] for p in points], marker="o", linestyle=style, label=label)
    left.axhline(50, color="grey", linestyle=":", linewidth=1, label="50 ms")
    left.set_xscale("log")
    left.set_xlabel("paused runs in the store")
    left.set_ylabel("ms")
    left.set_title("sayso on PostgreSQL: latency as paused runs grow")
    left.legend(fontsize=8)
    right.plot(sizes, [p["rss_idle"] / 2**20 for p in points], marker="o", label="RSS after opening")
    right.plot(sizes, [p["rss_served"] / 2**20 for p in points], marker="o", label="RSS after serving")
    right.set_xscale("log")
    right.set_ylim(bottom=0)
    right.set_xlabel("paused runs in the store")
    right.set_ylabel("MiB")
    right.set_title("memory of the process serving them")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def measure_in_process(dsn: str, args: argparse.Namespace) -> dict[str, Any]:
    """One measurement in a fresh pinned process."""
    res = subprocess.run(
        [
            *pin(),
            sys.executable,
            __file__,
            "--measure",
            dsn,
            "--resumes",
            str(args.resumes),
            "--pages",
            str(args.pages),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        raise SystemExit(f"measuring {dsn} failed:\n{res.stderr[-4000:]}")
    row: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return row


def medians(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Field by field, the median of several measurements (min and max of the resume latencies)."""
    out: dict[str, Any] = {}
    for key, value in rows[0].items():
        if key == "resume_ms_min_max":
            out[key] = [min(r[key][0] for r in rows), max(r[key][1] for r in rows)]
        elif key == "paused":
            out[key] = value
        elif isinstance(value, int | float):
            out[key] = round(statistics.median(r[key] for r in rows), 3)
    return out


def table(points: list[dict[str, Any]]) -> str:
    """The measurements as a markdown table."""
    rows = [
        "| paused runs | first inbox page ms: median (p99, first call) | open_requests ms | result ms "
        "| resume ms: median (min–max) | … ÷ the same at 10, measured alternately | pause ms "
        "| RSS MiB idle → served | database |",
        "|---:|---|---:|---:|---|---:|---:|---|---:|",
    ]
    for p in points:
        low, high = p["resume_ms_min_max"]
        rows.append(
            f"| {p['paused']:,} | {p['inbox_ms']} ({p['inbox_p99_ms']}, {p['inbox_cold_ms']}) | "
            f"{p['open_requests_ms']} | {p['result_ms']} | {p['resume_ms']} ({low}–{high}) | "
            f"{p['resume_vs_baseline']}× | {p['pause_ms']} | "
            f"{p['rss_idle'] / 2**20:.0f} → {p['rss_served'] / 2**20:.0f} | {p['db_bytes'] / 2**20:,.0f} MiB |"
        )
    return "\n".join(rows)


def pin() -> list[str]:
    if os.environ.get("BENCH_PIN", "1") != "1" or shutil.which("taskset") is None:
        return []
    return ["taskset", "-c", "0"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 1_000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--resumes", type=int, default=60)
    ap.add_argument("--pages", type=int, default=50, help="warm first-page listings per size")
    ap.add_argument("--rounds", type=int, default=3, help="measurements per size, alternating with the baseline")
    ap.add_argument("--plot", default=os.path.join(HERE, "results", "scale-pg.png"))
    ap.add_argument("--measure", metavar="DSN", help=argparse.SUPPRESS)  # one measurement, in a fresh process
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(asyncio.run(measure(args.measure, args.resumes, args.pages))), flush=True)
        return
    points: list[dict[str, Any]] = []
    with postgres_server(pin()) as server:
        dsn, small = server.create_database("sayso_scale"), server.create_database("sayso_scale_small")
        real_s = asyncio.run(pause_real(dsn, args.sizes[0]))
        asyncio.run(pause_real(small, args.sizes[0]))
        print(f"paused {args.sizes[0]} runs for real in {real_s:.1f} s", file=sys.stderr, flush=True)
        for size in args.sizes:
            grow_s = grow(dsn, size)
            checkpoint(dsn)
            large_runs, small_runs = [], []
            for round_ in range(args.rounds):
                for which, sink in ((dsn, large_runs), (small, small_runs))[:: 1 if round_ % 2 == 0 else -1]:
                    sink.append(measure_in_process(which, args))
            point = medians(large_runs)
            base = medians(small_runs)
            point.update(
                grow_seconds=round(grow_s, 1),
                db_bytes=db_bytes(dsn),
                baseline_resume_ms=base["resume_ms"],
                baseline_inbox_ms=base["inbox_ms"],
                resume_vs_baseline=round(point["resume_ms"] / base["resume_ms"], 2),
            )
            points.append(point)
            print(
                f"{point['paused']:>9,} paused: inbox {point['inbox_ms']} ms (cold {point['inbox_cold_ms']}), "
                f"resume {point['resume_ms']} ms vs {base['resume_ms']} ms at {args.sizes[0]} "
                f"({point['resume_vs_baseline']}x), RSS {point['rss_served'] / 2**20:.0f} MiB (grew in {grow_s:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    os.makedirs(os.path.dirname(args.plot), exist_ok=True)
    plot(points, args.plot)
    base, top = points[0], points[-1]
    summary = {
        "paused": top["paused"],
        "first_page_ms": top["inbox_ms"],
        "first_page_cold_ms": top["inbox_cold_ms"],
        "resume_ms_small": top["baseline_resume_ms"],
        "resume_ms_large": top["resume_ms"],
        "resume_ratio": top["resume_vs_baseline"],
        "rss_served_mb_small": round(base["rss_served"] / 2**20, 1),
        "rss_served_mb_large": round(top["rss_served"] / 2**20, 1),
    }
    print(table(points))
    print(json.dumps({"kind": "scale_pg", "points": points, "summary": summary, "plot": args.plot}), flush=True)


if __name__ == "__main__":
    main()
