"""REST latency of deciding a request: p50/p99 over N decisions against a real uvicorn server.

Each decision is `POST /v1/requests/{id}/decision` rejecting a `delete notes` approval, which
records the decision and resumes the run to completion (the scripted model, no network), so
the number covers HTTP, auth, the store's conditional writes and the resume.

    .venv/bin/python bench/rest_decide.py [--decisions 1000]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=1000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["SAYSO_STORE"] = f"sqlite:///{folder}/bench.db"
        os.environ["SAYSO_SANDBOX"] = f"{folder}/sandbox"
        from sayso import Sayso, load_config
        from sayso.server import create_app

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        app = create_app(Sayso(load_config(ROOT / "examples" / "files" / "sayso.yaml")))
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.02)
        try:
            timings = _measure(f"http://127.0.0.1:{port}", options.decisions)
        finally:
            server.should_exit = True
            thread.join()
    timings.sort()
    p50 = statistics.median(timings)
    p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
    print(f"REST decide over {len(timings)} decisions: p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms")


def _measure(base_url: str, count: int) -> list[float]:
    timings: list[float] = []
    with httpx.Client(base_url=base_url, timeout=30) as client:
        for _ in range(count):
            run = client.post("/v1/runs", json={"message": "delete notes"}).json()
            request_id = run["requests"][0]["id"]
            started = time.perf_counter()
            response = client.post(f"/v1/requests/{request_id}/decision", json={"kind": "reject", "reason": "bench"})
            timings.append(time.perf_counter() - started)
            if response.status_code != 200 or response.json()["run"]["status"] != "completed":
                sys.exit(f"unexpected answer: {response.status_code} {response.text}")
    return timings


if __name__ == "__main__":
    main()
