"""Signed webhooks from an in-process server, delivered to a real listener on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from sayso import PrincipalConfig, Reject, Sayso, load_config
from sayso._core.signing import signed_headers
from sayso.server import WebhookConfig, verify_headers

from ..conftest import ROOT
from .conftest import EXAMPLE, ServerFactory

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
"""A Standard Webhooks secret (`whsec_` and the key in base64), as receivers generate them."""


@dataclass
class Listener:
    url: str
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    fail_first: int = 0
    """How many deliveries to answer with 503 before accepting."""
    attempts: int = 0

    async def wait_for(self, count: int, timeout: float = 10) -> list[dict[str, object]]:
        """The events received once `count` have arrived (or the timeout passed), while the server keeps working."""
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            await anyio.sleep(0.02)
        return [json.loads(body) for _, body in self.received]


@pytest.fixture
def listener() -> Iterator[Listener]:
    state = Listener(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.attempts += 1
            if state.attempts <= state.fail_first:
                self.send_response(503)
                self.end_headers()
                return
            state.received.append((dict(self.headers.items()), body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/hook"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


async def test_opened_and_decided_events_are_signed(serve: ServerFactory, listener: Listener) -> None:
    """Opening and deciding a request each POST an event that a stock Standard Webhooks verifier accepts."""
    hook = WebhookConfig(url=listener.url, secret=SECRET, backoff_seconds=0.05)
    server = await serve(webhooks=[hook])
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
        request_id = run["requests"][0]["id"]
        await client.post(f"/v1/requests/{request_id}/decision", json={"kind": "reject", "reason": "no"})
    events = await listener.wait_for(2)
    assert [e["type"] for e in events] == ["request.opened", "request.decided"]
    assert events[0]["data"]["request"]["id"] == request_id  # type: ignore[index]
    assert events[1]["data"]["decision"] == {"kind": "reject", "reason": "no"}  # type: ignore[index]
    assert events[1]["data"]["principal"] == "local"  # type: ignore[index]
    for (headers, body), event in zip(listener.received, events, strict=True):
        assert headers["Sayso-Event"] == event["type"]
        assert headers["webhook-id"] == event["id"]
        assert Webhook(SECRET).verify(body, headers) == event
        assert verify_headers(SECRET, headers, body)
        with pytest.raises(WebhookVerificationError):
            Webhook("whsec_" + "A" * 32).verify(body, headers)
        with pytest.raises(WebhookVerificationError):
            Webhook(SECRET).verify(body + b" ", headers)


async def test_each_vote_toward_a_quorum_is_sent_to_a_webhook_that_asks_for_votes(
    serve: ServerFactory, listener: Listener
) -> None:
    """Two of finance approve a refund: each vote arrives signed, saying where the quorum stood, then the decision.

    A webhook with the default `events` gets the opening and the decision only.
    """
    config = load_config(ROOT / "examples" / "refunds" / "sayso.yaml")
    voting = WebhookConfig(url=listener.url, secret=SECRET, backoff_seconds=0.05, events=["request.voted"])
    default = WebhookConfig(url=listener.url + "?default", secret=SECRET, backoff_seconds=0.05)
    principals = [PrincipalConfig(name=n, token=f"{n}-token") for n in ("alice", "bob", "carol")]
    server = await serve(config=config, principals=principals, webhooks=[voting, default])
    async with server.client("alice-token") as alice, server.client("bob-token") as bob:
        run = (await alice.post("/v1/runs", json={"message": "refund 250 to acme"})).json()
        url = f"/v1/requests/{run['requests'][0]['id']}/decision"
        await bob.post(url, json={"kind": "approve"})
        await bob.post(url, json={"kind": "approve"})  # the same vote again counts (and is sent) once
        async with server.client("carol-token") as carol:
            await carol.post(url, json={"kind": "approve"}, headers={"Sayso-Via": "web"})
    await listener.wait_for(4)
    await server.stop()  # every delivery in flight lands: nothing more was sent
    received = [json.loads(body) for _, body in listener.received]
    votes = sorted((e for e in received if e["type"] == "request.voted"), key=lambda e: str(e["created_at"]))
    assert sorted(e["type"] for e in received) == [  # the default webhook: no votes
        "request.decided",
        "request.opened",
        "request.voted",
        "request.voted",
    ]
    assert [(v["data"]["vote"]["principal"], v["data"]["vote"]["via"]) for v in votes] == [
        ("bob", "rest"),
        ("carol", "web"),
    ]
    assert votes[0]["data"]["request"]["quorum"]["text"] == "1 of 2, waiting for finance"
    assert votes[1]["data"]["request"]["quorum"]["approved_by"] == ["bob", "carol"]
    for headers, body in listener.received:
        assert Webhook(SECRET).verify(body, headers)["type"] == headers["Sayso-Event"]


async def test_failed_deliveries_are_retried_with_the_same_delivery_id(
    serve: ServerFactory, listener: Listener
) -> None:
    """A receiver answering 503 gets the same delivery again after a backoff until it accepts."""
    listener.fail_first = 2
    hook = WebhookConfig(url=listener.url, secret=SECRET, events=["request.opened"], backoff_seconds=0.05)
    server = await serve(webhooks=[hook])
    async with server.client() as client:
        await client.post("/v1/runs", json={"message": "delete notes"})
    [event] = await listener.wait_for(1)
    assert listener.attempts == 3
    assert event["type"] == "request.opened"
    assert listener.received[0][0]["webhook-id"] == event["id"]


async def test_a_receiver_down_for_half_a_day_still_gets_the_event_tried_at_least_hourly(
    serve: ServerFactory, listener: Listener
) -> None:
    """With the default retries, a receiver that refuses 15 times (the waits doubling past an hour) still gets the
    event: the waits stop growing at an hour, so each hour that passes brings one more attempt."""
    listener.fail_first = 15
    hook = WebhookConfig(url=listener.url, secret=SECRET, events=["request.opened"])
    now = [time.time()]
    server = await serve(config=load_config(EXAMPLE).model_copy(update={"webhooks": [hook]}), clock=lambda: now[0])
    async with server.client() as client:
        await client.post("/v1/runs", json={"message": "delete notes"})
    hours = 0
    while not listener.received and hours < 16:
        tried = listener.attempts
        deadline = time.monotonic() + 10
        while listener.attempts == tried and time.monotonic() < deadline:
            await anyio.sleep(0.02)
        now[0] += 3600 + 1
        hours += 1
    [event] = await listener.wait_for(1)
    assert event["type"] == "request.opened"
    assert listener.attempts == 16


async def test_background_sweep_expires_requests_and_says_so(serve: ServerFactory, listener: Listener) -> None:
    """The server's periodic sweep closes a run whose request expired and sends `request.expired` for it."""
    config = load_config(EXAMPLE)
    config.agents["files"].interrupt.ttl_seconds = 60
    hook = WebhookConfig(url=listener.url, secret=SECRET, events=["request.expired"], backoff_seconds=0.05)
    now = [time.time()]
    server = await serve(
        config=config.model_copy(update={"webhooks": [hook]}), expire_every_seconds=0.1, clock=lambda: now[0]
    )
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
        request_id = run["requests"][0]["id"]
        now[0] += 61  # past the TTL: the next sweep closes it
        [event] = await listener.wait_for(1)
        assert event["type"] == "request.expired"
        assert event["data"]["request"]["id"] == request_id  # type: ignore[index]
        # The event is sent when the expiry is recorded; the run then finishes with what it knows.
        deadline = time.monotonic() + 10
        while (await client.get(f"/v1/runs/{run['run_id']}")).json()["status"] != "completed":
            assert time.monotonic() < deadline, "the expired run never finished"
            await anyio.sleep(0.05)
        assert (await client.get(f"/v1/requests/{request_id}")).json()["decided_by"] == "expiry"
    # Sweeps after the one that closed it find nothing to announce; stopping the server lets every delivery
    # in flight land, so nothing sent is missed here.
    assert await server.sayso.expire() == []
    await server.stop()
    assert len(listener.received) == 1  # announced once, by the sweep that closed it


