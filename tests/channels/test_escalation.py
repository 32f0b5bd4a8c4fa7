"""Escalation steps through the channels: a reminder in the Slack message's thread, a step's own target mailed."""

from __future__ import annotations

from pathlib import Path

import httpx

from ..conftest import free_port
from ..tools import ran
from .conftest import Clock, Serve, SlackStandIn, Smtp, channels_config, mailed_link

ALICE = {"Authorization": "Bearer alice-token"}
BOB = {"Authorization": "Bearer bob-token"}


def test_a_reminder_goes_to_the_thread_and_a_later_step_mails_its_target(
    serve: Serve, smtp: Smtp, slack: SlackStandIn, tmp_path: Path
) -> None:
    clock = Clock()
    port = free_port()
    config = channels_config(
        tmp_path,
        public_url=f"http://127.0.0.1:{port}",
        notify=["slack:#ops"],
        smtp_port=smtp.port,
        slack_url=slack.base_url,
        escalate=[{"after": "15m", "remind": True}, {"after": "1h", "notify": ["email:bob@example.com"]}],
    )
    server, _ = serve(config, port=port, clock=clock)
    run = httpx.post(f"{server.base_url}/v1/runs", json={"message": "pay 70"}, headers=ALICE, timeout=30).json()
    [posted] = slack.wait_for("chat.postMessage")
    assert posted["channel"] == "#ops"
    assert smtp.mailbox.messages == []  # the mail is the second step's: not yet

    clock.now += 16 * 60
    assert httpx.post(f"{server.base_url}/v1/expire", headers=BOB, timeout=30).status_code == 200
    reminder = slack.wait_for("chat.postMessage", count=2)[-1]
    assert (reminder["channel"], reminder["thread_ts"]) == ("C0OPS", "1700000000.000001")
    assert reminder["text"] == "Still waiting: no decision after 15m: remind the approvers"

    clock.now += 45 * 60
    assert httpx.post(f"{server.base_url}/v1/expire", headers=BOB, timeout=30).status_code == 200
    [mail] = smtp.mailbox.wait_for(1)
    assert mail["Subject"] == "Still waiting: billing wants to call pay"
    assert "no decision after 1h: notify email:bob@example.com" in mail.get_body(("plain",)).get_content()  # type: ignore[union-attr]

    done = httpx.post(mailed_link(mail), data={"action": "approve"}, timeout=30)
    assert done.status_code == 200, done.text
    [updated] = slack.wait_for("chat.update")
    assert updated["text"] == "Approved by bob (email)"
    assert ran("pay") == [{"amount": 70}]
    assert httpx.get(f"{server.base_url}/v1/runs/{run['run_id']}", headers=ALICE, timeout=30).json()["status"] == (
        "completed"
    )
