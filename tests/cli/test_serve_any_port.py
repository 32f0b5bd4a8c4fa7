"""`sayso serve` names where it listens: the port `--port 0` or `--grpc-port 0` got, and a loopback name's URL.

Local development mode (no principals) binds to any loopback name the server answers to (127.0.0.1,
localhost, ::1), and the URL it prints opens it.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from ..conftest import EXAMPLE


@contextmanager
def serving(tmp_path: Path, *args: str) -> Iterator[list[str]]:
    """`sayso serve EXAMPLE ARGS` until the block ends; its start-up lines, up to the one naming its mode."""
    env = {**os.environ, "SAYSO_SANDBOX": str(tmp_path / "sandbox")}  # its store: the test's own (`clean_environ`)
    command = [sys.executable, "-m", "sayso", "serve", str(EXAMPLE), *args]
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as process:
        lines: queue.Queue[str] = queue.Queue()

        def read() -> None:  # in a thread: a start that hangs fails the test below instead of hanging it
            for line in process.stderr or ():
                lines.put(line)
            lines.put("")

        threading.Thread(target=read, daemon=True).start()
        said: list[str] = []
        try:
            while not said or not said[-1].startswith(("mode:", "error:")):
                line = lines.get(timeout=60)
                assert line, f"sayso serve ended before it said its mode: {said}"
                said.append(line.rstrip("\n"))
            yield said
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


def served_at(said: list[str]) -> str:
    """The URL the first start-up line names."""
    found = re.match(rf"sayso serves {re.escape(str(EXAMPLE))} on (http://\S+/) ", said[0])
    assert found, said
    return found[1]


def test_port_0_prints_the_port_it_bound_and_serves_there(tmp_path: Path) -> None:
    """The start-up line names the port the system picked, and the server answers there."""
    with serving(tmp_path, "--port", "0") as said:
        found = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/", served_at(said))
        assert found, said
        assert int(found[1]) != 0
        assert httpx.get(f"{found[0]}healthz", timeout=30).status_code == 200


def test_grpc_port_0_prints_the_port_it_bound_and_the_cards_offer_it(tmp_path: Path) -> None:
    """`--grpc-port 0` names the gRPC port the system picked, not 0; the agent card offers that port, and it listens."""
    pytest.importorskip("grpc")
    with serving(tmp_path, "--port", "0", "--grpc-port", "0") as said:
        grpc_line = next((line for line in said if line.startswith("A2A over gRPC on ")), "")
        found = re.match(r"A2A over gRPC on 127\.0\.0\.1:(\d+) ", grpc_line)
        assert found, said
        port = int(found[1])
        assert port != 0
        card = httpx.get(f"{served_at(said)}.well-known/agent-card.json", timeout=30).json()
        offered = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
        assert offered == [f"127.0.0.1:{port}"]
        socket.create_connection(("127.0.0.1", port), timeout=30).close()


@pytest.mark.parametrize(
    ("host", "url"),
    [
        pytest.param("localhost", r"http://localhost:(\d+)/", id="localhost"),
        pytest.param("::1", r"http://\[::1\]:(\d+)/", id="ipv6"),
        pytest.param("[::1]", r"http://\[::1\]:(\d+)/", id="ipv6-bracketed"),
    ],
)
def test_local_mode_serves_on_a_loopback_name_and_prints_a_url_that_opens_it(
    tmp_path: Path, host: str, url: str
) -> None:
    """Without principals, `--host localhost` (or ::1) serves as 127.0.0.1 does: the printed URL answers, writes
    included (the guard takes it as a loopback `Host`), and the mode line names the address it is reachable on."""
    with serving(tmp_path, "--host", host, "--port", "0") as said:
        found = re.fullmatch(url, served_at(said))
        assert found, said
        assert int(found[1]) != 0
        assert f"anyone who can reach {found[0].removeprefix('http://').rsplit(':', 1)[0]} " in said[-1], said
        with httpx.Client(base_url=found[0], timeout=30) as client:
            assert client.get("healthz").status_code == 200
            started = client.post("v1/runs", json={"message": "list notes"})
            assert started.status_code == 200, started.text


def test_local_mode_still_refuses_an_address_that_is_not_loopback(tmp_path: Path) -> None:
    """0.0.0.0 (every interface) without principals is refused, naming the loopback names it would take."""
    with serving(tmp_path, "--host", "0.0.0.0", "--port", "0") as said:
        assert said[-1].startswith("error: no principals are configured"), said
        assert "localhost" in said[-1] and "'0.0.0.0'" in said[-1], said
