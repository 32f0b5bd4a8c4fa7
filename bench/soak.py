#!/usr/bin/env python3
"""A soak: does `sayso serve` keep a flat memory under steady use?

20 clients (`--clients`) loop for `--minutes` against one `sayso serve` (the load benchmark's
config: a scripted model, a gated no-op `delete_file`, SQLite): each cycle starts a run on a new
thread ("delete f-N", it pauses), reads the inbox, approves over REST (the run completes), then
reads the thread as the web UI does after a decision. The server's resident memory (VmRSS) is
sampled every few seconds; after a warm-up (`--warmup` of the time) the growth is fitted as MB per
minute, and the growth over the last `--last-minutes` (10; the last third of a shorter soak) is
read off the samples (a minute's mean at each end). Prints a line per sample (with the load
average), then one JSON line:
`{"kind": "soak", "rss_start_mb", "rss_end_mb", "mb_per_min", "last_window_mb", "cycles", "flat"}`;
"flat" means the memory levelled off: it grew by at most `--max-last-mb` (3 MB) over that last window.

`--trace` runs the same clients against an in-process app instead, with `tracemalloc`, and prints
the allocation sites that grew most between the end of the warm-up and the end: where to look
when the soak is not flat.

    .venv/bin/python bench/soak.py                   # 30 minutes, as `make soak` runs it
    .venv/bin/python bench/soak.py --minutes 3       # a short check
    .venv/bin/python bench/soak.py --minutes 2 --trace
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from itertools import count
from typing import Any

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from load import CONFIG, SCRIPT, TOOLS, sayso_server


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def cycle(client: httpx.AsyncClient, n: int) -> None:
    """One person's round: a run that pauses, the inbox, the approval, the thread read back."""
    run = (await client.post("/v1/runs", json={"message": f"delete f-{n}"})).json()
    await client.get("/v1/requests", params={"limit": 20})
    [request] = run["requests"]
    done = await client.post(f"/v1/requests/{request['id']}/decision", json={"kind": "approve"})
    assert done.status_code == 200, done.text
    await client.get(f"/v1/threads/{run['thread_id']}")


async def drive(client_of: Callable[[], httpx.AsyncClient], clients: int, seconds: float) -> int:
    """`clients` loops of `cycle` for `seconds`; how many cycles they finished."""
    numbers = count()
    deadline = time.monotonic() + seconds
    finished = 0

    async def one() -> None:
        nonlocal finished
        async with client_of() as client:
            while time.monotonic() < deadline:
                await cycle(client, next(numbers))
                finished += 1

    await asyncio.gather(*(one() for _ in range(clients)))
    return finished


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares growth of (seconds, MB) points, in MB per minute."""
    if len(points) < 2:
        return 0.0
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return 60 * sum((x - mx) * (y - my) for x, y in points) / var if var else 0.0


async def soak_server(args: argparse.Namespace) -> dict[str, Any]:
    seconds = args.minutes * 60
    with tempfile.TemporaryDirectory(prefix="sayso-soak.") as folder:
        store = f"sqlite:///{os.path.join(folder, 'soak.db')}"
        with sayso_server(store) as (url, pid):
            samples: list[tuple[float, float]] = []
            start = time.monotonic()

            async def sample() -> None:
                while True:
                    at, mb = time.monotonic() - start, rss_mb(pid)
                    samples.append((at, mb))
                    load = os.getloadavg()[0]
                    print(f"{at:7.0f}s  rss {mb:7.1f} MB  load {load:4.1f}", file=sys.stderr, flush=True)
                    await asyncio.sleep(args.every)

            sampler = asyncio.create_task(sample())
            cycles = await drive(lambda: httpx.AsyncClient(base_url=url, timeout=60), args.clients, seconds)
            sampler.cancel()
            samples.append((time.monotonic() - start, rss_mb(pid)))
    settled = [p for p in samples if p[0] >= seconds * args.warmup]
    growth = slope(settled)
    window = min(args.last_minutes * 60, seconds / 3)
    end_at = samples[-1][0]
    # A minute's mean at each end of the window: single samples swing by a few MB as runs come and go.
    opening = [mb for at, mb in samples if end_at - window <= at < end_at - window + 60] or [samples[0][1]]
    closing = [mb for at, mb in samples if at >= end_at - 60]
    last_window = statistics.fmean(closing) - statistics.fmean(opening)
    return {
        "kind": "soak",
        "clients": args.clients,
        "minutes": args.minutes,
        "cycles": cycles,
        "rss_start_mb": round(samples[0][1], 1),
        "rss_after_warmup_mb": round(settled[0][1], 1),
        "rss_end_mb": round(samples[-1][1], 1),
        "mb_per_min": round(growth, 2),
        "last_minutes": round(window / 60, 1),
        "last_window_mb": round(last_window, 1),
        "max_last_mb": args.max_last_mb,
        "load_average": round(os.getloadavg()[0], 1),
        "flat": last_window <= args.max_last_mb,
    }


async def soak_traced(args: argparse.Namespace) -> dict[str, Any]:
    """The same clients against an in-process app, with tracemalloc: what grew after the warm-up."""
    from sayso import Sayso, load_config
    from sayso.server import create_app

    seconds = args.minutes * 60
    with tempfile.TemporaryDirectory(prefix="sayso-soak.") as folder:
        for name, text in (("load_tools.py", TOOLS), ("script.yaml", SCRIPT)):
            with open(os.path.join(folder, name), "w") as f:
                f.write(text)
        config_path = os.path.join(folder, "sayso.yaml")
        with open(config_path, "w") as f:
            f.write(CONFIG.format(store=f"sqlite:///{os.path.join(folder, 'soak.db')}"))
        app = create_app(Sayso(load_config(config_path)), expire_every_seconds=None)

        def client() -> httpx.AsyncClient:
            # The loopback host: a local-mode server refuses any other `Host`.
            return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")

        async with app.router.lifespan_context(app):
            await drive(client, args.clients, seconds * args.warmup)
            tracemalloc.start(25)
            before = tracemalloc.take_snapshot()
            cycles = await drive(client, args.clients, seconds * (1 - args.warmup))
            after = tracemalloc.take_snapshot()
    grown = after.compare_to(before, "traceback")[: args.top]
    for stat in grown:
        print(f"{stat.size_diff / 1024:9.1f} KiB  {stat.count_diff:+7d} blocks", file=sys.stderr)
        for line in stat.traceback.format()[-12:]:
            print(f"      {line}", file=sys.stderr)
    total = sum(s.size_diff for s in after.compare_to(before, "filename"))
    return {"kind": "soak_trace", "cycles": cycles, "grown_kib": round(total / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--every", type=float, default=5, help="seconds between RSS samples")
    parser.add_argument("--warmup", type=float, default=0.3, help="share of the time before growth is measured")
    parser.add_argument("--last-minutes", type=float, default=10, help="the window whose growth says flat")
    parser.add_argument("--max-last-mb", type=float, default=3.0, help="at most this growth over that window")
    parser.add_argument("--trace", action="store_true", help="in-process, with tracemalloc: what grows")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    run: Callable[[argparse.Namespace], Awaitable[dict[str, Any]]] = soak_traced if args.trace else soak_server
    print(json.dumps(asyncio.run(run(args))))


if __name__ == "__main__":
    main()
