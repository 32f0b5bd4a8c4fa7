"""Three workers, two `sayso serve` replicas, one Temporal-backed config: concurrent runs, none lost or doubled."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import httpx

from ..conftest import LiveServer
from .conftest import Project
from .test_temporal_runs import BODY, FILES, calls

RUNS = 8


async def test_concurrent_runs_over_two_fronts_and_three_workers_each_run_once(
    tmp_path: Path, temporal: Project
) -> None:
    """Runs start on one front and are approved on the other (half of them on both at once): every run
    completes, every approved call ran exactly once, and the store agrees with what each front said."""
    config = temporal.config(tmp_path, BODY.replace("TTL", ""), FILES)
    pool = temporal.workers(config)
    fronts: list[LiveServer] = []
    try:
        # The first front creates the store; the other front and the workers then start at once.
        fronts.append(LiveServer.process([str(config)], env=temporal.env)[0])
        with ThreadPoolExecutor(4) as starting:
            second = starting.submit(LiveServer.process, [str(config)], env=temporal.env)
            for worker in [starting.submit(pool.start) for _ in range(3)]:
                worker.result()
            fronts.append(second.result()[0])
        outputs: dict[str, str] = {}

        async def one(i: int) -> None:
            here, there = fronts[i % 2], fronts[(i + 1) % 2]
            async with (
                httpx.AsyncClient(base_url=here.base_url, timeout=60) as a,
                httpx.AsyncClient(base_url=there.base_url, timeout=60) as b,
            ):
                started = await a.post("/v1/runs", json={"message": f"delete f{i}"})
                assert started.status_code in (200, 201), started.text
                paused = started.json()
                assert paused["status"] == "paused"
                request_id = paused["requests"][0]["id"]
                wrong = await b.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve", "scope": "always"})
                assert wrong.status_code == 422, wrong.text
                deciders = [b, a] if i % 2 == 0 else [b]
                answers: list[httpx.Response] = []

                async def decide(client: httpx.AsyncClient) -> None:
                    answers.append(await client.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"}))

                async with anyio.create_task_group() as both:
                    for client in deciders:
                        both.start_soon(decide, client)
                assert all(r.status_code == 200 for r in answers), [r.text for r in answers]
                assert sorted(r.json()["recorded"] for r in answers) == sorted([False] * (len(answers) - 1) + [True])
                final = (await a.get(f"/v1/runs/{paused['run_id']}")).json()
                outputs[f"f{i}"] = final["output"]

        with anyio.fail_after(120):
            async with anyio.create_task_group() as runs:
                for i in range(RUNS):
                    runs.start_soon(one, i)
    finally:
        for front in fronts:
            front.stop()
    assert outputs == {f"f{i}": f"model read: deleted f{i}" for i in range(RUNS)}
    assert sorted(calls(tmp_path)) == sorted(f"f{i}" for i in range(RUNS))
