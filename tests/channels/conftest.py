"""Real parts for the channels' tests: an SMTP server (aiosmtpd), a stand-in for Slack's Web API, `sayso serve`'s app.

Everything listens on 127.0.0.1. The SMTP server keeps every message it accepts; the Slack
stand-in answers `chat.postMessage`, `chat.update`, `views.open` and `chat.postEphemeral` as Slack
does (refusing what Slack refuses: a block's text over 3,000 characters, an input's initial value over 3,000),
records each call, and posts interaction payloads to sayso signed with the app's secret.
"""

from __future__ import annotations

import email
import email.policy
import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from sayso import Config, Sayso
from sayso._serve import compose

from ..conftest import LiveServer, free_port
from ..models import Call, tool_model
from ..tools import pay

LINK_KEY = "a-link-key-for-tests-only-0123456789"
SLACK_TOKEN = "xoxb-test-token"
SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


def pay_route(said: str) -> Call:
    """`pay N` (or `pay N with TOKEN`) asks to pay N; the model then says what the call returned (or the rejection
    it read)."""
    _, amount, *token = said.replace(" with ", " ").split(" ")
    return "pay", {"amount": int(amount), **({"token": token[0]} if token else {})}


PRINCIPALS: list[dict[str, Any]] = [
    {"name": "alice", "token": "alice-token"},
    {"name": "bob", "token": "bob-token", "approver_for": ["billing"]},
    {"name": "carol", "token": "carol-token"},
]
"""alice runs the agent; bob approves its calls; carol may decide nothing of alice's."""


@dataclass
class Mailbox:
    """What the SMTP server accepted, in order."""

    messages: list[EmailMessage] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.content or b""
        raw = content.encode() if isinstance(content, str) else bytes(content)
        parsed = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        with self.lock:
            self.messages.append(parsed)
        return "250 OK"

    def wait_for(self, count: int, timeout: float = 20) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return list(self.messages)


