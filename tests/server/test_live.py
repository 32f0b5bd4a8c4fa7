"""`GET /v1/events`: live updates over a real socket (a stream must arrive while it is still open).

A decision taken by `sayso decide` in another process on the same store reaches the open stream
with who decided and through which interface; each principal hears only of what they may see.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from sayso import Sayso, load_config
from sayso.server import LiveSettings, create_app

from ..conftest import EXAMPLE, LiveServer

Event = tuple[str, dict[str, Any]]

FAST = LiveSettings(every=0.1, lasts=30)


def files_example(workdir: Path, principals: list[dict[str, Any]] | None = None) -> Path:
    """A copy of the file-manager example in `workdir` (with principals when given); its config's path."""
    folder = workdir / "files"
    shutil.copytree(EXAMPLE.parent, folder, ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    config = folder / "sayso.yaml"
    if principals is not None:
        data = yaml.safe_load(config.read_text())
        config.write_text(yaml.safe_dump({**data, "principals": principals}))
    return config


@pytest.fixture
def live_server(workdir: Path) -> Iterator[Callable[[Path], LiveServer]]:
    """Start real servers for `config` with fast live streams; stop them after the test."""
    started: list[LiveServer] = []

    def start(config: Path) -> LiveServer:
        app = create_app(Sayso(load_config(config)), expire_every_seconds=None, live=FAST)
        started.append(LiveServer.in_thread(app))
        return started[-1]

    yield start
    for server in started:
        server.stop()


class Stream:
    """The events of one open `/v1/events` connection, read as they come."""

    def __init__(self, response: httpx.Response) -> None:
        self._lines = response.iter_lines()

    def next(self) -> Event:
        name, data = "message", ""
        for line in self._lines:
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data += line[6:]
            elif line == "" and data:
                return name, json.loads(data)
        raise AssertionError("the stream ended")

    def until(self, name: str, where: Callable[[dict[str, Any]], bool] = lambda data: True) -> list[Event]:
        """Every event up to and including the first called `name` (whose data satisfies `where`)."""
        seen = [self.next()]
        while seen[-1][0] != name or not where(seen[-1][1]):
            seen.append(self.next())
        return seen


@contextmanager
def stream(server: LiveServer, token: str | None = None, **params: str) -> Iterator[Stream]:
    with server.client(token) as client, client.stream("GET", "/v1/events", params=params) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        opened = Stream(response)
        assert opened.next()[0] == "ready"
        yield opened


def test_a_decision_from_the_cli_reaches_the_open_stream(
    workdir: Path, live_server: Callable[[Path], LiveServer]
) -> None:
    """`sayso decide` in another process closes the request on the stream, naming the principal and the CLI,
    then the thread's run is reported finished."""
    config = files_example(workdir)
    server = live_server(config)
    with server.client() as client:
        run = client.post("/v1/runs", json={"message": "delete notes"}).json()
    request_id = run["requests"][0]["id"]
    with stream(server, thread_id=run["thread_id"]) as events:
        decided = subprocess.run(
            [sys.executable, "-m", "sayso", "decide", str(config), request_id, "approve", "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert decided.returncode == 0, decided.stderr
        seen = events.until("request.closed")
        closed = seen[-1][1]
        assert (closed["request"]["id"], closed["status"], closed["decision"]["kind"]) == (
            request_id,
            "decided",
            "approve",
        )
        assert (closed["principal"], closed["via"], closed["decided_by"]) == ("local", "cli", "person")
        assert closed["decided"].endswith("Z")
        ended = events.until("run.changed", lambda data: data["run_id"] is None)[-1][1]
    assert (ended["thread_id"], ended["status"], ended["last_seq"]) == (run["thread_id"], None, 2)


def test_each_principal_hears_only_of_what_they_may_see(
    workdir: Path, live_server: Callable[[Path], LiveServer]
) -> None:
    """Alice's new request reaches her stream, her approver's and an approver's for every agent, never a stranger's;
    an unknown token is 401."""
    principals: list[dict[str, Any]] = [
        {"name": "alice", "token": "alice-token"},
        {"name": "bob", "token": "bob-token"},
        {"name": "ops", "token": "ops-token", "approver_for": ["files"]},
        {"name": "rev", "token": "rev-token", "approver_for": ["*"]},
    ]
    server = live_server(files_example(workdir, principals))
    with server.client("nobody") as stranger:
        refused = stranger.get("/v1/events")
        assert (refused.status_code, refused.headers["content-type"]) == (401, "application/problem+json")
    with (
        stream(server, "alice-token") as alice,
        stream(server, "bob-token") as bob,
        stream(server, "ops-token") as ops,
        stream(server, "rev-token") as rev,
    ):
        with server.client("alice-token") as client:
            run = client.post("/v1/runs", json={"message": "delete notes"}).json()
            client.post("/v1/runs", json={"message": "delete todo"})  # a second request, later
        request_id = run["requests"][0]["id"]
        for watcher in (alice, ops, rev):
            opened = [data["id"] for name, data in watcher.until("request.opened") if name == "request.opened"]
            assert opened == [request_id]
        with server.client("bob-token") as client:
            client.post("/v1/runs", json={"message": "list"})  # bob's own thread: the one thing he hears of
        assert {name for name, _ in bob.until("threads.changed")} == {"threads.changed"}


def test_a_quiet_stream_is_kept_open_with_comment_lines(workdir: Path) -> None:
    """Nothing changing, the stream still sends a comment line (a ping) every `keepalive` seconds, so proxies keep
    it; `ready` tells the browser to reconnect after a second."""
    app = create_app(
        Sayso(load_config(files_example(workdir))),
        expire_every_seconds=None,
        live=LiveSettings(every=0.1, lasts=30, keepalive=0.2),
    )
    server = LiveServer.in_thread(app)
    try:
        with server.client() as client, client.stream("GET", "/v1/events") as response:
            lines = response.iter_lines()
            head = [next(lines) for _ in range(3)]
            assert head[0] == "event: ready" and head[2] == "retry: 1000"
            assert any(line.startswith(": ping") for line in lines)
    finally:
        server.stop()


def test_a_grant_given_or_revoked_reaches_whoever_sees_it(
    workdir: Path, live_server: Callable[[Path], LiveServer]
) -> None:
    """Alice's "Allow for this chat" and her revoking it each say `grants.changed` on her stream; Bob, who may not see
    her grants, hears nothing of them (his own new thread is what he hears of next)."""
    principals: list[dict[str, Any]] = [
        {"name": "alice", "token": "alice-token"},
        {"name": "bob", "token": "bob-token"},
    ]
    server = live_server(files_example(workdir, principals))
    with stream(server, "alice-token") as alice, stream(server, "bob-token") as bob:
        with server.client("alice-token") as client:
            run = client.post("/v1/runs", json={"message": "delete notes"}).json()
            body = {"kind": "approve", "scope": "thread"}
            assert client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json=body).status_code == 200
            alice.until("grants.changed")
            (grant,) = client.get("/v1/grants").json()["grants"]
            assert client.delete(f"/v1/grants/{grant['grant_id']}").status_code in (200, 204)
            assert alice.until("grants.changed")[-1] == ("grants.changed", {})
        with server.client("bob-token") as client:
            client.post("/v1/runs", json={"message": "list"})
        assert "grants.changed" not in {name for name, _ in bob.until("threads.changed")}
