"""Escalation steps through the channels: a reminder in the Slack message's thread, a step's own target mailed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from ..conftest import free_port
from ..tools import ran
from .conftest import Clock, Serve, SlackStandIn, Smtp, channels_config, mailed_link

ALICE = {"Authorization": "Bearer alice-token"}
BOB = {"Authorization": "Bearer bob-token"}
CAROL = {"Authorization": "Bearer carol-token"}


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


def test_a_reminder_reaches_only_the_approvers_who_may_still_vote(
    serve: Serve, smtp: Smtp, slack: SlackStandIn, tmp_path: Path
) -> None:
    """Two of bob and carol approve; each is notified by mail and in a Slack DM. On `pay 70` bob has approved:
    the reminder reaches carol alone. On `pay 80` bob approved, then carol's edit started a round on other
    arguments, so bob may vote again: the reminder reaches bob alone (it reached both, and the one who had
    voted got a link whose page said "Not counted")."""
    clock = Clock()
    port = free_port()
    config = channels_config(
        tmp_path,
        public_url=f"http://127.0.0.1:{port}",
        notify=["email:bob@example.com", "email:carol@example.com", "slack:U0BOB", "slack:U0CAROL"],
        smtp_port=smtp.port,
        slack_url=slack.base_url,
        escalate=[{"after": "15m", "remind": True}],
        routing={"approvers": ["bob", "carol"], "approvals_required": 2},
    )
    server, _ = serve(config, port=port, clock=clock)

    def vote(request_id: str, headers: dict[str, str], decision: dict[str, Any]) -> None:
        url = f"{server.base_url}/v1/requests/{request_id}/decision"
        answer = httpx.post(url, json=decision, headers=headers, timeout=30)
        assert answer.status_code == 200, answer.text

    ids = {}
    for amount in (70, 80):
        run = httpx.post(f"{server.base_url}/v1/runs", json={"message": f"pay {amount}"}, headers=ALICE, timeout=30)
        ids[amount] = run.json()["requests"][0]["id"]
    smtp.mailbox.wait_for(4)
    posts = slack.wait_for("chat.postMessage", count=4)
    vote(ids[70], BOB, {"kind": "approve"})
    vote(ids[80], BOB, {"kind": "approve"})
    vote(ids[80], CAROL, {"kind": "approve", "edited_args": {"amount": 75}})

    clock.now += 16 * 60
    assert httpx.post(f"{server.base_url}/v1/expire", headers=BOB, timeout=30).status_code == 200
    smtp.mailbox.wait_for(6)
    slack.wait_for("chat.postMessage", count=6)
    server.stop()  # lands what it has in flight: a reminder to someone else would be here now

    reminded = {(m["Sayso-Request"], str(m["To"])) for m in smtp.mailbox.messages if "Still waiting" in m["Subject"]}
    assert reminded == {(ids[70], "carol@example.com"), (ids[80], "bob@example.com")}
    assert len(smtp.mailbox.messages) == 6
    posted = {
        f"1700000000.{n:06d}": (p["blocks"][-1]["elements"][1]["value"], p["channel"]) for n, p in enumerate(posts, 1)
    }
    in_threads = {posted[p["thread_ts"]] for p in slack.calls_to("chat.postMessage") if "thread_ts" in p}
    assert in_threads == {(ids[70], "U0CAROL"), (ids[80], "U0BOB")}
