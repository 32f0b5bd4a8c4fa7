"""Slack through slack-sdk against a local stand-in for its Web API, which posts signed clicks back to sayso."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from sayso._core.links import args_digest

from ..conftest import LiveServer, free_port
from ..tools import ran
from .conftest import SLACK_TOKEN, Clock, Serve, SlackStandIn, channels_config

ALICE = {"Authorization": "Bearer alice-token"}
BOB = {"Authorization": "Bearer bob-token"}


@pytest.fixture
def server(serve: Serve, slack: SlackStandIn, tmp_path: Path) -> LiveServer:
    port = free_port()
    config = channels_config(
        tmp_path, public_url=f"http://127.0.0.1:{port}", notify=["slack:#ops"], slack_url=slack.base_url
    )
    live, _ = serve(config, port=port)
    slack.interactions_url = f"{live.base_url}/v1/slack/interactions"
    return live


def start_run(server: LiveServer, message: str) -> dict[str, Any]:
    answer = httpx.post(f"{server.base_url}/v1/runs", json={"message": message}, headers=ALICE, timeout=30)
    assert answer.status_code == 200, answer.text
    run: dict[str, Any] = answer.json()
    assert run["status"] == "paused"
    return run


def run_of(server: LiveServer, run_id: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{server.base_url}/v1/runs/{run_id}", headers=ALICE, timeout=30).json()
    return body


def request_of(server: LiveServer, request_id: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{server.base_url}/v1/requests/{request_id}", headers=ALICE, timeout=30).json()
    return body


_triggers = iter(range(10_000))


def click(action: str, request_id: str, *, user: str = "U0BOB") -> dict[str, Any]:
    """A `block_actions` payload as Slack sends it when a button of the message is pressed."""
    return {
        "type": "block_actions",
        "trigger_id": f"trigger.{next(_triggers)}.{time.time()}",
        "user": {"id": user, "name": user.lower()},
        "channel": {"id": "C0OPS"},
        "container": {"type": "message", "channel_id": "C0OPS", "message_ts": "1700000000.000001"},
        "actions": [{"action_id": action, "block_id": "sayso", "value": request_id, "type": "button"}],
    }


def submit(callback: str, metadata: str, block: str, value: str, *, user: str = "U0BOB") -> dict[str, Any]:
    """A `view_submission` payload: a modal's one text input submitted."""
    return {
        "type": "view_submission",
        "trigger_id": f"trigger.{next(_triggers)}.{time.time()}",
        "user": {"id": user},
        "view": {
            "callback_id": callback,
            "private_metadata": metadata,
            "state": {"values": {block: {block: {"type": "plain_text_input", "value": value}}}},
        },
    }


