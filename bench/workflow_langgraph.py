#!/usr/bin/env python3
"""LangGraph on the "workflow cycle" workload (see workflow_common.py): three nodes, one input pause.

`StateGraph`: START → quote → confirm → finish → END. `confirm` calls `interrupt()` with the
message, the quote as payload and the answer's JSON Schema; the graph pauses and LangGraph's
`SqliteSaver` (`--saver async`: `AsyncSqliteSaver`) commits the checkpoint. A second compiled
graph with its own sqlite3 connection (sharing nothing with the first but the file) resumes it
with `Command(resume=answer)`; `confirm` validates the answer with the same pydantic model
sayso uses, `finish` writes the receipt.

Every cycle is checked: the pause carries the quote, and the result is the expected text; in the
warm-up cycles a separate connection confirms the interrupt is on disk before the resume. After
the timed loop a fresh saver reloads the last thread and checks it finished.

Prints one JSON line.
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
import uuid
from importlib.metadata import version
from typing import Any, TypedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
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

SCHEMA = Confirmation.model_json_schema()


class State(TypedDict, total=False):
    request: dict[str, Any]
    quote: dict[str, Any]
    confirmation: dict[str, Any]
    result: str


def quote(state: State) -> State:
    return {"quote": make_quote(state["request"])}


def confirm(state: State) -> State:
    raw = interrupt({"message": CONFIRM_MESSAGE, "payload": state["quote"], "response_schema": SCHEMA})
    return {"confirmation": Confirmation.model_validate(raw).model_dump()}


def finish(state: State) -> State:
    return {"result": receipt(state["quote"], Confirmation.model_validate(state["confirmation"]))}


async def aquote(state: State) -> State:
    return quote(state)


async def aconfirm(state: State) -> State:
    return confirm(state)


async def afinish(state: State) -> State:
    return finish(state)


def build_graph(checkpointer: Any, *, is_async: bool) -> Any:
    builder = StateGraph(State)
    builder.add_node("quote", aquote if is_async else quote)
    builder.add_node("confirm", aconfirm if is_async else confirm)
    builder.add_node("finish", afinish if is_async else finish)
    builder.add_edge(START, "quote")
    builder.add_edge("quote", "confirm")
    builder.add_edge("confirm", "finish")
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=checkpointer)


class Counts:
    def __init__(self) -> None:
        self.put = 0
        self.put_writes = 0
        self.get = 0


def counting(base: type) -> type:
    """A saver class that counts checkpoint writes and loads (sync and async methods)."""

    class Counting(base):  # type: ignore[misc, valid-type]
        counts: Counts

        def put(self, *a: Any, **k: Any) -> Any:
            self.counts.put += 1
            return super().put(*a, **k)

        def put_writes(self, *a: Any, **k: Any) -> Any:
            self.counts.put_writes += 1
            return super().put_writes(*a, **k)

        def get_tuple(self, *a: Any, **k: Any) -> Any:
            self.counts.get += 1
            return super().get_tuple(*a, **k)

        async def aput(self, *a: Any, **k: Any) -> Any:
            self.counts.put += 1
            return await super().aput(*a, **k)

        async def aput_writes(self, *a: Any, **k: Any) -> Any:
            self.counts.put_writes += 1
            return await super().aput_writes(*a, **k)

        async def aget_tuple(self, *a: Any, **k: Any) -> Any:
            self.counts.get += 1
            return await super().aget_tuple(*a, **k)

    return Counting


async def open_savers(args: argparse.Namespace, counts: Counts) -> tuple[Any, Any, Any, Any]:
    """Two savers ("process A" and "process B"), each on its own connection to the file, set up."""
    if args.saver == "async":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        saver_class = counting(AsyncSqliteSaver)
        conn_a: Any = await aiosqlite.connect(args.db)
        conn_b: Any = await aiosqlite.connect(args.db)
    else:
        saver_class = counting(SqliteSaver)
        conn_a = sqlite3.connect(args.db, check_same_thread=False)
        conn_b = sqlite3.connect(args.db, check_same_thread=False)
    savers = []
    for connection in (conn_a, conn_b):
        saver = saver_class(connection)
        saver.counts = counts
        if args.saver == "async":
            await saver.setup()
        else:
            saver.setup()
        savers.append(saver)
    return savers[0], savers[1], conn_a, conn_b


async def run(args: argparse.Namespace) -> dict[str, Any]:
    fresh_db(args.db)
    is_async = args.saver == "async"
    counts = Counts()
    saver_a, saver_b, conn_a, conn_b = await open_savers(args, counts)
    graph_a = build_graph(saver_a, is_async=is_async)  # "process A": starts the workflow
    graph_b = build_graph(saver_b, is_async=is_async)  # "process B": gives the input and finishes it

    async def invoke(graph: Any, value: Any, config: dict[str, Any]) -> Any:
        if is_async:
            return await graph.ainvoke(value, config, durability=args.durability)
        return graph.invoke(value, config, durability=args.durability)

    total = args.warmup + args.cycles
    threads = [f"wf-{n}-{uuid.uuid4().hex[:8]}" for n in range(total)]

    async def one_cycle(n: int, thread_id: str, check: bool) -> tuple[float, float]:
        config = {"configurable": {"thread_id": thread_id}}
        t0 = time.perf_counter()
        out = await invoke(graph_a, {"request": order(n)}, config)
        interrupts = out.get("__interrupt__")
        if not interrupts or interrupts[0].value["payload"] != make_quote(order(n)):
            raise AssertionError(f"expected a pause with the quote, got {out!r}")
        t1 = time.perf_counter()
        if check:  # outside the timed path: the pause must already be on disk
            raw = sqlite3.connect(args.db)
            found = raw.execute(
                "SELECT count(*) FROM writes WHERE thread_id = ? AND channel = '__interrupt__'", (thread_id,)
            ).fetchone()[0]
            raw.close()
            if found != 1:
                raise AssertionError("interrupt not persisted before resume")
            t1 = time.perf_counter()
        graph = build_graph(saver_b, is_async=is_async) if args.rebuild else graph_b
        out = await invoke(graph, Command(resume=answer(n)), config)
        if out.get("result") != expected(n):
            raise AssertionError(f"bad final state: {out!r}")
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1

    for n in range(args.warmup):
        await one_cycle(n, threads[n], check=True)
    size0 = db_size(args.db)
    c0 = (counts.put, counts.put_writes, counts.get)
    pauses, resumes = [], []
    started, cpu_started = time.perf_counter(), time.process_time()
    for n in range(args.warmup, total):
        p, r = await one_cycle(n, threads[n], check=False)
        pauses.append(p)
        resumes.append(r)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    size1 = db_size(args.db)
    c1 = (counts.put, counts.put_writes, counts.get)

    # Independent check from a fresh saver: the last thread finished with the expected result.
    check_conn = sqlite3.connect(args.db, check_same_thread=False)
    snapshot = build_graph(SqliteSaver(check_conn), is_async=False).get_state(
        {"configurable": {"thread_id": threads[-1]}}
    )
    assert snapshot.next == () and snapshot.values["result"] == expected(total - 1)
    check_conn.close()
    if is_async:
        await conn_a.close()
        await conn_b.close()
    else:
        conn_a.close()
        conn_b.close()

    n = args.cycles
    cycles = [p + r for p, r in zip(pauses, resumes, strict=True)]
    return {
        "impl": "langgraph",
        "workload": "workflow",
        "cycles": n,
        "seconds": round(seconds, 3),
        "cycles_per_s": round(n / seconds, 1),
        "cpu_ms_per_cycle": round(cpu_seconds / n * 1e3, 3),
        "bytes_per_cycle": round((size1 - size0) / n),
        "checkpoints_per_cycle": round((c1[0] - c0[0]) / n, 2),
        "put_writes_per_cycle": round((c1[1] - c0[1]) / n, 2),
        "loads_per_cycle": round((c1[2] - c0[2]) / n, 2),
        "p50_ms": round(statistics.median(cycles) * 1e3, 3),
        "p99_ms": round(sorted(cycles)[min(n - 1, int(n * 0.99))] * 1e3, 3),
        "p50_pause_ms": round(statistics.median(pauses) * 1e3, 3),
        "p50_resume_ms": round(statistics.median(resumes) * 1e3, 3),
        "variant": {"saver": args.saver, "durability": args.durability, "rebuild": args.rebuild},
        "warmup": args.warmup,
        "sqlite": {
            "version": sqlite3.sqlite_version,
            "journal_mode": pragma(args.db, "journal_mode"),
            "synchronous": pragma(args.db, "synchronous"),
        },
        "versions": {
            "python": platform.python_version(),
            "langgraph": version("langgraph"),
            "langgraph-checkpoint-sqlite": version("langgraph-checkpoint-sqlite"),
        },
    }


def drive(coro: Any) -> Any:
    """Run a coroutine that never suspends, without an event loop (the sync saver's path, as the anchor does)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("the sync path suspended; it must not await anything real")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=20, help="untimed cycles first (own threads)")
    parser.add_argument("--db", default=None, help="SQLite file (deleted first); default under the temp folder")
    parser.add_argument("--saver", choices=["sync", "async"], default="sync", help="SqliteSaver or AsyncSqliteSaver")
    parser.add_argument(
        "--durability", choices=["sync", "async", "exit"], default="async", help="LangGraph's default: async"
    )
    parser.add_argument("--rebuild", action="store_true", help="compile a fresh graph for every resume")
    parser.add_argument("--keep-db", action="store_true", help="leave the SQLite file behind")
    args = parser.parse_args()
    if args.cycles < 1:
        parser.error("--cycles must be >= 1")
    args.db = args.db or default_db("langgraph-workflow")
    try:
        result = asyncio.run(run(args)) if args.saver == "async" else drive(run(args))
    finally:
        if not args.keep_db:
            fresh_db(args.db)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    sys.exit(main())
