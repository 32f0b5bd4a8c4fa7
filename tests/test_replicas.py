"""Many replicas (docs/guides/operations.md#several-replicas): three `sayso serve` processes on one PostgreSQL behave
as one service.

A run started on one replica is decided over REST on another and over A2A on a third; the inbox
reads the same from each; killing (SIGKILL) the replica that runs an approved call leaves the run
to another replica, which takes its lease over and finishes it with the call's outcome unknown
(never a second execution); every webhook event reaches the receiver once per delivery id.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from sayso import Sayso, load_config

from .conftest import LiveServer
from .store.conftest import DSN, postgres_database

TOOLS = '''
import os, time

def slow_delete(name: str) -> str:
    """Delete a file (slowly when its name says so)."""
    with open(os.environ["MARKER"], "a") as marker:
        marker.write(name + "\\n")
    if name.startswith("slow"):
        time.sleep(60)
    return f"deleted {name}"
'''

CONFIG = """
models:
  demo: {scripted: script.yaml}
agents:
  files:
    model: demo
    tools: [replica_tools:slow_delete]
    interrupt: {tools: [slow_delete]}
webhooks:
  - {url: "HOOK", secret: s3cret, backoff_seconds: 0.2, timeout_seconds: 1}
"""

SCRIPT = """
name: replicas
rules:
  - {user: '^delete (?P<n>\\S+)$', call: slow_delete, args: {name: "{n}"}}
  - {tool: slow_delete, reply: "model read: {result}"}
"""

HITL = "https://kagent.dev/extensions/hitl/v1"

pytestmark = pytest.mark.skipif(DSN is None, reason="TEST_POSTGRES_DSN is not set (scripts/test sets it)")


class Receiver:
    """A webhook receiver on 127.0.0.1 that keeps every delivery's id and event."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[str, str]] = []
        received = self.deliveries

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                received.append((self.headers["webhook-id"], self.headers["Sayso-Event"]))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/hook"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def wait_for(self, count: int, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while len(self.deliveries) < count:
            assert time.monotonic() < deadline, f"{len(self.deliveries)} of {count} webhook deliveries arrived"
            time.sleep(0.05)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


@pytest.fixture
def store_url() -> Iterator[str]:
    """A fresh PostgreSQL database for the three replicas."""

    async def create(ready: anyio.Event, url: list[str], done: anyio.Event) -> None:
        async with postgres_database() as created:
            url.append(created)
            ready.set()
            await done.wait()

    # The database lives as long as the test: created and dropped in a portal's event loop.
    from anyio.from_thread import start_blocking_portal

    with start_blocking_portal() as portal:
        url: list[str] = []
        ready, done = portal.call(anyio.Event), portal.call(anyio.Event)
        future = portal.start_task_soon(create, ready, url, done)
        portal.call(ready.wait)
        yield url[0]
        portal.call(done.set)
        future.result(30)


def _post(server: LiveServer, path: str, body: dict[str, Any], **headers: str) -> Any:
    with server.client() as client:
        response = client.post(path, json=body, headers=headers)
        assert response.status_code == 200, response.text
        return response.json()


def _get(server: LiveServer, path: str) -> Any:
    with server.client() as client:
        return client.get(path).json()


def _a2a_approve(server: LiveServer, run: dict[str, Any]) -> Any:
    payload = {"type": "tool_approval_response", "approvals": [{"id": run["requests"][0]["id"], "approved": True}]}
    message = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [],
        "taskId": run["run_id"],
        "contextId": run["thread_id"],
        "metadata": {HITL: payload},
        "extensions": [HITL],
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    return _post(server, "/a2a/files", call, **{"A2A-Version": "1.0", "A2A-Extensions": HITL})


