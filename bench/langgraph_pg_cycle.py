#!/usr/bin/env python3
"""LangGraph's side of the PostgreSQL column: the approve cycle of anchors/langgraph_cycle.py on `PostgresSaver`.

The graph, the scripted model, the workload text and the checks are the anchor's own (imported
from it); only the checkpointer changes: `langgraph-checkpoint-postgres`'s `PostgresSaver`, one
per "process" (A pauses, B resumes with its own connection), on a database of the server
bench/pg.py starts (`fsync=on`, `synchronous_commit=on`), with LangGraph's default durability.

    langgraph_pg_cycle.py --dsn postgresql://…/db --pg-datadir DIR --cycles 300 --history 0

Prints one JSON line with the anchor's fields plus CPU ms per cycle of this process and of the
server, and what the server counted (statements, commits, WAL fsyncs, WAL bytes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import uuid
from importlib.metadata import version
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "anchors"))

import psycopg
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.types import Command
from langgraph_cycle import Counts, build_graph, cycle_path, final_answer, history_messages, tool_result, user_request
from pg import Server
from psycopg.rows import dict_row


class CountingSaver(PostgresSaver):
    counts: Counts

    def put(self, *a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return super().put(*a, **k)
        finally:
            self.counts.put += 1
            self.counts.put_s += time.perf_counter() - t

    def put_writes(self, *a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return super().put_writes(*a, **k)
        finally:
            self.counts.put_writes += 1
            self.counts.put_s += time.perf_counter() - t

    def get_tuple(self, *a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return super().get_tuple(*a, **k)
        finally:
            self.counts.get += 1
            self.counts.get_s += time.perf_counter() - t


def connect(dsn: str) -> Any:
    """A connection as `PostgresSaver.from_conn_string` makes one."""
    return psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)


def payload(conn: Any) -> int:
    """Serialized bytes held in the saver's tables (checkpoints, channel blobs, pending writes)."""
    row = conn.execute(
        "SELECT (SELECT coalesce(sum(pg_column_size(checkpoint) + pg_column_size(metadata)), 0) FROM checkpoints)"
        " + (SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_blobs)"
        " + (SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_writes) AS n"
    ).fetchone()
    return int(row["n"])


def size(conn: Any) -> int:
    conn.execute("CHECKPOINT")
    return int(conn.execute("SELECT pg_database_size(current_database()) AS n").fetchone()["n"])


