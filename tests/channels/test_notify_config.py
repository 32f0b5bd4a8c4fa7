"""`notify` targets and `channels:` in sayso.yaml: what cannot be delivered is an error naming the file and line;
a named webhook gets a Standard Webhooks `request.notify` for its rule's requests."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from typer.testing import CliRunner

from sayso import ConfigError, Sayso, load_config
from sayso.cli import app

from ..conftest import LiveServer, free_port
from .conftest import Serve, channels_config

ALICE = {"Authorization": "Bearer alice-token"}
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

CONFIG = """\
models: {m: test}
principals:
  - {name: bob, token: t, approver_for: [billing]}
channels:
  public_url: https://sayso.example.com
  email: {smtp_host: mail.example.com, from: approvals@example.com, users: {bob@example.com: bob}}
webhooks:
  - {url: "https://hooks.example.com/a", secret: s, name: billing-hook}
agents:
  billing:
    model: m
    tools: ["tests.tools:pay"]
    interrupt:
      tools:
        - name: pay
          notify:
            - email:bob@example.com
            - NOTIFY
"""


def problems(tmp_path: Path, target: str) -> str:
    config = tmp_path / "sayso.yaml"
    config.write_text(CONFIG.replace("NOTIFY", target))
    done = CliRunner().invoke(app, ["check", str(config)])
    assert done.exit_code == 2, done.output
    return f"{done.stdout}{done.stderr}".replace(str(config), "sayso.yaml")


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("slack:#ops", "'slack:#ops' needs 'channels.slack'"),
        ("webhook:billing", "no webhook is named 'billing'. Fix: name one in 'webhooks:' (named: billing-hook)"),
        ("email:eve@example.com", "'eve@example.com' is no principal's address"),
    ],
)
def test_a_target_nothing_can_deliver_is_an_error_at_its_line(tmp_path: Path, target: str, said: str) -> None:
    shown = problems(tmp_path, target)
    assert "sayso.yaml:18: error: agents.billing.interrupt.tools[0].notify[1]: " + said in shown


def test_a_target_of_no_known_kind_is_refused_when_read(tmp_path: Path) -> None:
    config = tmp_path / "sayso.yaml"
    config.write_text(CONFIG.replace("NOTIFY", "sms:+15550100"))
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    assert f"{config}:18:" in str(refused.value)
    assert "notify.1" in str(refused.value) or "notify[1]" in str(refused.value)


def test_a_runtime_refuses_a_config_whose_targets_cannot_be_delivered(tmp_path: Path) -> None:
    config = channels_config(tmp_path, public_url="https://sayso.example.com", notify=["slack:#ops"])
    with pytest.raises(ConfigError, match="'slack:#ops' needs 'channels.slack'"):
        Sayso(config)


def test_a_channels_user_map_names_real_principals(tmp_path: Path) -> None:
    text = CONFIG.replace("NOTIFY", "email:bob@example.com").replace(
        "{bob@example.com: bob}", "{bob@example.com: bobby}"
    )
    (tmp_path / "sayso.yaml").write_text(text)
    done = CliRunner().invoke(app, ["check", str(tmp_path / "sayso.yaml")])
    assert done.exit_code == 2
    assert "channels.email.users.bob@example.com: 'bob@example.com' is mapped to 'bobby'" in done.output


def test_check_says_a_user_map_without_principals_decides_as_local(tmp_path: Path) -> None:
    """Local development: `sayso check` is ready, and says a mailed link decides as `local`, whatever `users` says."""
    text = CONFIG.replace("NOTIFY", "webhook:billing-hook").replace(
        "principals:\n  - {name: bob, token: t, approver_for: [billing]}\n", ""
    )
    (tmp_path / "sayso.yaml").write_text(text)
    done = CliRunner().invoke(app, ["check", str(tmp_path / "sayso.yaml")])
    assert done.exit_code == 0, done.output
    assert "channels.email.users: without principals every mailed link decides as 'local'" in done.output


def test_a_named_webhook_gets_a_signed_notice_of_each_request(serve: Serve, tmp_path: Path) -> None:
    """`webhook:NAME` sends `request.notify` in the Standard Webhooks format, even to a hook subscribed to nothing."""
    received: list[tuple[dict[str, str], bytes]] = []

    async def hook(request: Request) -> Response:
        received.append((dict(request.headers), await request.body()))
        return Response(status_code=204)

    listener = LiveServer.in_thread(Starlette(routes=[Route("/hook", hook, methods=["POST"])]))  # type: ignore[arg-type]
    try:
        port = free_port()
        hooks = [{"url": f"{listener.base_url}/hook", "secret": SECRET, "name": "billing", "events": []}]
        config = channels_config(
            tmp_path, public_url=f"http://127.0.0.1:{port}", notify=["webhook:billing"], webhooks=hooks
        )
        server, _ = serve(config, port=port)
        started = httpx.post(f"{server.base_url}/v1/runs", json={"message": "pay 31"}, headers=ALICE, timeout=30)
        run = started.json()
        deadline = time.monotonic() + 20
        while not received and time.monotonic() < deadline:
            time.sleep(0.02)
        [(headers, body)] = received
        Webhook(SECRET).verify(body, headers)
        event: dict[str, Any] = json.loads(body)
        assert event["type"] == "request.notify"
        assert headers["webhook-id"] == event["id"]
        assert event["data"]["request"]["id"] == run["requests"][0]["id"]
        assert event["data"]["request"]["args"] == {"amount": 31}
    finally:
        listener.stop()


def test_check_warns_of_a_mail_to_someone_the_rule_never_lets_decide(tmp_path: Path) -> None:
    """The rule's approvers are bob and the group ops; its notices mail eve too, who is neither: her link would
    decide nothing (it answers "This link does not work"). A step's `add_approvers` counts: carol may decide."""
    text = (
        CONFIG.replace(
            "  - {name: bob, token: t, approver_for: [billing]}\n",
            "  - {name: bob, token: t, approver_for: [billing]}\n  - {name: carol, token: c}\n"
            "  - {name: dan, token: d}\n  - {name: eve, token: e}\ngroups: {ops: [dan]}\n",
        )
        .replace(
            "users: {bob@example.com: bob}",
            "users: {bob@example.com: bob, carol@example.com: carol, dan@example.com: dan, eve@example.com: eve}",
        )
        .replace(
            "          notify:\n",
            "          approvers: [bob, ops]\n"
            "          escalate: [{after: 1h, add_approvers: [carol], notify: [email:carol@example.com]}]\n"
            "          notify:\n            - email:dan@example.com\n",
        )
        .replace("NOTIFY", "email:eve@example.com")
    )
    (tmp_path / "sayso.yaml").write_text(text)
    done = CliRunner().invoke(app, ["check", str(tmp_path / "sayso.yaml")], env={"COLUMNS": "300"})
    assert done.exit_code == 0, done.output
    shown = done.output
    assert (
        "agents.billing.interrupt.tools[0].notify[2]: 'eve@example.com' is mapped to 'eve', whom this rule never lets "
        "decide: the link mailed there decides nothing" in shown
    ), shown
    assert "'bob@example.com' is mapped" not in shown and "'dan@example.com' is mapped" not in shown
    assert "'carol@example.com' is mapped" not in shown