def finished(server: LiveServer, run_id: str, timeout: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (run := run_of(server, run_id))["status"] in ("paused", "running") and time.monotonic() < deadline:
        time.sleep(0.02)
    return run


def test_a_request_is_posted_with_buttons_and_approve_decides_and_updates_the_message(
    server: LiveServer, slack: SlackStandIn
) -> None:
    """chat.postMessage with Approve / Reject / Edit; a signed click decides as bob via Slack; chat.update says so."""
    run = start_run(server, "pay 250")
    request_id = run["requests"][0]["id"]
    [posted] = slack.wait_for("chat.postMessage")
    assert posted["channel"] == "#ops"
    assert slack.auth[0] == f"Bearer {SLACK_TOKEN}"
    assert posted["text"] == "billing wants to call pay"
    assert '"amount": 250' in str(posted["blocks"])
    buttons = [(e["action_id"], e["text"]["text"], e["value"]) for e in posted["blocks"][-1]["elements"]]
    assert buttons == [
        ("sayso.approve", "Approve", f"{request_id} {args_digest({'amount': 250})}"),  # approves what it shows
        ("sayso.reject", "Reject", request_id),
        ("sayso.edit", "Edit", request_id),
    ]

    answer = slack.interact(click("sayso.approve", buttons[0][2]))
    assert answer.status_code == 200, answer.text
    [updated] = slack.wait_for("chat.update")
    assert (updated["channel"], updated["ts"]) == ("C0OPS", "1700000000.000001")
    assert updated["text"] == "Approved by bob (Slack)"
    assert "sayso.approve" not in str(updated["blocks"])  # the buttons are gone
    assert finished(server, run["run_id"])["status"] == "completed"
    assert ran("pay") == [{"amount": 250}]
    decided = request_of(server, request_id)
    assert (decided["principal"], decided["via"]) == ("bob", "slack")


def test_reject_asks_for_a_reason_in_a_modal_and_the_model_reads_it(server: LiveServer, slack: SlackStandIn) -> None:
    run = start_run(server, "pay 900")
    request_id = run["requests"][0]["id"]
    slack.wait_for("chat.postMessage")
    assert slack.interact(click("sayso.reject", request_id)).status_code == 200
    [opened] = slack.wait_for("views.open")
    view = opened["view"]
    assert view["callback_id"] == "sayso.reject"
    answer = slack.interact(submit("sayso.reject", view["private_metadata"], "reason", "over budget"))
    assert answer.status_code == 200
    [updated] = slack.wait_for("chat.update")
    assert updated["text"] == "Rejected by bob (Slack): over budget"
    done = finished(server, run["run_id"])
    assert "over budget" in done["output"]
    assert ran("pay") == []


def test_edit_opens_the_arguments_and_approves_the_edited_call(server: LiveServer, slack: SlackStandIn) -> None:
    run = start_run(server, "pay 900")
    request_id = run["requests"][0]["id"]
    slack.wait_for("chat.postMessage")
    assert slack.interact(click("sayso.edit", request_id)).status_code == 200
    [opened] = slack.wait_for("views.open")
    view = opened["view"]
    assert '"amount": 900' in view["blocks"][0]["element"]["initial_value"]
    not_json = slack.interact(submit("sayso.edit", view["private_metadata"], "args", "{amount: 90"))
    assert not_json.json()["response_action"] == "errors"  # the modal stays open, saying why
    answer = slack.interact(submit("sayso.edit", view["private_metadata"], "args", '{"amount": 90}'))
    assert answer.status_code == 200
    [updated] = slack.wait_for("chat.update")
    assert updated["text"] == "Approved with edited arguments by bob (Slack)"
    assert finished(server, run["run_id"])["status"] == "completed"
    assert ran("pay") == [{"amount": 90}]


def test_bad_signatures_stale_and_replayed_payloads_are_refused(server: LiveServer, slack: SlackStandIn) -> None:
    run = start_run(server, "pay 5")
    request_id = run["requests"][0]["id"]
    slack.wait_for("chat.postMessage")

    forged = slack.interact(click("sayso.approve", request_id), secret="not-the-apps-secret")
    assert forged.status_code == 401
    stale = slack.interact(click("sayso.approve", request_id), at=time.time() - 600)
    assert stale.status_code == 401
    body, headers = slack.signed(click("sayso.reject", request_id, user="U0NOBODY"))
    assert slack.send(body, headers).status_code == 403  # a Slack user mapped to no principal decides nothing
    assert slack.send(body, headers).status_code == 409  # the same signed payload again: a replay
    assert request_of(server, request_id)["status"] == "open"

    refused = slack.interact(click("sayso.approve", request_id, user="U0CAROL"))
    assert refused.status_code == 200  # Slack is answered at once; carol, who may not see it, is told alone
    [told] = slack.wait_for("chat.postEphemeral", count=2)[-1:]
    assert told["user"] == "U0CAROL"
    assert f"no open or decided request has id {request_id!r}" in told["text"]  # as for a made-up id
    assert request_of(server, request_id)["status"] == "open"
    assert slack.calls_to("chat.update") == []


def test_a_decision_taken_elsewhere_updates_the_message(server: LiveServer, slack: SlackStandIn) -> None:
    run = start_run(server, "pay 3")
    request_id = run["requests"][0]["id"]
    slack.wait_for("chat.postMessage")
    decided = httpx.post(
        f"{server.base_url}/v1/requests/{request_id}/decision",
        json={"kind": "reject", "reason": "done by hand"},
        headers=BOB,
        timeout=30,
    )
    assert decided.status_code == 200, decided.text
    [updated] = slack.wait_for("chat.update")
    assert updated["text"] == "Rejected by bob (REST): done by hand"


def test_a_request_its_run_went_on_without_updates_its_message_as_skipped(
    server: LiveServer, slack: SlackStandIn
) -> None:
    """alice forces her run on past the request: the message says it was skipped, and by whom."""
    run = start_run(server, "pay 3")
    slack.wait_for("chat.postMessage")
    resumed = httpx.post(
        f"{server.base_url}/v1/runs/{run['run_id']}/resume", json={"force": True}, headers=ALICE, timeout=30
    )
    assert resumed.status_code == 200, resumed.text
    [updated] = slack.wait_for("chat.update")
    assert updated["text"] == "Skipped by alice (REST)"


def test_an_expired_request_updates_its_message(serve: Serve, slack: SlackStandIn, tmp_path: Path) -> None:
    clock = Clock()
    port = free_port()
    config = channels_config(
        tmp_path, public_url=f"http://127.0.0.1:{port}", notify=["slack:#ops"], slack_url=slack.base_url, ttl_seconds=60
    )
    server, _ = serve(config, port=port, clock=clock)
    start_run(server, "pay 8")
    slack.wait_for("chat.postMessage")
    clock.now += 61
    assert httpx.post(f"{server.base_url}/v1/expire", headers=BOB, timeout=30).status_code == 200
    [updated] = slack.wait_for("chat.update")
    assert updated["text"] == "Expired: nobody decided in time."


def _quorum_of_two(serve: Serve, slack: SlackStandIn, tmp_path: Path) -> LiveServer:
    """A server whose payments need two of bob and carol, its requests posted to Slack's stand-in, which sends its
    clicks back to the server."""
    port = free_port()
    config = channels_config(
        tmp_path,
        public_url=f"http://127.0.0.1:{port}",
        notify=["slack:#ops"],
        slack_url=slack.base_url,
        routing={"approvers": ["bob", "carol"], "approvals_required": 2},
    )
    server, _ = serve(config, port=port)
    slack.interactions_url = f"{server.base_url}/v1/slack/interactions"
    return server


def test_approve_counts_for_the_arguments_its_message_showed_not_an_edit_made_since(
    serve: Serve, slack: SlackStandIn, tmp_path: Path
) -> None:
    """Two of bob and carol must approve; the message shows 250; bob's vote edits it to 200 over REST. Carol's
    Approve on the message approves the 250 she saw (a new round on it), never bob's 200: nothing runs yet."""
    server = _quorum_of_two(serve, slack, tmp_path)
    run = start_run(server, "pay 250")
    request_id = run["requests"][0]["id"]
    [posted] = slack.wait_for("chat.postMessage")
    assert '"amount": 250' in str(posted["blocks"])
    [approve] = [e for e in posted["blocks"][-1]["elements"] if e["action_id"] == "sayso.approve"]
    edit = {"kind": "approve", "edited_args": {"amount": 200}}
    voted = httpx.post(f"{server.base_url}/v1/requests/{request_id}/decision", json=edit, headers=BOB, timeout=30)
    assert voted.status_code == 200, voted.text

    assert slack.interact(click("sayso.approve", approve["value"], user="U0CAROL")).status_code == 200
    deadline = time.monotonic() + 20
    while (state := request_of(server, request_id))["status"] == "open" and time.monotonic() < deadline:
        if len(state["request"]["quorum"]["votes"]) == 2:
            break
        time.sleep(0.02)
    assert state["status"] == "open", state.get("decision")  # carol's 250 does not resolve bob's 200
    quorum = state["request"]["quorum"]
    assert quorum["approved_by"] == ["carol"] and quorum["round"] == 2
    assert quorum["args"] is None and state["request"]["args"] == {"amount": 250}  # the proposed ones stand again
    assert ran("pay") == []


def test_a_signed_payload_of_another_shape_is_refused_naming_it_and_takes_nothing(
    server: LiveServer, slack: SlackStandIn
) -> None:
    """Signed payloads whose fields are not what Slack sends answer 400 naming the field; none decides, none tells
    anyone anything, and none uses up its `trigger_id`: Slack's own payload with it then approves."""
    run = start_run(server, "pay 6")
    request_id = run["requests"][0]["id"]
    [posted] = slack.wait_for("chat.postMessage")
    [approve] = [e["value"] for e in posted["blocks"][-1]["elements"] if e["action_id"] == "sayso.approve"]
    good = click("sayso.approve", approve)
    view = {"callback_id": "sayso.reject", "private_metadata": request_id}
    malformed = [
        ({**good, "user": "U0BOB"}, "user: should be an object"),
        ({**good, "actions": []}, "actions: List should have at least 1 item"),
        ({**good, "actions": "x"}, "actions: Input should be a valid list"),
        ({**good, "actions": ["x"]}, "actions.0: should be an object"),
        ({**good, "actions": [{"value": approve}]}, "actions.0.action_id: Field required"),
        ({**good, "channel": "C0OPS"}, "channel: should be an object"),
        ({**good, "type": "view_submission", "view": "x"}, "view: should be an object"),
        ({**good, "type": "view_submission", "view": {**view, "state": {"values": "x"}}}, "view.state.values"),
        ({**good, "type": "view_submission", "view": {**view, "state": {"values": {"reason": {"reason": 1}}}}}, ""),
    ]
    for payload, named in malformed:
        answer = slack.interact(payload)
        assert answer.status_code == 400, (payload, answer.text)
        assert "not as Slack sends it" in answer.json()["error"] and named in answer.json()["error"], answer.text
    assert request_of(server, request_id)["status"] == "open"
    assert slack.calls_to("chat.postEphemeral") == [] and slack.calls_to("views.open") == []

    assert slack.interact(good).status_code == 200  # its trigger_id was never taken: no replay
    assert finished(server, run["run_id"])["status"] == "completed"
    assert ran("pay") == [{"amount": 6}]


def test_without_principals_a_mapped_slack_user_decides_as_local(
    serve: Serve, slack: SlackStandIn, tmp_path: Path
) -> None:
    """Local development (no `principals:`): a click of a user `users` maps decides as `local`, the one caller
    there; an unmapped user still decides nothing."""
    port = free_port()
    config = channels_config(
        tmp_path, public_url=f"http://127.0.0.1:{port}", notify=["slack:#ops"], slack_url=slack.base_url, principals=()
    )
    server, _ = serve(config, port=port)
    slack.interactions_url = f"{server.base_url}/v1/slack/interactions"
    answer = httpx.post(f"{server.base_url}/v1/runs", json={"message": "pay 31"}, timeout=30)
    run, request_id = answer.json(), answer.json()["requests"][0]["id"]
    [posted] = slack.wait_for("chat.postMessage")
    [approve] = [e["value"] for e in posted["blocks"][-1]["elements"] if e["action_id"] == "sayso.approve"]

    assert slack.interact(click("sayso.approve", approve, user="U0NOBODY")).status_code == 403
    assert slack.interact(click("sayso.approve", approve)).status_code == 200
    [updated] = slack.wait_for("chat.update")
    assert updated["text"] == "Approved by local (Slack)"
    assert finished(server, run["run_id"])["status"] == "completed"
    assert ran("pay") == [{"amount": 31}]
    decided = httpx.get(f"{server.base_url}/v1/requests/{request_id}", timeout=30).json()
    assert (decided["principal"], decided["via"]) == ("local", "slack")


def test_a_vote_short_of_its_quorum_or_not_counted_is_told_to_its_clicker(
    serve: Serve, slack: SlackStandIn, tmp_path: Path
) -> None:
    """Two of bob and carol must approve: bob's Approve is told it counted (1 of 2), his second that it did not;
    the message keeps its buttons until carol's decides, which updates it."""
    server = _quorum_of_two(serve, slack, tmp_path)
    run = start_run(server, "pay 250")
    [posted] = slack.wait_for("chat.postMessage")
    [approve] = [e["value"] for e in posted["blocks"][-1]["elements"] if e["action_id"] == "sayso.approve"]

    assert slack.interact(click("sayso.approve", approve)).status_code == 200
    [counted] = slack.wait_for("chat.postEphemeral")
    assert counted["user"] == "U0BOB"
    assert counted["text"] == (
        "Your approval was counted. Approvals: 1 of 2, waiting for carol. The agent waits for the others."
    )
    assert slack.interact(click("sayso.approve", approve)).status_code == 200
    [_, repeated] = slack.wait_for("chat.postEphemeral", count=2)
    assert repeated["user"] == "U0BOB"
    assert repeated["text"].startswith("You already voted on this request")
    assert repeated["text"].endswith("Nothing changed. Approvals: 1 of 2, waiting for carol.")
    assert slack.calls_to("chat.update") == [] and run_of(server, run["run_id"])["status"] == "paused"

    assert slack.interact(click("sayso.approve", approve, user="U0CAROL")).status_code == 200
    [updated] = slack.wait_for("chat.update")
    assert updated["text"] == "Approved by carol (Slack)"
    assert finished(server, run["run_id"])["status"] == "completed"
    assert ran("pay") == [{"amount": 250}]
    assert len(slack.calls_to("chat.postEphemeral")) == 2  # the message says a decision: nobody is told twice


def test_a_call_or_reason_longer_than_a_slack_block_is_shown_cut_and_still_decided(
    server: LiveServer, slack: SlackStandIn
) -> None:
    """Slack refuses a block whose text is over 3,000 characters, and a message's text over 40,000 (the stand-in
    too). A call whose arguments are longer is posted with them cut, saying so, and its Approve decides the whole
    call; a rejection whose reason is longer still updates the message (each was refused: never posted, or left
    with its buttons)."""
    token = "x" * 4000
    first = start_run(server, f"pay 10 with {token}")
    [posted] = slack.wait_for("chat.postMessage")
    shown = posted["blocks"][1]["text"]["text"]
    assert len(shown) <= 3000 and '"amount": 10' in shown and "the rest is in sayso" in shown
    [approve] = [e["value"] for e in posted["blocks"][-1]["elements"] if e["action_id"] == "sayso.approve"]
    assert slack.interact(click("sayso.approve", approve)).status_code == 200
    assert finished(server, first["run_id"])["status"] == "completed"
    assert ran("pay") == [{"amount": 10}]

    second = start_run(server, "pay 20")
    slack.wait_for("chat.postMessage", count=2)
    reason = "no: " + "y" * 50_000
    rejected = httpx.post(
        f"{server.base_url}/v1/requests/{second['requests'][0]['id']}/decision",
        json={"kind": "reject", "reason": reason},
        headers=BOB,
        timeout=30,
    )
    assert rejected.status_code == 200, rejected.text
    updated = slack.wait_for("chat.update", count=2)[-1]
    [said] = updated["blocks"][-1]["elements"]
    assert said["text"].startswith("Rejected by bob (REST): no: yyy") and len(said["text"]) <= 3000
    assert updated["text"].startswith("Rejected by bob (REST): no: yyy") and len(updated["text"]) <= 40_000


def test_edit_of_arguments_too_long_for_a_slack_form_says_where_to_edit_them(
    server: LiveServer, slack: SlackStandIn
) -> None:
    """Slack refuses a form whose input starts with over 3,000 characters (the stand-in too): Edit on such a call
    says plainly where to edit it (the web UI, `sayso decide`), opening no form (it said "Could not open the form:
    Slack refused views.open: invalid_arguments"); the request stays open, and Approve still decides it."""
    token = "x" * 3000
    run = start_run(server, f"pay 10 with {token}")
    request_id = run["requests"][0]["id"]
    [posted] = slack.wait_for("chat.postMessage")
    assert slack.interact(click("sayso.edit", request_id)).status_code == 200
    [told] = slack.wait_for("chat.postEphemeral")
    assert told["user"] == "U0BOB" and told["channel"] == "C0OPS"
    said = told["text"]
    assert said.startswith("These arguments are too long to edit in Slack"), said
    assert f"in the web UI ({server.base_url}/)" in said and f"sayso decide CONFIG {request_id} approve --args" in said
    assert "Could not open the form" not in said
    assert slack.calls_to("views.open") == [] and slack.refused == []
    assert run_of(server, run["run_id"])["status"] == "paused"
    [approve] = [e["value"] for e in posted["blocks"][-1]["elements"] if e["action_id"] == "sayso.approve"]
    assert slack.interact(click("sayso.approve", approve)).status_code == 200
    assert finished(server, run["run_id"])["status"] == "completed"
    assert ran("pay") == [{"amount": 10}]
