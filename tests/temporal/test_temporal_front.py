"""A front that cannot get its work to Temporal says so (HTTP 503, exit 5), and leaves no thread locked behind it.

A run the cluster cannot take (nothing listens at its address, its namespace is missing, no worker
polls its task queue, the cluster is out of reach) is refused with what is unavailable, and the run
the message started is closed as failed with that reason, so the thread takes the next message. A
decision that cannot reach the cluster, or that no worker takes up, is refused the same way, saying
whether it was recorded. The outage is a loopback proxy in front of the session's dev server, which a
test cuts and mends; the workers talk to the server directly.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import pytest
from temporalio.client import Client

from sayso import Sayso
from sayso.server import create_app

from ..conftest import InProcess, free_port
from .conftest import Project
from .test_temporal_runs import BODY, FILES, calls


@dataclass
class Outage:
    """A loopback proxy to the dev server: a front configured with its address loses the cluster on `cut()`."""

    target: str
    port: int = field(default_factory=free_port)
    _server: asyncio.Server | None = None
    _links: set[asyncio.StreamWriter] = field(default_factory=set)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def mend(self) -> None:
        """Listen (again) on the proxy's port."""
        self._server = await asyncio.start_server(self._link, "127.0.0.1", self.port)

    async def cut(self) -> None:
        """Stop listening and drop every connection: the front's calls find nothing at the address."""
        assert self._server is not None
        self._server.close()
        for writer in self._links:
            writer.transport.abort()
        self._links.clear()
        await self._server.wait_closed()

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = self.target.rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        self._links |= {writer, up_writer}

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except OSError:
                pass
            finally:
                sink.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


def variant(config: Path, name: str, engine: str) -> Path:
    """A config beside `config` (the same store, tools and script) whose `engine:` line is `engine`."""
    first, rest = config.read_text().split("\n", 1)
    assert first.startswith("engine:")
    other = config.parent / name
    other.write_text(f"{engine}\n{rest}")
    return other


def engine_line(address: str, task_queue: str, extra: str = "") -> str:
    return f'engine: {{temporal: {{address: "{address}", task_queue: {task_queue}, heartbeat_seconds: 2{extra}}}}}'