def test_check_says_which_channel_secrets_are_not_set(tmp_path: Path) -> None:
    """`sayso check` warns of every secret a channel reads at start, before a server refuses to start without it."""
    text = CONFIG.replace("NOTIFY", "slack:#ops").replace(
        "channels:\n", "channels:\n  slack: {bot_token_env: BOT_TOKEN_FOR_TEST, signing_secret_env: SIGNING_FOR_TEST}\n"
    )
    (tmp_path / "sayso.yaml").write_text(text)
    done = CliRunner().invoke(app, ["check", str(tmp_path / "sayso.yaml")])
    shown = done.output
    assert "channels.slack.bot_token_env: the environment variable BOT_TOKEN_FOR_TEST is not set" in shown
    assert "channels.slack.signing_secret_env: the environment variable SIGNING_FOR_TEST is not set" in shown
    assert "mailed links need a key, and neither SAYSO_LINK_KEY nor the audit key is set" in shown


def test_a_named_webhook_is_tried_as_its_own_entry_says(
    serve: Serve, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`max_attempts` and `backoff_seconds` of a `webhooks:` entry apply to its notices, not the channel's defaults."""
    received: list[str] = []

    async def hook(request: Request) -> Response:
        received.append(request.headers["webhook-id"])
        return Response(status_code=503)

    listener = LiveServer.in_thread(Starlette(routes=[Route("/hook", hook, methods=["POST"])]))  # type: ignore[arg-type]
    try:
        port = free_port()
        entry = {"url": f"{listener.base_url}/hook", "secret": SECRET, "name": "billing", "events": []}
        hooks = [{**entry, "max_attempts": 2, "backoff_seconds": 0.05}]
        config = channels_config(
            tmp_path, public_url=f"http://127.0.0.1:{port}", notify=["webhook:billing"], webhooks=hooks
        )
        server, _ = serve(config, port=port)
        httpx.post(f"{server.base_url}/v1/runs", json={"message": "pay 31"}, headers=ALICE, timeout=30)
        deadline = time.monotonic() + 20
        while "failed after 2 attempt(s)" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.02)
        failed = "request.opened to notice webhook:billing failed after 2 attempt(s): NoticeFailed: HTTP 503"
        assert failed in caplog.text
        assert len(received) == 2 and len(set(received)) == 1  # one delivery, tried twice under one id
    finally:
        listener.stop()
