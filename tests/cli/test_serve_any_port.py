"""`sayso serve --port 0` (any free port, as its own error text offers) says the port it listens on, not 0."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from ..conftest import EXAMPLE


def test_port_0_prints_the_port_it_bound_and_serves_there(tmp_path: Path) -> None:
    """The start-up line names the port the system picked, and the server answers there."""
    env = {**os.environ, "SAYSO_SANDBOX": str(tmp_path / "sandbox")}  # its store: the test's own (`clean_environ`)
    command = [sys.executable, "-m", "sayso", "serve", str(EXAMPLE), "--port", "0"]
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as process:
        lines: queue.Queue[str] = queue.Queue()

        def read() -> None:  # in a thread: a start that hangs fails the test below instead of hanging it
            for line in process.stderr or ():
                lines.put(line)

        threading.Thread(target=read, daemon=True).start()
        try:
            first = lines.get(timeout=60)
            found = re.match(rf"sayso serves {re.escape(str(EXAMPLE))} on http://127\.0\.0\.1:(\d+)/ ", first)
            assert found, first
            port = int(found[1])
            assert port != 0
            assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30).status_code == 200
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