@asynccontextmanager
async def served(config: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A REST client of a front on `config`, served in-process with no background sweeps."""
    sayso = Sayso.from_yaml(config)
    server = await InProcess(
        app=create_app(sayso, expire_every_seconds=None, recover_every_seconds=None), sayso=sayso
    ).start()
    try:
        async with server.client() as client:
            yield client
    finally:
        await server.stop()


async def refused_and_freed(client: httpx.AsyncClient, thread_id: str) -> dict[str, str]:
    """A message on `thread_id` refused with a 503 naming Temporal; its run failed with the reason, the thread free."""
    refused = await client.post("/v1/runs", json={"message": "delete a.txt", "thread_id": thread_id})
    assert refused.status_code == 503, refused.text
    problem: dict[str, str] = refused.json()
    assert problem["title"] == "Temporal unavailable"
    thread = (await client.get(f"/v1/threads/{thread_id}")).json()
    assert thread["active_run"] is None
    assert [e["role"] for e in thread["transcript"]] == ["user", "error"]
    assert thread["transcript"][1]["text"].startswith("not started: ")
    return problem


@pytest.mark.parametrize("cause", ["address", "namespace", "worker"])
async def test_a_run_temporal_cannot_take_is_a_503_and_its_thread_takes_the_next_message(
    cause: str, tmp_path: Path, temporal: Project
) -> None:
    """Nothing at the address, no such namespace, no worker on the task queue: the run is refused before any
    workflow starts, it is closed as failed with that reason, and the same thread then runs as usual."""
    config = temporal.config(tmp_path, BODY.replace("TTL", ""), FILES)
    queue = temporal.task_queue
    broken = {
        "address": engine_line(f"127.0.0.1:{free_port()}", queue),
        "namespace": engine_line(temporal.address, queue, ", namespace: nope"),
        "worker": engine_line(temporal.address, queue),
    }[cause]
    said = {
        "address": "cannot reach Temporal at 127.0.0.1:",
        "namespace": "has no namespace 'nope'",
        "worker": f"no worker is polling task queue '{queue}'",
    }[cause]
    async with served(variant(config, "broken.yaml", broken)) as client:
        problem = await refused_and_freed(client, "thr-refused")
    assert said in problem["detail"]
    temporal.workers(config).start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("delete a.txt", thread_id="thr-refused")
        assert paused.status == "paused"


def test_sayso_run_on_a_namespace_that_does_not_exist_exits_5_saying_so(tmp_path: Path, temporal: Project) -> None:
    """It printed a traceback ending in temporalio's `RPCError: Namespace nope is not found.`."""
    config = temporal.config(tmp_path, BODY.replace("TTL", ""), FILES)
    broken = variant(config, "broken.yaml", engine_line(temporal.address, temporal.task_queue, ", namespace: nope"))
    command = [sys.executable, "-m", "sayso", "run", str(broken), "delete a.txt"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=temporal.env, cwd=tmp_path)
    assert done.returncode == 5, done.stderr
    assert done.stderr.startswith("error: ") and "has no namespace 'nope'" in done.stderr
    assert "Traceback" not in done.stderr


async def test_while_the_cluster_is_out_of_reach_runs_and_decisions_are_503s_saying_nothing_was_recorded(
    tmp_path: Path, temporal: Project
) -> None:
    """A decision sent while the cluster was down was a 409 "cannot take this: tcp connect error", and a run
    started then a 500 that left its thread locked for good."""
    config = temporal.config(tmp_path, BODY.replace("TTL", ""), FILES)
    temporal.workers(config).start()
    outage = Outage(temporal.address)
    await outage.mend()
    front = variant(config, "front.yaml", engine_line(outage.address, temporal.task_queue))
    async with served(front) as client:
        paused = (await client.post("/v1/runs", json={"message": "delete b.txt"})).json()
        assert paused["status"] == "paused", paused
        request_id = paused["requests"][0]["id"]
        await outage.cut()
        refused = await client.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"})
        assert refused.status_code == 503, refused.text
        assert refused.json()["title"] == "Temporal unavailable"
        assert f"request {request_id!r} is still open: no decision is recorded on it" in refused.json()["detail"]
        await refused_and_freed(client, "thr-in-the-outage")
        await outage.mend()
        done = await client.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"})
        assert done.status_code == 200, done.text
        assert done.json()["run"]["output"] == "model read: deleted b.txt"
    await outage.cut()
    assert calls(tmp_path) == ["b.txt"]


async def test_a_decision_no_worker_takes_up_is_refused_in_bounded_time_saying_it_may_still_be_recorded(
    tmp_path: Path, temporal: Project
) -> None:
    """`sayso decide` with every worker stopped printed nothing and never returned; now it waits `accept_seconds`
    for a worker to take the decision up, then exits 5 saying the decision was sent and may still be recorded."""
    config = temporal.config(tmp_path, BODY.replace("TTL", ""), FILES)
    config.write_text(config.read_text().replace("heartbeat_seconds: 2", "heartbeat_seconds: 2, accept_seconds: 2", 1))
    pool = temporal.workers(config)
    pool.start()
    async with Sayso.from_yaml(config) as front:
        paused = await front.run("delete c.txt")
    request_id = paused.requests[0].request_id
    pool.stop_all()
    command = [sys.executable, "-m", "sayso", "decide", str(config), request_id, "approve"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=temporal.env, cwd=tmp_path)
    assert done.returncode == 5, done.stderr
    said = " ".join(done.stderr.split())
    assert f"no worker took up the decision on request {request_id!r} within 2 s" in said
    assert f"it may still be recorded when a worker polls task queue '{temporal.task_queue}'" in said
    async with Sayso.from_yaml(config) as front:
        state = await front.request(request_id)
        assert state is not None and state.decision is None


async def test_a_run_whose_front_died_before_its_workflow_started_is_closed_by_recover(
    tmp_path: Path, temporal: Project
) -> None:
    """A front killed while it reached for the cluster left its run `running` with no workflow behind it: the
    thread was locked for good, and `sayso recover` carried nothing on. Recovery now closes it as failed."""
    config = temporal.config(tmp_path, BODY.replace("TTL", ""), FILES)
    with socket.socket() as silent:  # accepts connections and never answers: the front waits on it
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        stuck = variant(config, "stuck.yaml", engine_line(f"127.0.0.1:{silent.getsockname()[1]}", temporal.task_queue))
        command = [sys.executable, "-m", "sayso", "run", str(stuck), "delete d.txt", "--thread", "thr-stuck"]
        front = subprocess.Popen(
            command, env=temporal.env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            async with Sayso.from_yaml(config) as reader:
                with anyio.fail_after(30):
                    while (await reader.threads(limit=5)) == []:
                        await anyio.sleep(0.1)
        finally:
            front.send_signal(signal.SIGKILL)
            front.wait(10)
            assert front.stderr is not None
            front.stderr.close()
    temporal.workers(config).start()
    recover = [sys.executable, "-m", "sayso", "recover", str(config)]
    done = subprocess.run(recover, capture_output=True, text=True, timeout=60, env=temporal.env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 run(s) carried on" in done.stdout
    assert "not started" in done.stdout
    async with Sayso.from_yaml(config) as front_again:
        paused = await front_again.run("delete d.txt", thread_id="thr-stuck")
        assert paused.status == "paused"
    assert calls(tmp_path) == []


def test_sayso_check_says_when_temporal_is_out_of_reach_or_has_no_such_namespace(
    tmp_path: Path, temporal: Project
) -> None:
    """`sayso check` said "ready" with nothing at the address or a namespace the cluster does not have."""
    config = temporal.config(tmp_path, BODY.replace("TTL", ""), FILES)
    queue = temporal.task_queue

    def check(path: Path) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "sayso", "check", str(path)]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, env=temporal.env, cwd=tmp_path)

    for name, engine, said in [
        ("nowhere.yaml", engine_line(f"127.0.0.1:{free_port()}", queue), "cannot reach Temporal at 127.0.0.1:"),
        ("nope.yaml", engine_line(temporal.address, queue, ", namespace: nope"), "has no namespace 'nope'"),
    ]:
        refused = check(variant(config, name, engine))
        assert refused.returncode == 2, refused.stdout
        assert "error: engine.temporal: " in refused.stderr and said in refused.stderr
    ready = check(config)
    assert ready.returncode == 0, ready.stderr
    assert f"warning: engine.temporal.task_queue: no worker polls task queue '{queue}' yet" in ready.stdout
    assert "is ready" in ready.stdout


PEOPLE = """
principals:
  - {name: alice, token: alice-token}
  - {name: dana, token: dana-token}
"""


async def test_a_decision_on_a_request_whose_workflow_has_ended_is_answered_from_the_store(
    tmp_path: Path, temporal: Project
) -> None:
    """Once the run's workflow has closed, a second decision was a raw 409 "workflow execution already completed" to
    anyone, naming the run and its workflow to someone with no access. Now, as in one process: the owner is told
    the first decision wins (the same decision again changes nothing), an outsider gets the 404 a made-up id gets."""
    config = temporal.config(tmp_path, BODY.replace("TTL", "") + PEOPLE, FILES)
    temporal.workers(config).start()
    alice, dana = {"Authorization": "Bearer alice-token"}, {"Authorization": "Bearer dana-token"}
    async with served(config) as client:
        paused = (await client.post("/v1/runs", json={"message": "delete d.txt"}, headers=alice)).json()
        decision = f"/v1/requests/{paused['requests'][0]['id']}/decision"
        done = await client.post(decision, json={"kind": "approve"}, headers=alice)
        assert done.status_code == 200 and done.json()["run"]["status"] == "completed", done.text
        handle = (await Client.connect(temporal.address)).get_workflow_handle(f"sayso-files-{paused['run_id']}")
        with anyio.fail_after(30):
            assert await handle.result() == "completed"
        second = await client.post(decision, json={"kind": "reject"}, headers=alice)
        again = await client.post(decision, json={"kind": "approve"}, headers=alice)
        outsider = await client.post(decision, json={"kind": "approve"}, headers=dana)
        made_up = await client.post("/v1/requests/req_made_up/decision", json={"kind": "approve"}, headers=dana)
    assert second.status_code == 409, second.text
    assert second.json()["type"].endswith("/already-decided") and "the first decision wins" in second.json()["detail"]
    assert again.status_code == 200 and again.json()["run"]["status"] == "completed", again.text
    assert (outsider.status_code, outsider.json()["type"]) == (404, made_up.json()["type"]), outsider.text
    assert paused["run_id"] not in outsider.text and "workflow" not in outsider.text
    assert calls(tmp_path) == ["d.txt"]


async def test_a_decision_on_a_run_whose_workflow_was_terminated_says_so_and_the_thread_starts_over(
    tmp_path: Path, temporal: Project
) -> None:
    """An operator terminated a paused run's workflow: a decision was refused with "workflow execution already
    completed", which says the run finished when nothing carries it on any more. Now the 409 says the workflow was
    terminated and what to do (a new message on the thread starts over), the request stays open, nothing runs."""
    config = temporal.config(tmp_path, BODY.replace("TTL", ""), FILES)
    temporal.workers(config).start()
    async with served(config) as client:
        paused = (await client.post("/v1/runs", json={"message": "delete t.txt"})).json()
        handle = (await Client.connect(temporal.address)).get_workflow_handle(f"sayso-files-{paused['run_id']}")
        await handle.terminate(reason="an operator's cleanup")
        request_id = paused["requests"][0]["id"]
        refused = await client.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"})
        still = (await client.get(f"/v1/requests/{request_id}")).json()
        again = await client.post("/v1/runs", json={"message": "delete u.txt", "thread_id": paused["thread_id"]})
    assert refused.status_code == 409, refused.text
    detail = refused.json()["detail"]
    assert "terminated" in detail and "completed" not in detail, detail
    assert "new message on its thread" in detail, detail
    assert still["decision"] is None, still
    assert again.status_code == 200 and again.json()["status"] == "paused", again.text
    assert calls(tmp_path) == []
