"""Routing on `GET /v1/events`: whoever may see a routed request hears it opened and hears each vote.

The run's starter may read their refund (their own thread) but not approve it: their open page still
follows the count, as an approver's does; an outsider hears of neither.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from sayso import Config, Sayso
from sayso.server import create_app

from ..conftest import LiveServer
from ..server.test_live import FAST, stream


@pytest.fixture
def live(refunds: Config) -> Iterator[LiveServer]:
    server = LiveServer.in_thread(create_app(Sayso(refunds), expire_every_seconds=None, live=FAST))
    yield server
    server.stop()


def test_the_starter_hears_each_vote_on_the_refund_she_may_not_approve(live: LiveServer) -> None:
    with stream(live, "alice-token") as alice, stream(live, "carol-token") as carol, stream(live, "dana-token") as dana:
        with live.client("alice-token") as client:
            run = client.post("/v1/runs", json={"message": "refund 250 to acme"}).json()
            request_id = run["requests"][0]["id"]
            assert client.get(f"/v1/requests/{request_id}").status_code == 200  # she may see it
        for watcher in (alice, carol):
            opened = [data["id"] for name, data in watcher.until("request.opened") if name == "request.opened"]
            assert opened == [request_id]
        with live.client("bob-token") as bob:
            assert bob.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"}).status_code == 200
        for watcher in (alice, carol):
            voted = watcher.until("request.voted")[-1][1]
            assert (voted["request"]["id"], voted["status"]) == (request_id, "open")
            assert voted["request"]["quorum"]["text"] == "1 of 2, waiting for finance"
        with live.client("dana-token") as client:
            client.post("/v1/runs", json={"message": "refund 5 to me"})  # dana's own thread: she hears of it
        heard = dana.until("threads.changed")
        assert request_id not in json.dumps(heard)
