#!/usr/bin/env python3
"""sayso on the HITL "approve cycle" workload of bench/anchors (see bench/anchors/README.md).

One cycle, on its own thread that already holds H prior user/assistant pairs:
  1. "process A" (one `Sayso` instance, its own engine and connections): `app_a.run(message,
     thread_id=...)`. sayso loads the thread from SQLite, the scripted model asks for
     `delete_file(path)`, the interrupt policy gates it, and the pause (messages, pause, request,
     run status) is committed before `run` returns the request.
  2. "process B" (a second `Sayso` instance built from its own config and model object, sharing
     nothing in memory with A but the file): `app_b.decide(request_id, Approve())` records the
     decision, sees it was the last open request, consumes the pause, loads the run and the
     thread from SQLite, runs the tool through the at-most-once ledger, the model answers, and
     the finished run is committed.

`--mode warm` uses one instance for both halves (a single long-lived worker that pauses and
resumes). Every cycle is checked: the pause is the `delete_file` request and the output is the
expected answer; in warm-up cycles a separate sqlite3 connection confirms the request is on disk
before the resume starts. After the timed loop a fresh `Sayso` instance reloads every thread and
checks it holds 2H+4 messages, that every decision was recorded and nothing is left open.

Prints one JSON line with the anchors' fields.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import platform
import sqlite3
import statistics
import sys
import time
import uuid
from collections import defaultdict
from importlib.metadata import version
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import (
    Counters,
    bench_config,
    cycle_path,
    db_size,
    default_db,
    disk_write_bytes,
    final_answer,
    fresh_db,
    seed_rows,
    seed_threads,
    tool_result,
    user_request,
)

from sayso import ApprovalRequest, Approve, Sayso
from sayso._store import SqlRunStore


class GcClock:
    """CPU time of CPython's cyclic garbage collector, by generation (`gc.callbacks`), for the timed loop.

    A full (generation 2) collection walks every object the process holds, so its cost grows with
    what is loaded (schemas, SQLAlchemy, the engine) as much as with what a cycle allocates.
    """

    def __init__(self) -> None:
        self.cpu = [0.0, 0.0, 0.0]
        self.runs = [0, 0, 0]
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.cpu[info["generation"]] += time.process_time() - self._start
            self.runs[info["generation"]] += 1

    def snapshot(self) -> tuple[list[float], list[int]]:
        return list(self.cpu), list(self.runs)


class StoreTimes:
    """Wall time and calls per store verb (SQL, hops to the store's worker thread, (de)serialization)."""

    def __init__(self) -> None:
        self.s: dict[str, float] = defaultdict(float)
        self.n: dict[str, int] = defaultdict(int)
        self.depth = 0  # store calls made inside another store call count once in "total"

    def install(self) -> None:
        """Time every public coroutine method of `SqlRunStore`, its own and those it inherits."""
        import inspect

        names = {
            name
            for klass in SqlRunStore.__mro__
            for name, fn in vars(klass).items()
            if not name.startswith("_") and inspect.iscoroutinefunction(fn)
        }
        for name in sorted(names - {"open", "aclose", "__aenter__", "__aexit__"}):
            original = getattr(SqlRunStore, name)

            def wrap(fn: Any, key: str) -> Any:
                @functools.wraps(fn)
                async def timed(*a: Any, **k: Any) -> Any:
                    t, c = time.perf_counter(), time.process_time()
                    self.depth += 1
                    try:
                        return await fn(*a, **k)
                    finally:
                        self.depth -= 1
                        took = time.perf_counter() - t
                        self.s[key] += took
                        self.n[key] += 1
                        if self.depth == 0:
                            self.s[" total"] += took
                            self.s[" cpu"] += time.process_time() - c

                return timed

            setattr(SqlRunStore, name, wrap(original, name))

    def install_agent_clock(self) -> None:
        """Count the process CPU time spent inside `Agent.run` (the engine with sayso's gate) as " agent"."""
        from pydantic_ai import Agent

        original = Agent.run

        async def run(agent: Any, *a: Any, **k: Any) -> Any:
            c = time.process_time()
            try:
                return await original(agent, *a, **k)
            finally:
                self.s[" agent"] += time.process_time() - c

        Agent.run = run  # type: ignore[method-assign]  # a process global of the benchmark only

    def install_decode_counter(self) -> None:
        """Count the passes over stored message history as " decodes": `ModelMessagesTypeAdapter.validate_json`, and
        the store's trusted schema (`sayso._store._trusted`) where it decodes a long history."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        from sayso._store import _messages

        original = ModelMessagesTypeAdapter.validate_json
        trusted = getattr(_messages, "trusted_validator", None)  # None: sources from before the trusted schema
        counts = self.n

        def validate_json(*a: Any, **k: Any) -> Any:
            counts[" decodes"] += 1
            return original(*a, **k)

        class Counted:
            def __init__(self, validator: Any) -> None:
                self.validator = validator

            def validate_json(self, *a: Any, **k: Any) -> Any:
                counts[" decodes"] += 1
                return self.validator.validate_json(*a, **k)

        def counted() -> Any:
            assert trusted is not None
            validator = trusted()
            return None if validator is None else Counted(validator)

        if trusted is not None:
            _messages.trusted_validator = counted  # benchmark only
        ModelMessagesTypeAdapter.validate_json = validate_json  # type: ignore[method-assign]  # benchmark only

    def snapshot(self) -> tuple[dict[str, float], dict[str, int]]:
        return dict(self.s), dict(self.n)


class SqliteBackend:
    """The store on a SQLite file: counted at the sqlite3 driver, sized after a WAL checkpoint."""

    name = "sqlite"

    def __init__(self, db: str) -> None:
        self.db = self.url = db
        fresh_db(db)

    def seed(self, threads: list[str], history: int) -> None:
        seed_threads(self.db, threads, history)

    def request_on_disk(self, request_id: str) -> bool:
        raw = sqlite3.connect(self.db)
        try:
            k = raw.execute(
                "SELECT count(*) FROM requests r JOIN pauses p ON p.pause_id = r.pause_id "
                "WHERE r.request_id = ? AND r.status = 'open' AND p.status = 'open'",
                (request_id,),
            ).fetchone()[0]
        finally:
            raw.close()
        return bool(k == 1)

    def size(self) -> int:
        return db_size(self.db)

    def totals(self) -> tuple[int, int, str]:
        raw = sqlite3.connect(self.db)
        try:
            decisions = raw.execute("SELECT count(*) FROM decisions").fetchone()[0]
            completed = raw.execute("SELECT count(*) FROM runs WHERE status = 'completed'").fetchone()[0]
            journal = raw.execute("PRAGMA journal_mode").fetchone()[0]
        finally:
            raw.close()
        return decisions, completed, journal

    def cleanup(self) -> None:
        fresh_db(self.db)


class PostgresBackend:
    """The store on a database of a PostgreSQL server (bench/pg.py): counted at the server."""

    name = "postgresql"

    def __init__(self, dsn: str, datadir: str | None) -> None:
        import psycopg
        from pg import Server

        self.url = dsn
        self.server = Server(dsn=dsn, datadir=datadir) if datadir else None
        self.dbname = dsn.rsplit("/", 1)[1]
        self._connect = lambda: psycopg.connect(dsn, autocommit=True)

    def seed(self, threads: list[str], history: int) -> None:
        with self._connect() as conn, conn.cursor() as cur:
            rows = seed_rows(threads, history)
            cur.executemany(
                "INSERT INTO threads (thread_id, owner, agent, active_run_id, created_at) VALUES (%s, %s, %s, %s, %s)",
                [t for t, _ in rows],
            )
            cur.executemany(
                "INSERT INTO messages (thread_id, seq, run_id, count, body) VALUES (%s, %s, %s, %s, %s)",
                [m for _, m in rows],
            )

    def request_on_disk(self, request_id: str) -> bool:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT count(*) FROM requests r JOIN pauses p ON p.pause_id = r.pause_id "
                "WHERE r.request_id = %s AND r.status = 'open' AND p.status = 'open'",
                (request_id,),
            ).fetchone()
        return row is not None and row[0] == 1

    def size(self) -> int:
        with self._connect() as conn:
            conn.execute("CHECKPOINT")
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        assert row is not None
        return int(row[0])

    def totals(self) -> tuple[int, int, str]:
        with self._connect() as conn:
            decisions = conn.execute("SELECT count(*) FROM decisions").fetchone()
            completed = conn.execute("SELECT count(*) FROM runs WHERE status = 'completed'").fetchone()
            sync = conn.execute("SHOW synchronous_commit").fetchone()
        assert decisions is not None and completed is not None and sync is not None
        return decisions[0], completed[0], f"synchronous_commit={sync[0]}"

    def cleanup(self) -> None:
        pass


async def run(args: argparse.Namespace) -> dict[str, Any]:  # noqa: C901
    backend: SqliteBackend | PostgresBackend = (
        PostgresBackend(args.dsn, args.pg_datadir) if args.dsn else SqliteBackend(args.db)
    )
    args.db = backend.url
    times = StoreTimes()
    times.install()
    times.install_agent_clock()
    times.install_decode_counter()
    gc_clock = GcClock()
    counters = Counters()
    counters.attach_all()  # before any connection opens: every sqlite3 connection of this process is counted
    app_a = Sayso(bench_config(args.db))
    app_b = app_a if args.mode == "warm" else Sayso(bench_config(args.db))
    await app_a.__aenter__()
    if app_b is not app_a:
        await app_b.__aenter__()

    total = args.warmup + args.counted + args.cycles
    threads: list[str | None]
    t_seed = time.perf_counter()
    if args.history:
        seeded = [f"thr_bench{n}_{uuid.uuid4().hex[:12]}" for n in range(total)]
        backend.seed(seeded, args.history)
        threads = list(seeded)
    else:
        threads = [None] * total  # a new thread per cycle, created by the run itself
    seed_s = time.perf_counter() - t_seed
    done: list[str] = []

    async def one_cycle(n: int, tid: str | None, check: bool) -> tuple[float, float]:
        t0 = time.perf_counter()
        r = await app_a.run(user_request(n), thread_id=tid)
        if r.status != "paused" or len(r.requests) != 1:
            raise AssertionError(f"expected a pause, got {r!r}")
        req = r.requests[0]
        if (
            not isinstance(req, ApprovalRequest)
            or req.tool_name != "delete_file"
            or req.args != {"path": cycle_path(n)}
        ):
            raise AssertionError(f"expected the delete_file request, got {req!r}")
        t1 = time.perf_counter()
        if check:  # outside the hot path: the request must already be on disk when run() reports it
            if not backend.request_on_disk(req.request_id):
                raise AssertionError("request not persisted before it was reported")
            t1 = time.perf_counter()
        d = await app_b.decide(req.request_id, Approve())
        want = final_answer(tool_result(cycle_path(n)))
        if not d.recorded or d.run.status != "completed" or d.run.output != want:
            raise AssertionError(f"bad final state: {d!r}")
        t2 = time.perf_counter()
        if check:
            msgs = await app_b.store.load_messages(r.thread_id)
            if len(msgs) != 2 * args.history + 4:
                raise AssertionError(f"thread holds {len(msgs)} messages, want {2 * args.history + 4}")
        done.append(r.thread_id)
        return t1 - t0, t2 - t1

    for n in range(args.warmup):
        await one_cycle(n, threads[n], check=True)

    # Counted cycles: every statement the driver runs is traced, which costs time, so these are
    # not the timed ones (every cycle runs the same statements).
    timed_from = args.warmup + args.counted
    c0 = counters.snapshot()
    counters.enable()
    for n in range(args.warmup, timed_from):
        await one_cycle(n, threads[n], check=False)
    counters.disable()
    c1, s0 = counters.snapshot(), times.snapshot()

    server0 = (
        backend.server.counters(backend.dbname) if isinstance(backend, PostgresBackend) and backend.server else None
    )
    size0 = backend.size()
    io0 = disk_write_bytes()
    pauses, resumes = [], []
    prof = None
    if args.profile:  # bench/profile_cycle.py: cProfile over the timed loop only
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    gc0 = gc_clock.snapshot()
    cpu_start = time.process_time()
    t_start = time.perf_counter()
    for n in range(timed_from, total):
        p, r = await one_cycle(n, threads[n], check=False)
        pauses.append(p)
        resumes.append(r)
    seconds = time.perf_counter() - t_start
    cpu = time.process_time() - cpu_start
    gc1 = gc_clock.snapshot()
    if prof is not None:
        prof.disable()
        prof.dump_stats(args.profile)
    io1 = disk_write_bytes()
    size1, s1 = backend.size(), times.snapshot()
    server1 = (
        backend.server.counters(backend.dbname) if isinstance(backend, PostgresBackend) and backend.server else None
    )

    # Independent check from a fresh instance (own engine): every timed thread (or the last, `--verify
    # last`) is complete, every decision recorded (counted in the tables), nothing open.
    t_verify = time.perf_counter()
    async with Sayso(bench_config(args.db)) as check:
        for n in range(timed_from if args.verify == "all" else total - 1, total):
            msgs = await check.store.load_messages(done[n])
            if len(msgs) != 2 * args.history + 4:
                raise AssertionError(f"thread {done[n]} holds {len(msgs)} messages, want {2 * args.history + 4}")
        last = await check.store.load_messages(done[-1])
        assert last[-1].parts[0].content == final_answer(tool_result(cycle_path(total - 1)))
        assert await check.open_requests(limit=10) == []
    n_decisions, n_completed, journal = backend.totals()
    assert n_decisions == total and n_completed == total, (n_decisions, n_completed, total)
    verify_s = time.perf_counter() - t_verify

    await app_a.__aexit__(None, None, None)
    if app_b is not app_a:
        await app_b.__aexit__(None, None, None)

    n = args.cycles
    counted = max(args.counted, 1)
    cyc = [p + r for p, r in zip(pauses, resumes, strict=True)]
    db_bytes = size1 - size0
    store_ms = {k: round((s1[0][k] - s0[0].get(k, 0.0)) / n * 1e3, 3) for k in sorted(s1[0]) if not k.startswith(" ")}
    store_total = round((s1[0].get(" total", 0.0) - s0[0].get(" total", 0.0)) / n * 1e3, 3)
    store_calls = {k: round((s1[1][k] - s0[1].get(k, 0)) / n, 2) for k in sorted(s1[1]) if not k.startswith(" ")}
    decodes = round((s1[1].get(" decodes", 0) - s0[1].get(" decodes", 0)) / n, 2)
    return {
        "impl": "sayso",
        "cycles": n,
        "history": args.history,
        "seconds": round(seconds, 3),
        "cycles_per_s": round(n / seconds, 1),
        # CPU time of the whole process (event loop and the store's worker threads) per timed cycle:
        # steadier than cycles/s when other work shares the machine.
        "cpu_ms_per_cycle": round(cpu / n * 1e3, 3),
        # ... of which inside the two `Agent.run` calls, and inside (outermost) store calls; the rest is
        # sayso's runtime between them (and the benchmark's loop)
        "agent_cpu_ms_per_cycle": round((s1[0].get(" agent", 0.0) - s0[0].get(" agent", 0.0)) / n * 1e3, 3),
        "store_cpu_ms_per_cycle": round((s1[0].get(" cpu", 0.0) - s0[0].get(" cpu", 0.0)) / n * 1e3, 3),
        # ... of which in the cyclic garbage collector (all generations), and its collections by generation
        "gc_cpu_ms_per_cycle": round((sum(gc1[0]) - sum(gc0[0])) / n * 1e3, 3),
        "gc_collections": [b - a for a, b in zip(gc0[1], gc1[1], strict=True)],
        "db_bytes": db_bytes,
        "bytes_per_cycle": round(db_bytes / n),
        "disk_write_bytes_per_cycle": None if io0 is None or io1 is None else round((io1 - io0) / n),
        # The rest is counted at the sqlite3 driver over `--counted` cycles (see Counters).
        "payload_bytes_per_cycle": round((c1[3] - c0[3]) / counted),
        "payload_all_bytes_per_cycle": round((c1[4] - c0[4]) / counted),
        "commits_per_cycle": round((c1[2] - c0[2]) / counted, 2),
        "fsyncs_per_cycle": round((c1[5] - c0[5]) / counted, 2),
        "transactions_per_cycle": round((c1[1] - c0[1]) / counted, 2),
        "statements_per_cycle": round((c1[0] - c0[0]) / counted, 2),
        # decodes of stored history (one TypeAdapter call each, over every batch of the thread at once)
        "loads_per_cycle": decodes,
        **(server_rates(server0, server1, n) if server0 is not None and server1 is not None else {}),
        # "total" is the wall time inside outermost store calls (a call made by another one counts once)
        "store_ms_per_cycle": {"total": store_total, **store_ms},
        "store_calls_per_cycle": store_calls,
        "p50_ms": round(statistics.median(cyc) * 1e3, 3),
        "p99_ms": round(sorted(cyc)[min(n - 1, int(n * 0.99))] * 1e3, 3),
        "p50_pause_ms": round(statistics.median(pauses) * 1e3, 3),
        "p50_resume_ms": round(statistics.median(resumes) * 1e3, 3),
        "variant": {"mode": args.mode},
        "seed_seconds": round(seed_s, 3),
        "verify_seconds": round(verify_s, 3),
        "warmup": args.warmup,
        "counted": args.counted,
        "store": backend.name,
        "sqlite": {"version": sqlite3.sqlite_version, "journal_mode": journal, "synchronous": 2},
        "versions": {
            "python": platform.python_version(),
            "sayso": version("sayso"),
            "pydantic-ai-slim": version("pydantic-ai-slim"),
            "pydantic": version("pydantic"),
            "sqlalchemy": version("sqlalchemy"),
            "aiosqlite": version("aiosqlite"),
        },
        "db": args.db,
    }


def server_rates(before: dict[str, float], after: dict[str, float], n: int) -> dict[str, Any]:
    """PostgreSQL: what the server counted over the timed cycles (every client counts: the bench is its only one)."""
    per = {k: (after[k] - before[k]) / n for k in before}
    return {
        "statements_per_cycle": round(per["statements"], 2),
        "transactions_per_cycle": round(per["commits"], 2),
        "commits_per_cycle": round(per["commits"], 2),
        "fsyncs_per_cycle": round(per["wal_syncs"], 2),
        "wal_bytes_per_cycle": round(per["wal_bytes"]),
        "server_cpu_ms_per_cycle": round(per["cpu_s"] * 1e3, 3),
        "payload_bytes_per_cycle": None,
        "payload_all_bytes_per_cycle": None,
        "counted_at": "server",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=2000)
    ap.add_argument("--history", type=int, default=0, help="prior user/assistant pairs in each thread")
    ap.add_argument("--warmup", type=int, default=20, help="untimed, fully checked cycles first (own threads)")
    ap.add_argument(
        "--counted", type=int, default=10, help="untimed cycles after the warm-up whose SQL is counted at the driver"
    )
    ap.add_argument(
        "--mode",
        choices=["split", "warm"],
        default="split",
        help="split: pause in instance A, resume in instance B; warm: one instance does both",
    )
    ap.add_argument(
        "--db", default=None, help="SQLite file (deleted first); default under the temp folder's bench_anchors/"
    )
    ap.add_argument("--keep-db", action="store_true", help="leave the SQLite file behind")
    ap.add_argument(
        "--verify",
        choices=["all", "last"],
        default="all",
        help="reload every timed thread after the loop, or only the last one as the anchors do (bench/instructions.py)",
    )
    ap.add_argument("--dsn", default=None, help="run on this PostgreSQL database instead of SQLite (a fresh one)")
    ap.add_argument("--pg-datadir", default=None, help="the PostgreSQL server's data directory (for its CPU time)")
    ap.add_argument("--profile", default=None, help="write cProfile stats of the timed loop to this file")
    args = ap.parse_args()
    if args.cycles < 1:
        ap.error("--cycles must be >= 1")
    if args.db is None:
        args.db = default_db(f"sayso-H{args.history}")
    sqlite_file = args.db
    try:
        result = asyncio.run(run(args))
    finally:
        if not args.keep_db and not args.dsn:
            fresh_db(sqlite_file)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    sys.exit(main())
