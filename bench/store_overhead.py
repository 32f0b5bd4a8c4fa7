#!/usr/bin/env python3
"""What one store round trip costs, by layer: evidence for the optimisations in ANALYSIS.md.

On a store holding a few completed cycles, it times the same read of one `runs` row by primary
key, and the same small write transaction (one UPDATE, fsynced), each done several ways:

  - `SqlRunStore.get_run` / `set_mark`: sayso as it is (constant SQL through the stdlib driver: a
    read inline on the event loop, a write in one worker-thread hop);
  - the same statement through SQLAlchemy's async engine and aiosqlite (what sayso used before),
    in `engine.begin()` and in `engine.connect()` (no BEGIN IMMEDIATE and no COMMIT);
  - the same statement on an engine made with `pool_reset_on_return=None`;
  - one hop per transaction: stdlib sqlite3 doing the whole transaction in one call on a
    worker thread (`anyio.to_thread.run_sync`), the shape a store could take;
  - stdlib sqlite3 called directly on the event loop, as the pydantic-ai anchor does.

Prints a markdown table (µs per operation, median of --n) and a JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import anyio
import sqlalchemy as sa
from common import bench_config, default_db, fresh_db, user_request
from sqlalchemy.ext.asyncio import create_async_engine

from sayso import Approve, Sayso
from sayso._store import _tables as t
from sayso._store._sql import _make_sqlite_durable


async def timed(fn: Callable[[], Awaitable[Any]], n: int) -> float:
    for _ in range(20):
        await fn()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    db = args.db
    fresh_db(db)
    async with Sayso(bench_config(db)) as app:
        for n in range(20):
            r = await app.run(user_request(n))
            await app.decide(r.requests[0].request_id, Approve())
        run_id = r.run_id
        store = app.store
        engine = store.engine
        quiet = create_async_engine(store.url, pool_reset_on_return=None)
        _make_sqlite_durable(quiet.sync_engine)
        q = sa.select(t.runs).where(t.runs.c.run_id == run_id)
        w = t.runs.update().where(t.runs.c.run_id == run_id).values(updated_at=t.runs.c.updated_at + 1)

        async def sayso_get_run() -> None:
            await store.get_run(run_id)

        async def sayso_set_mark() -> None:
            await store.set_mark("bench", "overhead", "x")

        async def sa_begin_read() -> None:
            async with engine.begin() as conn:
                (await conn.execute(q)).first()

        async def sa_connect_read() -> None:
            async with engine.connect() as conn:
                (await conn.execute(q)).first()

        async def sa_noreset_read() -> None:
            async with quiet.begin() as conn:
                (await conn.execute(q)).first()

        async def sa_write() -> None:
            async with engine.begin() as conn:
                await conn.execute(w)

        raw = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
        raw.execute("PRAGMA synchronous=FULL")
        sql_r = "SELECT * FROM runs WHERE run_id = ?"
        sql_w = "UPDATE runs SET updated_at = updated_at + 1 WHERE run_id = ?"

        def tx_read() -> None:
            raw.execute("BEGIN")
            raw.execute(sql_r, (run_id,)).fetchone()
            raw.execute("COMMIT")

        def tx_write() -> None:
            raw.execute("BEGIN IMMEDIATE")
            raw.execute(sql_w, (run_id,))
            raw.execute("COMMIT")

        limiter = anyio.CapacityLimiter(1)

        async def hop_read() -> None:
            await anyio.to_thread.run_sync(tx_read, limiter=limiter)

        async def hop_write() -> None:
            await anyio.to_thread.run_sync(tx_write, limiter=limiter)

        async def direct_read() -> None:
            tx_read()

        async def direct_write() -> None:
            tx_write()

        n = args.n
        rows = [
            ("read one run by id: `SqlRunStore.get_run` (sayso: plain SQL, inline)", await timed(sayso_get_run, n)),
            ("read: same SELECT in `engine.begin()` (BEGIN IMMEDIATE … COMMIT)", await timed(sa_begin_read, n)),
            ("read: same SELECT in `engine.connect()` (no BEGIN IMMEDIATE / COMMIT)", await timed(sa_connect_read, n)),
            ("read: `engine.begin()` with `pool_reset_on_return=None`", await timed(sa_noreset_read, n)),
            ("read: whole transaction in one worker-thread hop (sqlite3 + anyio)", await timed(hop_read, n)),
            ("read: sqlite3 on the event loop (pydantic-ai anchor style)", await timed(direct_read, n)),
            ("write one row + fsynced COMMIT: `SqlRunStore.set_mark` (sayso: one hop)", await timed(sayso_set_mark, n)),
            ("write one UPDATE + fsynced COMMIT: SQLAlchemy `engine.begin()`", await timed(sa_write, n)),
            ("write: whole transaction in one worker-thread hop", await timed(hop_write, n)),
            ("write: sqlite3 on the event loop", await timed(direct_write, n)),
        ]
        raw.close()
        await quiet.dispose()
    fresh_db(db)
    return {"rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--db", default=default_db("sayso-overhead"))
    args = ap.parse_args()
    out = asyncio.run(main_async(args))
    print("| operation | µs (median) |\n|---|---:|")
    for name, us in out["rows"]:
        print(f"| {name} | {us:,.0f} |")
    print(json.dumps({"kind": "store_overhead", "rows": [[name, round(us, 1)] for name, us in out["rows"]]}))


if __name__ == "__main__":
    main()