def run(args: argparse.Namespace) -> dict[str, Any]:
    server = Server(dsn=args.dsn, datadir=args.pg_datadir) if args.pg_datadir else None
    dbname = args.dsn.rsplit("/", 1)[1]
    counts = Counts()
    conn_a, conn_b, probe = connect(args.dsn), connect(args.dsn), connect(args.dsn)
    saver_a, saver_b = CountingSaver(conn_a), CountingSaver(conn_b)
    saver_a.counts = saver_b.counts = counts
    saver_a.setup()
    graph_a = build_graph(saver_a, "node", "add_messages")  # "process A": takes the user message
    graph_b = build_graph(saver_b, "node", "add_messages")  # "process B": applies the approval

    total = args.warmup + args.cycles
    threads = [f"lg-{n}-{uuid.uuid4().hex[:8]}" for n in range(total)]
    t_seed = time.perf_counter()
    if args.history:
        for tid in threads:
            graph_a.update_state(
                {"configurable": {"thread_id": tid}},
                {"messages": history_messages(args.history, tid)},
                as_node="agent",
            )
    seed_s = time.perf_counter() - t_seed

    def one_cycle(n: int, tid: str, check: bool) -> tuple[float, float]:
        cfg = {"configurable": {"thread_id": tid}}
        t0 = time.perf_counter()
        out = graph_a.invoke({"messages": [HumanMessage(content=user_request(n))]}, cfg, durability=args.durability)
        intr = out.get("__interrupt__")
        if not intr or intr[0].value["tool"] != "delete_file":
            raise AssertionError(f"expected a pause, got {out!r}")
        t1 = time.perf_counter()
        if check:  # outside the hot path: the pause must already be committed
            k = probe.execute(
                "SELECT count(*) AS n FROM checkpoint_writes WHERE thread_id = %s AND channel = '__interrupt__'",
                (tid,),
            ).fetchone()["n"]
            if k != 1:
                raise AssertionError("interrupt not persisted before resume")
            t1 = time.perf_counter()
        out2 = graph_b.invoke(Command(resume="approved"), cfg, durability=args.durability)
        msgs = out2["messages"]
        if msgs[-1].content != final_answer(tool_result(cycle_path(n))) or len(msgs) != 2 * args.history + 4:
            raise AssertionError(f"bad final state: {msgs[-1]!r} len={len(msgs)}")
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1

    for n in range(args.warmup):
        one_cycle(n, threads[n], check=True)

    server0 = server.counters(dbname) if server else None
    size0, pay0, c0 = size(probe), payload(probe), counts.snapshot()
    pauses, resumes = [], []
    cpu0 = time.process_time()
    t_start = time.perf_counter()
    for n in range(args.warmup, total):
        p, r = one_cycle(n, threads[n], check=False)
        pauses.append(p)
        resumes.append(r)
    seconds = time.perf_counter() - t_start
    cpu = time.process_time() - cpu0
    # with durability="async" the last checkpoint writes may still be in flight: the server waits
    server1 = server.counters(dbname) if server else None
    size1, pay1, c1 = size(probe), payload(probe), counts.snapshot()

    check = build_graph(PostgresSaver(probe), "node", "add_messages")
    snap = check.get_state({"configurable": {"thread_id": threads[-1]}})
    assert snap.next == () and snap.values["messages"][-1].content == final_answer(tool_result(cycle_path(total - 1)))
    sync = probe.execute("SHOW synchronous_commit").fetchone()["synchronous_commit"]
    for c in (conn_a, conn_b, probe):
        c.close()

    n = args.cycles
    cyc = [p + r for p, r in zip(pauses, resumes, strict=True)]
    result: dict[str, Any] = {
        "impl": "langgraph",
        "store": "postgresql",
        "cycles": n,
        "history": args.history,
        "seconds": round(seconds, 3),
        "cycles_per_s": round(n / seconds, 1),
        "cpu_ms_per_cycle": round(cpu / n * 1e3, 3),
        "db_bytes": size1 - size0,
        "bytes_per_cycle": round((size1 - size0) / n),
        "payload_bytes_per_cycle": round((pay1 - pay0) / n),
        "checkpoints_per_cycle": round((c1[0] - c0[0]) / n, 2),
        "put_writes_per_cycle": round((c1[1] - c0[1]) / n, 2),
        "loads_per_cycle": round((c1[2] - c0[2]) / n, 2),
        "p50_ms": round(statistics.median(cyc) * 1e3, 3),
        "p99_ms": round(sorted(cyc)[min(n - 1, int(n * 0.99))] * 1e3, 3),
        "p50_pause_ms": round(statistics.median(pauses) * 1e3, 3),
        "p50_resume_ms": round(statistics.median(resumes) * 1e3, 3),
        "variant": {"saver": "postgres", "durability": args.durability},
        "seed_seconds": round(seed_s, 3),
        "warmup": args.warmup,
        "postgres": {"synchronous_commit": sync},
        "versions": {
            "python": platform.python_version(),
            "langgraph": version("langgraph"),
            "langgraph-checkpoint": version("langgraph-checkpoint"),
            "langgraph-checkpoint-postgres": version("langgraph-checkpoint-postgres"),
            "psycopg": version("psycopg"),
        },
    }
    if server0 is not None and server1 is not None:
        per = {k: (server1[k] - server0[k]) / n for k in server0}
        result.update(
            statements_per_cycle=round(per["statements"], 2),
            commits_per_cycle=round(per["commits"], 2),
            fsyncs_per_cycle=round(per["wal_syncs"], 2),
            wal_bytes_per_cycle=round(per["wal_bytes"]),
            server_cpu_ms_per_cycle=round(per["cpu_s"] * 1e3, 3),
        )
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", required=True, help="a fresh database on the benchmark's PostgreSQL server")
    ap.add_argument("--pg-datadir", default=None, help="the server's data directory (for its CPU time)")
    ap.add_argument("--cycles", type=int, default=300)
    ap.add_argument("--history", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--durability", choices=["sync", "async", "exit"], default="async", help="LangGraph default: async")
    args = ap.parse_args()
    print(json.dumps(run(args)), flush=True)


if __name__ == "__main__":
    main()
