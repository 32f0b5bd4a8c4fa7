#!/usr/bin/env python3
"""sayso's agent pair against a bare pydantic-ai agent pair, CPU time per cycle, in one process.

A cycle's two `agent.run` calls (the one that pauses, the one that resumes after the approval)
are what sayso asks of pydantic-ai. This script measures them two ways, one pair of each after
the other (their order alternating), summed over blocks, so both see the same machine at the
finest grain: a VM's noise comes in bursts longer than a pair, and a bare pair run right after
other bare pairs finds a cache warm with only pydantic-ai's work, which no pair in a server does.
Blocks of 25 pairs of one kind, as this script measured before, spread from 0.96× to 1.47×
between blocks of one run on a noisy VM; pair by pair, 1.09× to 1.21× (bench/ANALYSIS.md).

- **bare**: the pydantic-ai anchor's own agents (`FunctionModel`, `delete_file` with
  `requires_approval=True`, `output_type=[str, DeferredToolRequests]`): `agent_a.run(prompt)`,
  then `agent_b.run(message_history=..., deferred_tool_results=approved)` on the history as a
  store hands it back (dumped and validated through `ModelMessagesTypeAdapter`, untimed), as the
  anchor's process B reads it. No store.
- **sayso**: the full sayso cycle (two `Sayso` instances on one SQLite file, as
  `sayso_cycle.py`), timing only the CPU spent inside sayso's two `Agent.run` calls (pydantic-ai
  with sayso's toolset, gate and deps).

The clock is the process's CPU time less that of the SQLite store's own threads (its writer and
its checkpointer, `sayso-sqlite-*`): they run beside the event loop, and a commit or checkpoint
they happen to do while an `Agent.run` is under way is the store's work, which the whole cycle
(`sayso_cycle.py`) counts, not pydantic-ai's. `ratio_all_threads` is the same with them in.

`--history H` continues threads that already hold H prior user/assistant pairs (sayso: seeded
threads, one per cycle; bare: the same messages handed to the first run): what a long thread asks
of pydantic-ai, apart from decoding its history, which the store pays (`sayso_cycle.py`).

Prints one JSON line: CPU ms per pair for each, and sayso ÷ bare (the issue's goal is ≤ 1.2×).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import threading
import time
import uuid
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import bench_config, default_db, fresh_db, history_messages, seed_threads, user_request
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydanticai_cycle import build_agent

from sayso import Approve, Sayso

STORE_THREADS = "sayso-sqlite-"
"""The name every thread of the SQLite store starts with (`_store/_sql/_writer.py`, `_checkpoint.py`)."""


def store_threads_cpu() -> dict[int, float]:
    """CPU seconds so far of each live thread of the store, by thread id."""
    cpu: dict[int, float] = {}
    for thread in threading.enumerate():
        if thread.name.startswith(STORE_THREADS) and thread.ident is not None:
            try:
                cpu[thread.ident] = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
            except OSError:  # it ended since enumerate()
                pass
    return cpu


class AgentClock:
    """CPU time spent inside `Agent.run`, the class's method wrapped once for the whole process.

    `cpu` leaves out the store's threads (see the module's docstring); `cpu_all` counts every thread.
    """

    def __init__(self) -> None:
        self.cpu = 0.0
        self.cpu_all = 0.0
        original = Agent.run

        async def run(agent: Any, *args: Any, **kwargs: Any) -> Any:
            store, t = store_threads_cpu(), time.process_time()
            try:
                return await original(agent, *args, **kwargs)
            finally:
                spent = time.process_time() - t
                after = store_threads_cpu()
                beside = sum(after[i] - store[i] for i in store.keys() & after.keys())
                self.cpu_all += spent
                self.cpu += spent - beside

        Agent.run = run  # type: ignore[method-assign]  # a process global of this benchmark only


async def bare_pairs(
    agent_a: Any, agent_b: Any, clock: AgentClock, start: int, n: int, prior: bytes | None = None
) -> tuple[float, float]:
    """CPU seconds inside the `Agent.run` calls of `n` bare pairs (without, with the store's threads).

    `prior` is a stored history (JSON) each pair's first run continues, decoded untimed as a store hands it back.
    """
    before, before_all = clock.cpu, clock.cpu_all
    for i in range(start, start + n):
        earlier = ModelMessagesTypeAdapter.validate_json(prior) if prior else None
        r1 = await agent_a.run(user_request(i), message_history=earlier)
        assert isinstance(r1.output, DeferredToolRequests)
        approved = DeferredToolResults(approvals={c.tool_call_id: True for c in r1.output.approvals})
        history = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(r1.all_messages()))
        r2 = await agent_b.run(message_history=history, deferred_tool_results=approved)
        assert isinstance(r2.output, str)
    return clock.cpu - before, clock.cpu_all - before_all


async def sayso_pairs(
    app_a: Sayso, app_b: Sayso, clock: AgentClock, start: int, n: int, threads: list[str] | None = None
) -> tuple[float, float]:
    """CPU seconds inside sayso's `Agent.run` calls over `n` full cycles (without, with the store's threads).

    `threads` are seeded threads, one per cycle number, each cycle continuing its own (`--history`).
    """
    before, before_all = clock.cpu, clock.cpu_all
    for i in range(start, start + n):
        r = await app_a.run(user_request(i), thread_id=threads[i] if threads else None)
        d = await app_b.decide(r.requests[0].request_id, Approve())
        assert d.run.status == "completed"
    return clock.cpu - before, clock.cpu_all - before_all


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    clock = AgentClock()
    fresh_db(args.db)
    agent_a, agent_b = build_agent(), build_agent()
    bare: list[tuple[float, float]] = []
    sayso: list[tuple[float, float]] = []
    prior: bytes | None = None
    threads: list[str] | None = None
    async with Sayso(bench_config(args.db)) as app_a, Sayso(bench_config(args.db)) as app_b:
        if args.history:
            prior = ModelMessagesTypeAdapter.dump_json(history_messages(args.history))
            threads = [f"thr_pair{i}_{uuid.uuid4().hex[:12]}" for i in range(args.warmup + args.blocks * args.pairs)]
            seed_threads(args.db, threads, args.history)
        await bare_pairs(agent_a, agent_b, clock, 0, args.warmup, prior)
        await sayso_pairs(app_a, app_b, clock, 0, args.warmup, threads)
        n = args.pairs
        for block in range(args.blocks):
            sums = {"bare": [0.0, 0.0], "sayso": [0.0, 0.0]}
            for i in range(args.warmup + block * n, args.warmup + (block + 1) * n):
                for kind in ("sayso", "bare") if i % 2 else ("bare", "sayso"):
                    if kind == "bare":
                        cpu, cpu_all = await bare_pairs(agent_a, agent_b, clock, i, 1, prior)
                    else:
                        cpu, cpu_all = await sayso_pairs(app_a, app_b, clock, i, 1, threads)
                    sums[kind][0] += cpu
                    sums[kind][1] += cpu_all
            bare.append((sums["bare"][0], sums["bare"][1]))
            sayso.append((sums["sayso"][0], sums["sayso"][1]))
    fresh_db(args.db)
    ratios = [s[0] / b[0] for s, b in zip(sayso, bare, strict=True)]
    ratios_all = [s[1] / b[1] for s, b in zip(sayso, bare, strict=True)]
    return {
        "kind": "agent_pair",
        "history": args.history,
        "pairs_per_block": args.pairs,
        "blocks": args.blocks,
        "bare_cpu_ms": round(statistics.median(b[0] for b in bare) / n * 1e3, 3),
        "sayso_cpu_ms": round(statistics.median(s[0] for s in sayso) / n * 1e3, 3),
        "ratio": round(statistics.median(ratios), 3),
        "ratios": [round(r, 3) for r in ratios],
        "sayso_cpu_ms_all_threads": round(statistics.median(s[1] for s in sayso) / n * 1e3, 3),
        "ratio_all_threads": round(statistics.median(ratios_all), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=25, help="pairs per block")
    ap.add_argument("--blocks", type=int, default=24)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--history", type=int, default=0, help="prior user/assistant pairs each cycle's thread holds")
    ap.add_argument("--db", default=default_db("sayso-agent-pair"))
    args = ap.parse_args()
    print(json.dumps(asyncio.run(main_async(args))), flush=True)


if __name__ == "__main__":
    main()
