"""A server's live form held by one `sayso serve` replica, answered over REST on another.

Two replicas serve one SQLite store. The replica whose run ran into the form holds the live call;
an answer given on the other is handed to it and answered on that call. When the holder shuts down
the form closes as cancelled; when it is killed (SIGKILL) the other replica's sweep closes it, and a
decision is refused with a 409 that says why.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sayso._engine.mcp.toolset import CALL_ENDED

from ..conftest import LiveServer
from .conftest import ElicitServer
from .test_elicitation_cli import write_config

PARTY = {"people": 2, "name": "Ada"}


@pytest.fixture
def replicas(tmp_path: Path, elicit_server: ElicitServer) -> Iterator[tuple[LiveServer, Any, LiveServer]]:
    """Two `sayso serve` replicas on one store (the first's process too, to kill), sweeping twice a second."""
    config = write_config(tmp_path, elicit_server, replay=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAYSO_")}
    args = [str(config), "--recover-every", "0.5"]
    holder, process = LiveServer.process(args, env=env)
    other, _ = LiveServer.process(args, env=env)
    try:
        yield holder, process, other
    finally:
        holder.stop()
        other.stop()


def paused_on_form(server: LiveServer, day: str) -> dict[str, Any]:
    """A run on `server` that paused on the booking form; its one request."""
    run = httpx.post(f"{server.base_url}/v1/runs", json={"message": f"book {day}"}, timeout=120).json()
    assert run["status"] == "paused", run
    [request] = run["requests"]
    assert (request["kind"], request["durable"]) == ("elicitation", False)
    return dict(request)


def test_an_answer_given_on_another_replica_is_handed_to_the_holder_and_answered_on_the_live_call(
    replicas: tuple[LiveServer, Any, LiveServer], elicit_server: ElicitServer
) -> None:
    """The replica that holds the call carries the run on with an answer given on another; both read it completed."""
    holder, _, other = replicas
    request = paused_on_form(holder, "thu")
    decided = httpx.post(
        f"{other.base_url}/v1/requests/{request['id']}/decision",
        json={"kind": "accept", "content": PARTY},
        timeout=120,
    )
    assert decided.status_code == 200, decided.text
    assert decided.json()["run"]["status"] == "completed"
    assert decided.json()["run"]["output"] == "Booked thu for 2 (Ada)"
    assert elicit_server.answers() == ["accept"]
    assert elicit_server.bookings() == ["thu:2:Ada"]


def test_a_holder_that_shuts_down_closes_its_form_as_cancelled(
    replicas: tuple[LiveServer, Any, LiveServer], elicit_server: ElicitServer
) -> None:
    """`sayso serve` stopping (SIGTERM) closes the form it holds as cancelled on the live call; nothing stays open."""
    holder, _, other = replicas
    request = paused_on_form(holder, "fri")
    holder.stop()
    assert elicit_server.answers() == ["cancel"]
    shown = httpx.get(f"{other.base_url}/v1/requests/{request['id']}").json()
    assert shown["status"] != "open", shown
    assert httpx.get(f"{other.base_url}/v1/requests").json()["requests"] == []
    run = httpx.get(f"{other.base_url}/v1/runs/{request['run_id']}").json()
    assert run["status"] == "completed"
    refused = httpx.post(
        f"{other.base_url}/v1/requests/{request['id']}/decision", json={"kind": "accept", "content": PARTY}
    )
    assert refused.status_code == 409, refused.text
    assert refused.json()["type"].endswith("call-ended")
    assert elicit_server.bookings() == []


def test_a_killed_holder_s_form_is_closed_by_the_other_replica_and_a_decision_is_refused_with_409(
    replicas: tuple[LiveServer, Any, LiveServer], elicit_server: ElicitServer
) -> None:
    """SIGKILL of the holding replica: the other's sweep closes the form as cancelled (the model reads that the call
    did not complete) and a decision on it is refused with 409, saying why, before anything of it is taken."""
    holder, process, other = replicas
    request = paused_on_form(holder, "sat")
    process.kill()
    process.wait(30)
    deadline = time.monotonic() + 120
    while httpx.get(f"{other.base_url}/v1/requests").json()["requests"]:
        assert time.monotonic() < deadline, "the other replica never closed the dead holder's form"
        time.sleep(0.2)
    refused = httpx.post(
        f"{other.base_url}/v1/requests/{request['id']}/decision", json={"kind": "accept", "content": PARTY}
    )
    assert refused.status_code == 409, refused.text
    problem = refused.json()
    assert problem["type"].endswith("call-ended")
    assert "the call that asked this has ended: the process that held it stopped" in problem["detail"]
    run = httpx.get(f"{other.base_url}/v1/runs/{request['run_id']}").json()
    while run["status"] == "running":  # the sweep carries the run on after it closed the form
        assert time.monotonic() < deadline, "the run was never carried on"
        time.sleep(0.2)
        run = httpx.get(f"{other.base_url}/v1/runs/{request['run_id']}").json()
    assert (run["status"], run["output"]) == ("completed", CALL_ENDED)
    assert elicit_server.bookings() == []
