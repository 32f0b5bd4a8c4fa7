#!/usr/bin/env python3
"""What one `sayso.step` costs on each store: its first run (marked, run, recorded) and a replay (issue 26).

  bench/step_journal.py            # 300 steps per store; the last line is one JSON object

A step's first run is one commit that waits for the disk (the mark before the function runs) and
one that does not (its result); an idempotent step waits for none; a replay (the body run again)
reads the record and calls nothing. The function is trivial, so the figures are the journal's own.
PostgreSQL is measured when `TEST_POSTGRES_DSN` names a server (a throwaway database is made).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

from sayso._core.steps import StepScope
from sayso._runtime._journal import store_journal
from sayso._store import MemoryRunStore, RunStore, SqlRunStore

STEPS = 300


async def charge(i: int) -> dict[str, int]:
    return {"receipt": i}


async def measure(store: RunStore, *, idempotent: bool = False) -> dict[str, float]:
    """Milliseconds per step: `first` (run and recorded) and `replay` (returned from the record)."""
    async with store:
        journal = store_journal(store, time.time)
        figures: dict[str, float] = {}
        for phase in ("first", "replay"):
            scope = StepScope(run_id="run_bench", scope="call_1", journal=journal)
            started = time.perf_counter()
            for i in range(STEPS):
                await scope.run("charge", charge, (i,), {}, idempotent=idempotent)
            figures[phase] = round((time.perf_counter() - started) / STEPS * 1000, 3)
        return figures


async def main() -> None:
    folder = Path(tempfile.mkdtemp())
    results: dict[str, Any] = {
        "memory": await measure(MemoryRunStore()),
        "sqlite": await measure(SqlRunStore(f"sqlite:///{folder / 'steps.db'}")),
        "sqlite_idempotent": await measure(SqlRunStore(f"sqlite:///{folder / 'idem.db'}"), idempotent=True),
    }
    dsn = os.environ.get("TEST_POSTGRES_DSN")
    if dsn:
        import asyncpg

        name = f"sayso_bench_{secrets.token_hex(4)}"
        admin = await asyncpg.connect(dsn)
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            results["postgres"] = await measure(SqlRunStore(dsn.rsplit("/", 1)[0] + f"/{name}"))
        finally:
            await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            await admin.close()
    for store, figures in results.items():
        print(f"{store:>18}: first run {figures['first']:.3f} ms/step, replay {figures['replay']:.3f} ms/step")
    print(json.dumps({"ms_per_step": results, "steps": STEPS}))


if __name__ == "__main__":
    asyncio.run(main())