def body_text(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    return str(part.get_content())


def mailed_link(message: EmailMessage) -> str:
    """The link of a mail (without its `?action=`)."""
    found = re.search(r"Approve: (\S+)\?action=approve", body_text(message))
    assert found, body_text(message)
    return found.group(1)


class Smtp:
    """An aiosmtpd server on a port of 127.0.0.1, started and stopped by the tests."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.mailbox = Mailbox()
        self._controller: Controller | None = None

    def start(self) -> Smtp:
        self._controller = Controller(self.mailbox, hostname="127.0.0.1", port=self.port)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None


@pytest.fixture
def smtp() -> Iterator[Smtp]:
    server = Smtp(free_port()).start()
    yield server
    server.stop()


@dataclass
class SlackStandIn:
    """Slack's Web API as the SDK calls it (`base_url`), recording calls; and Slack posting clicks to sayso."""

    base_url: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    refused: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Calls answered `ok: false` for what they held (a view Slack would not open)."""
    auth: list[str] = field(default_factory=list)
    interactions_url: str = ""
    posted: int = 0

    def calls_to(self, method: str) -> list[dict[str, Any]]:
        return [body for name, body in list(self.calls) if name == method]

    def wait_for(self, method: str, count: int = 1, timeout: float = 20) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.calls_to(method)) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.calls_to(method)

    def signed(
        self, payload: dict[str, Any], *, secret: str = SLACK_SECRET, at: float | None = None
    ) -> tuple[bytes, dict[str, str]]:
        """An interaction as Slack sends it: the payload form-encoded, signed with the app's secret."""
        body = urlencode({"payload": json.dumps(payload)}).encode()
        timestamp = str(int(time.time() if at is None else at))
        signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
        assert signature is not None
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": signature,
        }
        return body, headers

    def interact(self, payload: dict[str, Any], **signing: Any) -> httpx.Response:
        body, headers = self.signed(payload, **signing)
        return self.send(body, headers)

    def send(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return httpx.post(self.interactions_url, content=body, headers=headers, timeout=30)


BLOCK_TEXT_CHARS = 3000
"""The most characters a block's text object may hold: Slack refuses a message with a longer one (`invalid_blocks`)."""


MESSAGE_TEXT_CHARS = 40_000
"""The most characters a message's `text` may hold: Slack refuses a longer one (`msg_too_long`)."""


def too_long(blocks: object) -> bool:
    """Whether a block (or any inside it) has a text object longer than Slack takes."""
    if isinstance(blocks, list):
        return any(too_long(block) for block in blocks)
    if not isinstance(blocks, dict):
        return False
    text = blocks.get("text")
    if isinstance(text, str) and blocks.get("type") in ("mrkdwn", "plain_text") and len(text) > BLOCK_TEXT_CHARS:
        return True
    return any(too_long(value) for value in blocks.values())


INITIAL_VALUE_CHARS = 3000
"""The most characters a plain-text input's `initial_value` may hold: Slack refuses a view with a longer one."""


def initial_too_long(view: object) -> bool:
    """Whether a view (or an element inside it) has an `initial_value` longer than Slack takes."""
    if isinstance(view, list):
        return any(initial_too_long(item) for item in view)
    if not isinstance(view, dict):
        return False
    value = view.get("initial_value")
    if isinstance(value, str) and len(value) > INITIAL_VALUE_CHARS:
        return True
    return any(initial_too_long(item) for item in view.values())


def slack_app(state: SlackStandIn) -> Starlette:
    async def method(request: Request) -> JSONResponse:
        name = request.path_params["method"]
        body = await request.json()
        state.auth.append(request.headers.get("authorization", ""))
        if too_long(body.get("blocks")):
            return JSONResponse({"ok": False, "error": "invalid_blocks"})
        if len(str(body.get("text", ""))) > MESSAGE_TEXT_CHARS:
            return JSONResponse({"ok": False, "error": "msg_too_long"})
        if initial_too_long(body.get("view")):
            state.refused.append((name, body))
            messages = [f"[ERROR] must be less than {INITIAL_VALUE_CHARS + 1} characters"]
            refusal = {"ok": False, "error": "invalid_arguments", "response_metadata": {"messages": messages}}
            return JSONResponse(refusal)
        state.calls.append((name, body))
        if name == "chat.postMessage":
            state.posted += 1
            return JSONResponse({"ok": True, "channel": "C0OPS", "ts": f"1700000000.{state.posted:06d}"})
        if name == "chat.update":
            return JSONResponse({"ok": True, "channel": body["channel"], "ts": body["ts"]})
        return JSONResponse({"ok": True})

    return Starlette(routes=[Route("/api/{method}", method, methods=["POST"])])


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    state = SlackStandIn()
    live = LiveServer.in_thread(slack_app(state))  # type: ignore[arg-type]
    state.base_url = f"{live.base_url}/api/"
    yield state
    live.stop()


@dataclass
class Clock:
    """A clock the tests move: the runtime's time, links' expiry included."""

    now: float = field(default_factory=time.time)

    def __call__(self) -> float:
        return self.now


def channels_config(
    tmp_path: Path,
    *,
    public_url: str,
    notify: list[str],
    smtp_port: int | None = None,
    slack_url: str | None = None,
    ttl_seconds: float | None = None,
    webhooks: Sequence[dict[str, Any]] = (),
    escalate: Sequence[dict[str, Any]] = (),
    routing: dict[str, Any] | None = None,
    principals: Sequence[dict[str, Any]] = PRINCIPALS,
) -> Config:
    """The billing agent: every `pay` waits for bob (or as `routing` says: approvers, a quorum), and is announced
    to `notify` (and as `escalate` says). `principals=()`: local development mode."""
    rule: dict[str, Any] = {"name": "pay", "notify": notify, "escalate": list(escalate), **(routing or {})}
    if ttl_seconds is not None:
        rule["ttl_seconds"] = ttl_seconds
    channels: dict[str, Any] = {"public_url": public_url}
    if smtp_port is not None:
        channels["email"] = {
            "smtp_host": "127.0.0.1",
            "smtp_port": smtp_port,
            "from": "sayso <approvals@example.com>",
            "users": {"bob@example.com": "bob", "carol@example.com": "carol"},
            "backoff_seconds": 0.2,
        }
    if slack_url is not None:
        channels["slack"] = {
            "bot_token_env": "SLACK_BOT_TOKEN",
            "signing_secret_env": "SLACK_SIGNING_SECRET",
            "base_url": slack_url,
            "users": {"U0BOB": "bob", "U0CAROL": "carol"},
            "backoff_seconds": 0.2,
        }
    return Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "models": {"m": "test"},
            "agents": {"billing": {"model": "m", "tools": [pay], "interrupt": {"tools": [rule]}}},
            "principals": list(principals),
            "channels": channels,
            "webhooks": list(webhooks),
            "base_dir": tmp_path,
        }
    )


Serve = Callable[..., tuple[LiveServer, Sayso]]


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[Serve]:
    """`sayso serve`'s app (`compose`) for a config, on a real port, stopped after the test."""
    monkeypatch.setenv("SAYSO_LINK_KEY", LINK_KEY)
    monkeypatch.setenv("SLACK_BOT_TOKEN", SLACK_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SLACK_SECRET)
    started: list[LiveServer] = []

    def start(config: Config, *, port: int, clock: Callable[[], float] = time.time) -> tuple[LiveServer, Sayso]:
        sayso = Sayso(config, models={"m": tool_model(pay_route, read="{result}")}, clock=clock)
        live = LiveServer.in_thread(compose(sayso, expire_every_seconds=None, recover_every_seconds=None), port=port)
        started.append(live)
        return live, sayso

    yield start
    for live in started:
        live.stop()