def test_signature_rejects_old_timestamps() -> None:
    """A genuine signature made long ago is refused by a stock verifier (replay protection); one made now is not."""
    body = b'{"x":1}'
    old = signed_headers(SECRET, body, event="request.opened", delivery_id="dlv_1", now=time.time() - 3600)
    assert not verify_headers(SECRET, old, body)
    with pytest.raises(WebhookVerificationError, match="too old"):
        Webhook(SECRET).verify(body, old)
    fresh = signed_headers(SECRET, body, event="request.opened", delivery_id="dlv_1", now=time.time())
    assert Webhook(SECRET).verify(body, fresh) == {"x": 1}
    assert not verify_headers(SECRET, {**fresh, "webhook-timestamp": "abc"}, body)


def test_webhook_needs_a_secret() -> None:
    """A webhook without a secret cannot sign, so the config is refused."""
    with pytest.raises(ValueError, match="secret"):
        WebhookConfig(url="http://127.0.0.1:1/hook")


def test_a_webhook_secret_that_cannot_sign_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A `whsec_` secret whose key is no base64 would fail every delivery: refused in the config, or at start-up
    when it comes from the environment, never at the first event."""
    with pytest.raises(ValueError, match="Standard Webhooks key"):
        WebhookConfig(url="http://127.0.0.1:1/hook", secret="whsec_a")
    monkeypatch.setenv("HOOK_SECRET", "whsec_")
    hook = WebhookConfig(url="http://127.0.0.1:1/hook", secret_env="HOOK_SECRET")
    with pytest.raises(ValueError, match="Standard Webhooks key"):
        hook.signing_secret()
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    assert hook.signing_secret() == SECRET


async def test_changes_made_by_another_process_are_delivered_by_the_server(
    serve: ServerFactory, listener: Listener
) -> None:
    """A request opened and decided by another runtime on the server's store (as the CLI does) is delivered by the
    server: the events were written to the outbox with the changes."""
    hook = WebhookConfig(url=listener.url, secret=SECRET, backoff_seconds=0.05)
    await serve(webhooks=[hook])
    async with Sayso(load_config(EXAMPLE)) as elsewhere:
        paused = await elsewhere.run("delete notes")
        await elsewhere.decide(paused.requests[0].request_id, Reject(reason="not from here"))
    events = await listener.wait_for(2)
    assert [e["type"] for e in events] == ["request.opened", "request.decided"]
    assert events[1]["data"]["decision"] == {"kind": "reject", "reason": "not from here"}  # type: ignore[index]


async def test_an_undelivered_event_survives_a_restart_and_keeps_its_delivery_id(
    serve: ServerFactory, listener: Listener
) -> None:
    """A delivery still failing when its server stops is delivered by the next server, under the same delivery id."""
    listener.fail_first = 1
    hook = WebhookConfig(url=listener.url, secret=SECRET, events=["request.opened"], backoff_seconds=0.5)
    first = await serve(webhooks=[hook])
    async with first.client() as client:
        await client.post("/v1/runs", json={"message": "delete notes"})
    deadline = time.monotonic() + 10
    while listener.attempts < 1 and time.monotonic() < deadline:
        await anyio.sleep(0.02)
    await first.stop()
    assert listener.received == []
    await serve(webhooks=[hook])
    [event] = await listener.wait_for(1)
    assert listener.attempts == 2
    assert event["type"] == "request.opened"
    assert listener.received[0][0]["webhook-id"] == event["id"]


async def test_servers_sharing_a_store_deliver_each_event_once(serve: ServerFactory, listener: Listener) -> None:
    """Three servers on one store, each with the webhook: every event reaches the receiver once, not once per server."""
    hook = WebhookConfig(url=listener.url, secret=SECRET, backoff_seconds=0.05)
    servers = [await serve(webhooks=[hook]) for _ in range(3)]
    for n, server in enumerate(servers):
        async with server.client() as client:
            run = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
            decided = {"kind": "reject", "reason": f"no {n}"}
            await client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json=decided)
    events = await listener.wait_for(6)
    for server in servers:
        await server.stop()  # each lands what it has in flight; a duplicate would have been sent by now
    ids = [headers["webhook-id"] for headers, _ in listener.received]
    assert len(events) == len(listener.received) == 6
    assert len(set(ids)) == 6


def _closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on: a webhook there is refused, so its delivery stays pending."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_sweep_prunes_events_done_with_past_the_retention_and_keeps_pending_ones(
    serve: ServerFactory, listener: Listener, workdir: Path
) -> None:
    """With a retention of one second, the server's sweep deletes a delivered event and its deliveries once it is
    older, while an event whose delivery a refusing receiver left pending stays, with that delivery."""
    opened = WebhookConfig(url=listener.url, secret=SECRET, events=["request.opened"], backoff_seconds=0.05)
    refused = WebhookConfig(
        url=f"http://127.0.0.1:{_closed_port()}/hook", secret=SECRET, events=["request.decided"], backoff_seconds=3600
    )
    config = load_config(EXAMPLE).model_copy(
        update={"webhooks": [opened, refused], "webhooks_retention_days": 1 / 86_400}
    )
    server = await serve(config=config, expire_every_seconds=0.1)
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
        request_id = run["requests"][0]["id"]
        await client.post(f"/v1/requests/{request_id}/decision", json={"kind": "reject", "reason": "no"})
    [event] = await listener.wait_for(1)
    assert event["type"] == "request.opened"

    def outbox() -> tuple[list[str], list[tuple[str, int]]]:
        with sqlite3.connect(workdir / "sayso.db") as db:
            events = [row[0] for row in db.execute("SELECT kind FROM outbox")]
            deliveries = [(row[0], row[1]) for row in db.execute("SELECT status, attempts FROM deliveries")]
        return events, deliveries

    deadline = time.monotonic() + 10
    while outbox() != (["request.decided"], [("pending", 1)]):
        assert time.monotonic() < deadline, f"the outbox was not pruned: {outbox()}"
        await anyio.sleep(0.05)
    # Another sweep past the retention (what the server's runs every 0.1 s): the pending delivery and its event stay.
    await server.sayso.prune_events()
    assert outbox() == (["request.decided"], [("pending", 1)])


async def test_servers_sharing_a_store_send_a_slow_receiver_each_event_once_and_in_order(
    serve: ServerFactory,
) -> None:
    """Two servers, a receiver slower than a batch's claim: each delivery is sent once, each request's opening first.

    The receiver takes 0.2 s per delivery and the webhook's timeout is 0.25 s, so a claim (twice the timeout and a
    second) covers a few deliveries, not a batch of ten: the sender keeps its claim while it works through it, and
    the other server holds each decision back until that server has sent the request's opening.
    """
    arrived: list[dict[str, object]] = []

    class Slow(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            arrived.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            time.sleep(0.2)
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/hook"
        hook = WebhookConfig(url=url, secret=SECRET, timeout_seconds=0.25, backoff_seconds=0.05)
        first, second = await serve(webhooks=[hook]), await serve(webhooks=[hook])
        async with Sayso(load_config(EXAMPLE)) as elsewhere:  # as the CLI: the servers find them by polling
            paused = [await elsewhere.run("delete notes") for _ in range(10)]
        while not arrived:
            await anyio.sleep(0.02)
        async with second.client() as client:  # decided while a server still sends the openings
            for n, run in enumerate(paused):
                decided = {"kind": "reject", "reason": f"no {n}"}
                await client.post(f"/v1/requests/{run.requests[0].request_id}/decision", json=decided)
        deadline = time.monotonic() + 30
        while len(arrived) < 20 and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        await anyio.sleep(1.5)  # a claim lapsing under a sender still at work is taken again by the other
        await first.stop()
        await second.stop()
    finally:
        httpd.shutdown()
        httpd.server_close()
    ids = [event["id"] for event in arrived]
    assert len(ids) == 20
    assert len(set(ids)) == 20
    order: dict[str, list[object]] = {}
    for event in arrived:
        order.setdefault(event["data"]["request"]["id"], []).append(event["type"])  # type: ignore[index]
    assert all(types == ["request.opened", "request.decided"] for types in order.values()), order
