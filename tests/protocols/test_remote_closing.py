"""Remote delegates closed or refused from either side (docs/guides/a2a.md#remote-agents-as-delegates): a cancelled
top run cancels the remote task too, a decision the remote agent refuses is refused at the top, a decision recorded
at the top reaches the remote task however the rest of its pause was answered, and a remote pause's expiry reaches
the top."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from sayso import AlreadyDecided, Approve, Config, Reject, RequestExpired, Sayso
from sayso._core.decisions import Expired

from ..conftest import LiveServer, free_port
from ..models import tool_model, verbs
from .conftest import example_config, protocol_app, two_deletes


@dataclass
class Child:
    """The file manager (`two_deletes`'s model) served by a sayso of its own on a real port, restartable."""

    store: Path
    port: int
    overrides: dict[str, Any]
    server: LiveServer | None = None
    clock: Callable[[], float] = time.time

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Child:
        config = example_config(store=f"sqlite:///{self.store}", **self.overrides)
        self.server = LiveServer.in_thread(
            protocol_app(Sayso(config, models={"demo": two_deletes()}, clock=self.clock)), port=self.port
        )
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def get(self, path: str) -> dict[str, Any]:
        response = httpx.get(f"{self.url}{path}", timeout=30)
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found

    def open_requests(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.get("/v1/requests")["requests"]
        return found


@pytest.fixture
def child(tmp_path: Path, sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Child]:
    monkeypatch.delenv("SAYSO_STORE", raising=False)
    served = Child(tmp_path / "child.db", free_port(), {}).start()
    yield served
    served.stop()


def coordinator(tmp_path: Path, child: Child, **options: Any) -> Sayso:
    """A coordinator that hands `tidy ...` to the child's file manager over A2A (`options`: `Sayso`'s, a clock)."""
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'parent.db'}",
            "agents": {
                "coordinator": {"model": "c", "delegates": [{"a2a": f"{child.url}/a2a/files", "name": "files"}]}
            },
            "base_dir": tmp_path,
        }
    )
    model = tool_model(verbs(tidy=("files", "task")), read="files said: {result}")
    return Sayso(config, models={"c": model}, **options)


@pytest.fixture
async def app(tmp_path: Path, child: Child) -> AsyncIterator[Sayso]:
    async with coordinator(tmp_path, child) as sayso:
        yield sayso


@pytest.mark.parametrize("how", ["cancel", "message"])
async def test_closing_the_top_run_cancels_the_remote_task_so_approving_it_there_runs_nothing(
    app: Sayso, child: Child, sandbox: Path, how: str
) -> None:
    """Cancelling the top run (or a new message on its thread) cancels the remote task: its request closes at the
    remote agent, approving it there is refused, and the file stays."""
    paused = await app.run("tidy delete notes.txt", agent="coordinator")
    [there] = child.open_requests()
    if how == "cancel":
        assert (await app.cancel(paused.run_id)).status == "cancelled"
    else:
        await app.run("never mind", thread_id=paused.thread_id)
    assert child.open_requests() == []
    assert child.get(f"/v1/runs/{there['run_id']}")["status"] == "cancelled"
    refused = httpx.post(f"{child.url}/v1/requests/{there['id']}/decision", json={"kind": "approve"}, timeout=30)
    assert refused.status_code == 409, refused.text
    assert (sandbox / "notes.txt").exists()


async def test_a_cancel_the_remote_agent_could_not_take_is_kept_and_delivered_by_the_sweep(
    app: Sayso, child: Child, sandbox: Path
) -> None:
    """A remote agent away when the top run is cancelled: the top run is cancelled all the same, and the recovery
    sweep cancels the remote task once its agent is back."""
    paused = await app.run("tidy delete notes.txt", agent="coordinator")
    [there] = child.open_requests()
    child.stop()
    assert (await app.cancel(paused.run_id)).status == "cancelled"
    child.start()
    assert [r["id"] for r in child.open_requests()] == [there["id"]], "the agent was away: nothing reached it"
    await app.recover()
    assert child.open_requests() == []
    assert child.get(f"/v1/runs/{there['run_id']}")["status"] == "cancelled"
    await app.recover()  # delivered once: the next sweep has nothing left to send
    assert (sandbox / "notes.txt").exists()


async def test_a_decision_recorded_at_the_top_reaches_the_remote_task_when_its_other_ask_was_answered_there(
    app: Sayso, child: Child, sandbox: Path
) -> None:
    """A remote pause on two calls: one rejected at the top, the other approved at the remote agent itself. The
    top's rejection still reaches the remote task (its request stays decided, no new one is raised for that call),
    and only the ask the remote agent no longer waits on is refused at the top."""
    paused = await app.run("tidy delete both", agent="coordinator")
    keep, drop = sorted(paused.requests, key=lambda r: r.args["name"])
    assert (keep.args, drop.args) == ({"name": "notes.txt"}, {"name": "todo.md"})
    assert (await app.decide(keep.request_id, Reject(reason="keep the notes"))).recorded
    [there] = [r for r in child.open_requests() if r["args"] == {"name": "todo.md"}]
    approved = httpx.post(f"{child.url}/v1/requests/{there['id']}/decision", json={"kind": "approve"}, timeout=30)
    assert approved.status_code == 200, approved.text

    with pytest.raises(AlreadyDecided, match="answered at the remote agent"):
        await app.decide(drop.request_id, Approve())
    done = await app.result(paused.run_id)
    assert (done.status, done.requests) == ("completed", ())
    kept = await app.request(keep.request_id)
    assert kept.decision is not None and kept.decision.decision == Reject(reason="keep the notes")
    assert (sandbox / "notes.txt").exists() and not (sandbox / "todo.md").exists()
    assert child.open_requests() == []


async def test_a_remote_pauses_expiry_is_mirrored_and_closes_the_request_at_the_top_as_expired(
    tmp_path: Path, sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A remote ask that expires carries its expiry up: the top's request expires when the remote one does, a late
    decision at the top is refused as expired (not as answered at the remote agent), and the top's expiry sweep
    closes it as expired and carries the run on."""
    monkeypatch.delenv("SAYSO_STORE", raising=False)
    now = [time.time()]
    files = example_config().agents["files"].model_dump()
    ttl = {"agents": {"files": {**files, "interrupt": {**files["interrupt"], "ttl_seconds": 60}}}}
    child = Child(tmp_path / "child.db", free_port(), ttl, clock=lambda: now[0]).start()
    try:
        async with coordinator(tmp_path, child, clock=lambda: now[0]) as app:
            paused = await app.run("tidy delete notes.txt", agent="coordinator")
            [request] = paused.requests
            assert request.expires_at == pytest.approx(now[0] + 60, abs=1)
            now[0] += 120
            assert httpx.post(f"{child.url}/v1/expire", json={}, timeout=30).status_code == 200
            assert child.open_requests() == []
            with pytest.raises(RequestExpired):
                await app.decide(request.request_id, Approve())
            await app.expire()
            state = await app.request(request.request_id)
            done = await app.result(paused.run_id)
    finally:
        child.stop()
    assert state.decision is not None and isinstance(state.decision.decision, Expired)
    assert (done.status, done.requests) == ("completed", ())
    assert (sandbox / "notes.txt").exists()