def test_three_replicas_on_one_postgres_behave_as_one_service(
    tmp_path: Path, store_url: str, receiver: Receiver
) -> None:
    """Runs move freely between three replicas (REST on one, A2A on another), the inbox is the same everywhere,
    a replica killed mid-call is recovered by another without a second execution, and webhooks arrive once each."""
    (tmp_path / "replica_tools.py").write_text(TOOLS)
    (tmp_path / "script.yaml").write_text(SCRIPT)
    (tmp_path / "sayso.yaml").write_text(CONFIG.replace("HOOK", receiver.url))
    marker = tmp_path / "marker"
    env = {**os.environ, "SAYSO_STORE": store_url, "MARKER": str(marker)}
    args = [str(tmp_path / "sayso.yaml"), "--recover-every", "0.5"]
    with ThreadPoolExecutor(3) as starting:  # the three start side by side (and migrate the new database together)
        futures = [starting.submit(LiveServer.process, args, env=env) for _ in range(3)]
    if any(f.exception() for f in futures):
        for future in futures:
            if future.exception() is None:
                future.result()[1].kill()
                future.result()[1].wait(10)
        futures[next(i for i, f in enumerate(futures) if f.exception())].result()
    started = [future.result() for future in futures]
    (a, _), (b, _), (c, c_process) = started
    try:
        first = _post(a, "/v1/runs", {"message": "delete one.txt"})
        by_rest = _post(b, f"/v1/requests/{first['requests'][0]['id']}/decision", {"kind": "approve"})
        assert (by_rest["run"]["status"], by_rest["run"]["output"]) == ("completed", "model read: deleted one.txt")

        second = _post(a, "/v1/runs", {"message": "delete two.txt"})
        by_a2a = _a2a_approve(c, second)
        assert by_a2a["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"

        waiting = [_post(server, "/v1/runs", {"message": f"delete wait{n}.txt"}) for n, server in enumerate((a, b))]
        inboxes = [_get(server, "/v1/requests")["requests"] for server, _ in started]
        assert inboxes[0] == inboxes[1] == inboxes[2]
        assert [r["id"] for r in inboxes[0]] == [run["requests"][0]["id"] for run in waiting]

        receiver.wait_for(6)  # opened and decided for two runs, opened for two more: all delivered
        third = _post(b, "/v1/runs", {"message": "delete slow.txt"})
        request_id = third["requests"][0]["id"]
        deciding = threading.Thread(target=_approve_until_killed, args=(c, request_id), daemon=True)
        deciding.start()
        deadline = time.monotonic() + 30
        while "slow.txt" not in (marker.read_text() if marker.exists() else ""):
            assert time.monotonic() < deadline, "the slow call never started"
            time.sleep(0.05)
        receiver.wait_for(8)  # the third run's events too
        _until_delivered(tmp_path / "sayso.yaml", store_url)  # and marked so: nothing is in flight when c dies
        c_process.send_signal(signal.SIGKILL)
        c_process.wait(10)

        deadline = time.monotonic() + 30
        run = _get(a, f"/v1/runs/{third['run_id']}")
        while run["status"] == "running":
            assert time.monotonic() < deadline, "no replica carried the run on"
            time.sleep(0.1)
            run = _get(a, f"/v1/runs/{third['run_id']}")
        assert run["status"] == "completed"
        assert run["output"].startswith("model read: Outcome unknown")
        assert _get(b, f"/v1/runs/{third['run_id']}") == run
    finally:
        # Each replica stops cleanly, landing what it has in flight: every delivery sent has arrived below.
        for server, process in started:
            if process.poll() is None:
                server.stop()
            process.kill()
    assert marker.read_text().splitlines() == ["one.txt", "two.txt", "slow.txt"]
    ids = [delivery for delivery, _ in receiver.deliveries]
    assert len(ids) == len(set(ids)) == 8
    assert sorted(event for _, event in receiver.deliveries) == ["request.decided"] * 3 + ["request.opened"] * 5


def _until_delivered(config: Path, store_url: str) -> None:
    """Wait until the store holds no delivery still to send (each one the receiver took is marked delivered)."""

    async def delivered() -> None:
        async with Sayso(load_config(config).model_copy(update={"store": store_url})) as app:
            with anyio.fail_after(30):
                while (await app.store.delivery_counts()).get("pending"):
                    await anyio.sleep(0.05)

    anyio.run(delivered)


def _approve_until_killed(server: LiveServer, request_id: str) -> None:
    """Approve a request on a replica that is killed while the approved call runs."""
    with server.client() as client:
        try:
            client.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"})
        except httpx.TransportError:
            pass  # the replica is killed under this request
