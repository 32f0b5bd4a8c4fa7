"""Email notices over a real SMTP server (aiosmtpd), and their links followed in Debian's Chromium."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session
from playwright.sync_api import Browser, Page, expect, sync_playwright

from sayso import Config
from sayso._core.links import LinkClaims, args_digest, sign_link

from ..conftest import LiveServer, free_port
from ..tools import missing, ran
from .conftest import Clock, Mailbox, Serve, Smtp, body_text, channels_config, mailed_link

SCRIPT = {
    "name": "billing",
    "rules": [
        {"user": r"^pay (?P<n>\d+)$", "call": "pay", "args": {"amount": "{n|number}"}},
        {"tool": "pay", "reply": "{result}"},
    ],
}
"""`sayso serve`'s model, as a user's YAML config names it: `pay N` asks to pay N."""

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"]

ALICE = {"Authorization": "Bearer alice-token"}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        missing("Debian's chromium is not installed (scripts/test installs it)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def start_run(server: LiveServer, message: str) -> dict[str, object]:
    answer = httpx.post(f"{server.base_url}/v1/runs", json={"message": message}, headers=ALICE, timeout=30)
    assert answer.status_code == 200, answer.text
    run: dict[str, object] = answer.json()
    assert run["status"] == "paused"
    return run


def run_of(server: LiveServer, run_id: object) -> dict[str, object]:
    answer = httpx.get(f"{server.base_url}/v1/runs/{run_id}", headers=ALICE, timeout=30)
    body: dict[str, object] = answer.json()
    return body


def email_server(serve: Serve, tmp_path: Path, smtp_port: int, **options: object) -> LiveServer:
    port = free_port()
    config = channels_config(
        tmp_path, public_url=f"http://127.0.0.1:{port}", notify=["email:bob@example.com"], smtp_port=smtp_port
    )
    server, _ = serve(config, port=port, **options)
    return server


def test_a_mailed_link_shows_a_confirm_page_and_its_form_approves_once(
    serve: Serve, smtp: Smtp, tmp_path: Path, page: Page
) -> None:
    """The mail has the summary, arguments and hint; its link's page decides nothing until Approve is pressed."""
    server = email_server(serve, tmp_path, smtp.port)
    run = start_run(server, "pay 250")
    [mail] = smtp.mailbox.wait_for(1)
    assert mail["To"] == "bob@example.com"
    assert mail["Subject"] == "Approval needed: billing wants to call pay"
    text = body_text(mail)
    assert '"amount": 250' in text
    assert "billing" in text and "pay" in text
    link = mailed_link(mail)
    assert link.startswith(f"{server.base_url}/v1/links/")

    page.goto(f"{link}?action=approve")
    expect(page.get_by_role("heading", name="Decide")).to_be_visible()
    expect(page.locator("pre")).to_contain_text('"amount": 250')
    expect(page.get_by_text("You decide as bob")).to_be_visible()
    assert run_of(server, run["run_id"])["status"] == "paused"  # opening the link decided nothing

    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_text("Approved. The agent carried on and finished.")).to_be_visible()
    finished = run_of(server, run["run_id"])
    assert finished["status"] == "completed"
    assert ran("pay") == [{"amount": 250}]
    [request_id] = [r["id"] for r in run["requests"]]  # type: ignore[attr-defined]
    decided = httpx.get(f"{server.base_url}/v1/requests/{request_id}", headers=ALICE, timeout=30).json()
    assert (decided["principal"], decided["via"], decided["decision"]["kind"]) == ("bob", "email", "approve")

    again = page.goto(link)
    assert again is not None and again.status == 409
    expect(page.get_by_role("heading", name="Already decided")).to_be_visible()
    expect(page.get_by_text("already decided (approve by bob)")).to_be_visible()


def test_a_link_rejects_with_a_reason_and_edits_are_checked(
    serve: Serve, smtp: Smtp, tmp_path: Path, page: Page
) -> None:
    """An edit the tool's schema refuses leaves request and link open; a rejection's reason reaches the model."""
    server = email_server(serve, tmp_path, smtp.port)
    run = start_run(server, "pay 900")
    link = mailed_link(smtp.mailbox.wait_for(1)[0])

    page.goto(f"{link}?action=edit")
    page.get_by_label("Arguments (JSON)").fill(json.dumps({"amount": "lots"}))
    page.get_by_role("button", name="Approve with these arguments").click()
    expect(page.get_by_role("alert")).to_contain_text("amount")
    assert run_of(server, run["run_id"])["status"] == "paused"

    page.goto(f"{link}?action=reject")
    page.get_by_label("Reason (the agent reads it)").fill("over the monthly budget")
    page.get_by_role("button", name="Reject").click()
    expect(page.get_by_text("Rejected. The agent carried on and finished.")).to_be_visible()
    finished = run_of(server, run["run_id"])
    assert finished["status"] == "completed"
    assert "over the monthly budget" in str(finished["output"])
    assert ran("pay") == []


def test_an_answer_refused_for_its_text_leaves_the_link_to_decide_again(
    serve: Serve, smtp: Smtp, tmp_path: Path
) -> None:
    """A reason over the answer limit, or holding a NUL character, is refused naming why, before the link's one use:
    the same mail then rejects with a reason that fits (it answered "already used" to both)."""
    server = email_server(serve, tmp_path, smtp.port)
    run = start_run(server, "pay 900")
    link = mailed_link(smtp.mailbox.wait_for(1)[0])
    too_long = httpx.post(link, data={"action": "reject", "reason": "r" * 100_001}, timeout=30)
    assert too_long.status_code == 413 and "the limit is 100000" in too_long.text
    nul = httpx.post(link, data={"action": "reject", "reason": "bad\x00nul"}, timeout=30)
    assert nul.status_code == 422 and "NUL" in nul.text
    assert run_of(server, run["run_id"])["status"] == "paused"
    fits = httpx.post(link, data={"action": "reject", "reason": "over the monthly budget"}, timeout=30)
    assert fits.status_code == 200, fits.text
    assert "over the monthly budget" in str(run_of(server, run["run_id"])["output"])
    assert ran("pay") == []


def pay_40_mailed_to_bob(
    serve: Serve, smtp: Smtp, tmp_path: Path, clock: Clock, **rule: Any
) -> tuple[LiveServer, Config, dict[str, Any], str]:
    """A server on `clock` whose payments (with `rule`'s options) are mailed to bob; a paused `pay 40`: the server,
    its config, the run and the link bob was mailed."""
    port = free_port()
    config = channels_config(
        tmp_path, public_url=f"http://127.0.0.1:{port}", notify=["email:bob@example.com"], smtp_port=smtp.port, **rule
    )
    server, _ = serve(config, port=port, clock=clock)
    run: dict[str, Any] = dict(start_run(server, "pay 40"))
    return server, config, run, mailed_link(smtp.mailbox.wait_for(1)[0])


def test_a_link_for_a_changed_or_expired_request_says_so(serve: Serve, smtp: Smtp, tmp_path: Path) -> None:
    """A link bound to other arguments, a link past its request's expiry, a forged one: each a plain 4xx page."""
    clock = Clock()
    server, config, run, link = pay_40_mailed_to_bob(serve, smtp, tmp_path, clock, ttl_seconds=600)
    request_id = str(run["requests"][0]["id"])

    key = config.channels.link_key(None)
    other = LinkClaims(
        request_id=request_id, principal="bob", digest=args_digest({"amount": 4000}), expires_at=clock.now + 60
    )
    changed = httpx.get(f"{server.base_url}/v1/links/{sign_link(key, other)}", timeout=30)
    assert changed.status_code == 409
    assert "changed since the mail was sent" in changed.text
    forged = httpx.get(f"{link[:-4]}AAAA", timeout=30)
    assert forged.status_code == 404
    assert "not one sayso sent" in forged.text

    clock.now += 601
    expired = httpx.post(link, data={"action": "approve"}, timeout=30)
    assert expired.status_code == 410
    assert "This link has expired" in expired.text
    assert run_of(server, run["run_id"])["status"] == "paused"
    swept_by_bob = httpx.post(
        f"{server.base_url}/v1/expire", json={}, headers={"Authorization": "Bearer bob-token"}, timeout=30
    )
    assert swept_by_bob.status_code == 200
    swept = httpx.post(link, data={"action": "approve"}, timeout=30)
    assert (swept.status_code, swept.text) == (410, expired.text)  # still expired once the sweep recorded it


def test_a_link_and_rest_past_an_approving_timeout_say_the_call_will_run(
    serve: Serve, smtp: Smtp, tmp_path: Path
) -> None:
    """The rule approves on timeout: past it, the link's page and REST's 410 both say the call will run (the sweep
    approves it), never that it will not."""
    clock = Clock()
    rule = {"on_timeout": {"after": "10m", "action": "approve"}}
    server, _, run, link = pay_40_mailed_to_bob(serve, smtp, tmp_path, clock, routing=rule)
    request_id = str(run["requests"][0]["id"])
    clock.now += 601

    said = "the rule approves it on timeout (after 10m), so the call will run"
    page = httpx.get(link, timeout=30)
    assert page.status_code == 410 and said in page.text, page.text
    posted = httpx.post(link, data={"action": "reject"}, timeout=30)
    assert posted.status_code == 410 and said in posted.text, posted.text
    bob = {"Authorization": "Bearer bob-token"}
    late = httpx.post(
        f"{server.base_url}/v1/requests/{request_id}/decision", json={"kind": "reject"}, headers=bob, timeout=30
    )
    assert late.status_code == 410 and said in late.json()["detail"], late.text
    assert "will not run" not in page.text + posted.text + late.text
    assert httpx.post(f"{server.base_url}/v1/expire", headers=bob, timeout=30).status_code == 200
    assert ran("pay") == [{"amount": 40}]


def two_of_bob_and_carol(serve: Serve, tmp_path: Path, smtp: Smtp) -> tuple[LiveServer, Config]:
    """A server whose payments two of bob and carol approve, carol notified by mail; and its config."""
    port = free_port()
    config = channels_config(
        tmp_path,
        public_url=f"http://127.0.0.1:{port}",
        notify=["email:carol@example.com"],
        smtp_port=smtp.port,
        routing={"approvers": ["bob", "carol"], "approvals_required": 2},
    )
    server, _ = serve(config, port=port)
    return server, config


def bob_edits(server: LiveServer, request_id: str, amount: int) -> dict[str, Any]:
    """bob's vote, editing the amount (which restarts the quorum's count); its answer."""
    edit = {"kind": "approve", "edited_args": {"amount": amount}}
    bob = {"Authorization": "Bearer bob-token"}
    voted = httpx.post(f"{server.base_url}/v1/requests/{request_id}/decision", json=edit, headers=bob, timeout=30)
    assert voted.status_code == 200, voted.text
    answer: dict[str, Any] = voted.json()
    return answer


def test_an_edit_vote_voids_the_links_mailed_before_it(serve: Serve, smtp: Smtp, tmp_path: Path) -> None:
    """Two of bob and carol must approve; bob's vote edits the amount, restarting the quorum: carol's mailed link
    was for the old arguments and says the request changed; a link made now, for the edited ones, approves."""
    server, config = two_of_bob_and_carol(serve, tmp_path, smtp)
    run = start_run(server, "pay 250")
    link = mailed_link(smtp.mailbox.wait_for(1)[0])
    request_id = str(run["requests"][0]["id"])  # type: ignore[index]
    assert httpx.get(link, timeout=30).status_code == 200  # the link works until the arguments change

    assert bob_edits(server, request_id, 200)["quorum"]["text"] == "1 of 2 (edited arguments), waiting for carol"

    changed = httpx.get(link, timeout=30)
    assert changed.status_code == 409 and "changed since the mail was sent" in changed.text
    refused = httpx.post(link, data={"action": "approve"}, timeout=30)
    assert refused.status_code == 409 and "changed since the mail was sent" in refused.text
    assert run_of(server, run["run_id"])["status"] == "paused" and ran("pay") == []

    bound = LinkClaims(request_id=request_id, principal="carol", digest=args_digest({"amount": 200}), expires_at=9e9)
    fresh = f"{server.base_url}/v1/links/{sign_link(config.channels.link_key(None), bound)}"
    approved = httpx.post(fresh, data={"action": "approve"}, timeout=30)
    assert approved.status_code == 200, approved.text
    assert run_of(server, run["run_id"])["status"] == "completed"
    assert ran("pay") == [{"amount": 200}]


def test_a_mail_sent_late_shows_the_arguments_its_link_approves(serve: Serve, tmp_path: Path) -> None:
    """The SMTP server is down when the request opens; bob's vote edits 300 to 100 before it comes back. Carol's
    mail, sent then, shows 100, and its link approves 100: never a mail that shows 300 whose link approves 100."""
    smtp = Smtp(free_port())  # not listening yet: the notice waits
    server, _ = two_of_bob_and_carol(serve, tmp_path, smtp)
    run = start_run(server, "pay 300")
    request_id = str(run["requests"][0]["id"])  # type: ignore[index]
    bob_edits(server, request_id, 100)
    smtp.start()
    try:
        [mail] = smtp.mailbox.wait_for(1)
    finally:
        smtp.stop()
    assert '"amount": 100' in body_text(mail) and '"amount": 300' not in body_text(mail)
    page = httpx.get(mailed_link(mail), timeout=30)
    assert page.status_code == 200, page.text
    assert "&quot;amount&quot;: 100" in page.text
    approved = httpx.post(mailed_link(mail), data={"action": "approve"}, timeout=30)
    assert approved.status_code == 200, approved.text
    assert ran("pay") == [{"amount": 100}]


def test_a_used_link_is_refused_even_when_the_request_reopened_nothing(
    serve: Serve, smtp: Smtp, tmp_path: Path
) -> None:
    """A link works once: posting it again is refused, and only one decision is recorded."""
    server = email_server(serve, tmp_path, smtp.port)
    start_run(server, "pay 7")
    link = mailed_link(smtp.mailbox.wait_for(1)[0])
    first = httpx.post(link, data={"action": "reject", "reason": "no"}, timeout=30)
    assert first.status_code == 200, first.text
    second = httpx.post(link, data={"action": "approve"}, timeout=30)
    assert second.status_code == 409
    assert "already decided (reject by bob)" in second.text
    assert ran("pay") == []


def test_a_link_to_a_request_its_run_went_on_without_says_it_is_closed(
    serve: Serve, smtp: Smtp, tmp_path: Path
) -> None:
    """alice forces her run on past the request: bob's link says the run went on without it, not that someone
    decided it."""
    server = email_server(serve, tmp_path, smtp.port)
    run = start_run(server, "pay 7")
    link = mailed_link(smtp.mailbox.wait_for(1)[0])
    resumed = httpx.post(
        f"{server.base_url}/v1/runs/{run['run_id']}/resume", json={"force": True}, headers=ALICE, timeout=30
    )
    assert resumed.status_code == 200, resumed.text
    for answer in (httpx.get(link, timeout=30), httpx.post(link, data={"action": "approve"}, timeout=30)):
        assert answer.status_code == 409, answer.text
        assert "this request is closed: its run went on without it" in answer.text
        assert "skip by" not in answer.text
    assert ran("pay") == []


def test_a_mail_not_sent_before_a_restart_is_sent_once_by_the_next_server(serve: Serve, tmp_path: Path) -> None:
    """The SMTP server is down when the request opens; the server stops; the next one mails it, once."""
    smtp = Smtp(free_port())  # not listening yet: the first attempts fail and the notice stays pending
    port = free_port()
    config = channels_config(
        tmp_path, public_url=f"http://127.0.0.1:{port}", notify=["email:bob@example.com"], smtp_port=smtp.port
    )
    first, sayso = serve(config, port=port)
    start_run(first, "pay 12")
    first.stop()
    smtp.start()
    try:
        second, _ = serve(config, port=free_port())
        replica, _ = serve(config, port=free_port())
        [mail] = smtp.mailbox.wait_for(1)
        second.stop()
        replica.stop()  # each lands what it has in flight: a second mail would be in the mailbox now
        assert len(smtp.mailbox.messages) == 1
        assert '"amount": 12' in body_text(mail)
    finally:
        smtp.stop()


class Greylisting(Mailbox):
    """An SMTP server that answers each recipient "try again later" (450) the first `refusals` times, as
    greylisting servers do with a sender they have not seen, and then takes the mail."""

    def __init__(self, refusals: int) -> None:
        super().__init__()
        self.refusals = refusals
        self.asked = 0

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        self.asked += 1
        if self.asked <= self.refusals:
            return "450 4.7.1 greylisted, try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"


def test_a_recipient_refused_for_now_is_mailed_once_the_server_takes_it(serve: Serve, tmp_path: Path) -> None:
    """A 4xx answer to a recipient (greylisting, a full mailbox) says "later": the notice is tried again and
    bob gets his mail (it was given up after the first answer, and the request was never mailed)."""
    greylisting = Greylisting(refusals=2)
    controller = Controller(greylisting, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        server = email_server(serve, tmp_path, controller.port)
        start_run(server, "pay 45")
        [mail] = greylisting.wait_for(1)
    finally:
        controller.stop()
    assert greylisting.asked == 3
    assert mail["To"] == "bob@example.com" and '"amount": 45' in body_text(mail)


class Refusing(Mailbox):
    """An SMTP server that takes the recipient, then refuses the mail for good (5xx) at `at`: the sender (`MAIL`)
    or the message (`DATA`), counting how often it was asked."""

    def __init__(self, at: str) -> None:
        super().__init__()
        self.at = at
        self.asked = 0

    async def handle_MAIL(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        if self.at == "MAIL":
            self.asked += 1
            return "550 5.7.1 sender rejected"
        envelope.mail_from = address
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.asked += 1
        return "554 5.6.0 message refused"


@pytest.mark.parametrize("at", ["MAIL", "DATA"])
def test_a_mail_the_smtp_server_refuses_for_good_is_given_up_at_once(
    serve: Serve, tmp_path: Path, caplog: pytest.LogCaptureFixture, at: str
) -> None:
    """A 5xx to the sender or the message says "never", as to a recipient: the notice is given up after one answer
    and logged once (it was tried again, up to 24 times over 15 hours)."""
    refusing = Refusing(at)
    controller = Controller(refusing, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        server = email_server(serve, tmp_path, controller.port)
        start_run(server, "pay 46")
        deadline = time.monotonic() + 20
        while "failed after" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.02)
        server.stop()  # nothing in flight: a retry would have asked the SMTP server again
    finally:
        controller.stop()
    gave_up = [r.getMessage() for r in caplog.records if "failed after" in r.getMessage()]
    assert len(gave_up) == 1 and "to notice email:bob@example.com failed after 1 attempt(s)" in gave_up[0], gave_up
    assert "5.7.1 sender rejected" in gave_up[0] if at == "MAIL" else "5.6.0 message refused" in gave_up[0]
    assert refusing.asked == 1


def test_sayso_serve_mails_requests_and_its_links_decide(smtp: Smtp, tmp_path: Path) -> None:
    """The real `sayso serve`: its banner names the channels; a request is mailed; its link approves (local mode)."""
    port = free_port()
    (tmp_path / "script.yaml").write_text(json.dumps(SCRIPT))
    config = tmp_path / "sayso.yaml"
    config.write_text(
        json.dumps(
            {
                "models": {"m": {"scripted": "script.yaml"}},
                "channels": {
                    "public_url": f"http://127.0.0.1:{port}",
                    "email": {"smtp_host": "127.0.0.1", "smtp_port": smtp.port, "from": "approvals@example.com"},
                },
                "agents": {
                    "billing": {
                        "model": "m",
                        "tools": ["tests.tools:pay"],
                        "interrupt": {"tools": [{"name": "pay", "notify": ["email:ops@example.com"]}]},
                    }
                },
            }
        )
    )
    env = {
        "SAYSO_STORE": f"sqlite:///{tmp_path / 'sayso.db'}",
        "SAYSO_LINK_KEY": "a-link-key-for-tests-only-0123456789",
        "PATH": "",
    }
    served, process = LiveServer.process([str(config)], env=env, port=port, stderr=subprocess.PIPE)
    try:
        run = httpx.post(f"{served.base_url}/v1/runs", json={"message": "pay 5"}, timeout=30).json()
        assert run["status"] == "paused"
        [mail] = smtp.mailbox.wait_for(1)
        done = httpx.post(mailed_link(mail), data={"action": "approve"}, timeout=30)
        assert done.status_code == 200, done.text
        assert "Approved. The agent carried on and finished." in done.text
        assert httpx.get(f"{served.base_url}/v1/runs/{run['run_id']}", timeout=30).json()["status"] == "completed"
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    banner = f"channels: email through 127.0.0.1:{smtp.port}; links point at http://127.0.0.1:{port}"
    assert banner in stderr.splitlines()


def test_a_mail_and_its_page_hide_redacted_arguments(serve: Serve, smtp: Smtp, tmp_path: Path) -> None:
    """Fields the agent redacts are hidden in the mail and on the page, as on every interface."""
    port = free_port()
    config = channels_config(
        tmp_path, public_url=f"http://127.0.0.1:{port}", notify=["email:bob@example.com"], smtp_port=smtp.port
    )
    config.agents["billing"].redact = ["token"]
    server, _ = serve(config, port=port)
    start_run(server, "pay 3 with tok-s3cret")
    [mail] = smtp.mailbox.wait_for(1)
    assert "tok-s3cret" not in mail.as_string()
    assert '"amount": 3' in body_text(mail)
    page = httpx.get(mailed_link(mail), timeout=30)
    assert page.status_code == 200
    assert "tok-s3cret" not in page.text and "&quot;amount&quot;: 3" in page.text


def test_a_mail_after_an_edit_vote_shows_the_arguments_its_link_approves(
    serve: Serve, smtp: Smtp, tmp_path: Path
) -> None:
    """Bob's vote edits the amount to 200; the escalation then mails carol, whose link approves 200: the mail and its
    confirm page show 200, never the 250 the edit replaced."""
    clock = Clock()
    port = free_port()
    config = channels_config(
        tmp_path,
        public_url=f"http://127.0.0.1:{port}",
        notify=[],
        smtp_port=smtp.port,
        routing={"approvers": ["bob", "carol"], "approvals_required": 2},
        escalate=[{"after": "1h", "notify": ["email:carol@example.com"]}],
    )
    server, _ = serve(config, port=port, clock=clock)
    run = start_run(server, "pay 250")
    request_id = str(run["requests"][0]["id"])  # type: ignore[index]
    bob = {"Authorization": "Bearer bob-token"}
    edit = {"kind": "approve", "edited_args": {"amount": 200}}
    voted = httpx.post(f"{server.base_url}/v1/requests/{request_id}/decision", json=edit, headers=bob, timeout=30)
    assert voted.status_code == 200, voted.text

    clock.now += 61 * 60
    assert httpx.post(f"{server.base_url}/v1/expire", headers=bob, timeout=30).status_code == 200
    [mail] = smtp.mailbox.wait_for(1)
    assert '"amount": 200' in body_text(mail) and '"amount": 250' not in body_text(mail)
    page = httpx.get(mailed_link(mail), timeout=30)
    assert page.status_code == 200, page.text
    assert "&quot;amount&quot;: 200" in page.text and "&quot;amount&quot;: 250" not in page.text

    approved = httpx.post(mailed_link(mail), data={"action": "approve"}, timeout=30)
    assert approved.status_code == 200, approved.text
    assert ran("pay") == [{"amount": 200}]


def amount_band(tool_name: str, tool_input: dict[str, int]) -> dict[str, str]:
    """The subject of a payment: its band of 100 (an approval of 250 covers 200 to 299)."""
    band = tool_input["amount"] // 100
    return {"key": f"band:{band}", "label": f"payments of {band * 100} to {band * 100 + 99}"}


def test_an_edit_that_changes_the_subject_leaves_the_link_to_decide_again(
    serve: Serve, smtp: Smtp, tmp_path: Path
) -> None:
    """An edit outside what the mail's approval covers is refused, naming it; the link still works for an edit
    within it (a refused decision changes nothing, the link's one use included)."""
    port = free_port()
    config = channels_config(
        tmp_path,
        public_url=f"http://127.0.0.1:{port}",
        notify=["email:bob@example.com"],
        smtp_port=smtp.port,
        routing={"subject": "tests.channels.test_email:amount_band"},
    )
    server, _ = serve(config, port=port)
    run = start_run(server, "pay 250")
    link = mailed_link(smtp.mailbox.wait_for(1)[0])

    wider = httpx.post(link, data={"action": "edit", "args": json.dumps({"amount": 900})}, timeout=30)
    assert wider.status_code == 422, wider.text
    assert "the edit changes what the approval covers" in wider.text
    assert run_of(server, run["run_id"])["status"] == "paused"

    within = httpx.post(link, data={"action": "edit", "args": json.dumps({"amount": 260})}, timeout=30)
    assert within.status_code == 200, within.text
    assert ran("pay") == [{"amount": 260}]


def test_without_principals_a_link_to_a_listed_address_decides_as_local(
    serve: Serve, smtp: Smtp, tmp_path: Path
) -> None:
    """Local development (no `principals:`): a mail to an address `users` lists (bob's) carries a link that decides
    as `local`, the one caller there; its page says so, and its Approve runs the call."""
    port = free_port()
    config = channels_config(
        tmp_path,
        public_url=f"http://127.0.0.1:{port}",
        notify=["email:bob@example.com"],
        smtp_port=smtp.port,
        principals=(),
    )
    server, _ = serve(config, port=port)
    run = httpx.post(f"{server.base_url}/v1/runs", json={"message": "pay 30"}, timeout=30).json()
    assert run["status"] == "paused", run
    link = mailed_link(smtp.mailbox.wait_for(1)[0])

    page = httpx.get(link, timeout=30)
    assert page.status_code == 200, page.text
    assert "You decide as <strong>local</strong>" in page.text
    done = httpx.post(link, data={"action": "approve"}, timeout=30)
    assert done.status_code == 200, done.text
    assert ran("pay") == [{"amount": 30}]
    request_id = run["requests"][0]["id"]
    decided = httpx.get(f"{server.base_url}/v1/requests/{request_id}", timeout=30).json()
    assert (decided["principal"], decided["via"], decided["decision"]["kind"]) == ("local", "email", "approve")
    assert httpx.get(f"{server.base_url}/v1/runs/{run['run_id']}", timeout=30).json()["status"] == "completed"


def test_a_links_page_says_whether_its_vote_counted_and_where_the_quorum_stands(
    serve: Serve, smtp: Smtp, tmp_path: Path
) -> None:
    """Two of bob and carol must approve. Bob approves over REST, then presses Approve in his mail: the page says
    his vote was not counted and the count is still 1 of 2; carol's then decides and says the agent carried on.
    On a second request bob's mailed Approve comes first: the page says it counted, 1 of 2, and the agent waits."""
    port = free_port()
    config = channels_config(
        tmp_path,
        public_url=f"http://127.0.0.1:{port}",
        notify=["email:bob@example.com", "email:carol@example.com"],
        smtp_port=smtp.port,
        routing={"approvers": ["bob", "carol"], "approvals_required": 2},
    )
    server, _ = serve(config, port=port)
    bob = {"Authorization": "Bearer bob-token"}

    def links(count: int) -> dict[str, str]:
        mails = smtp.mailbox.wait_for(count)[count - 2 :]
        return {str(mail["To"]): mailed_link(mail) for mail in mails}

    run = start_run(server, "pay 250")
    request_id = str(run["requests"][0]["id"])  # type: ignore[index]
    mailed = links(2)
    voted = httpx.post(
        f"{server.base_url}/v1/requests/{request_id}/decision", json={"kind": "approve"}, headers=bob, timeout=30
    )
    assert voted.status_code == 200 and voted.json()["recorded"], voted.text

    again = httpx.post(mailed["bob@example.com"], data={"action": "approve"}, timeout=30)
    assert again.status_code == 200, again.text
    assert "<h1>Not counted</h1>" in again.text and "carried on" not in again.text
    assert "You already voted on this request" in again.text
    assert "Nothing changed. Approvals: 1 of 2, waiting for carol." in again.text
    state = httpx.get(f"{server.base_url}/v1/requests/{request_id}", headers=ALICE, timeout=30).json()
    assert state["status"] == "open" and state["request"]["quorum"]["approved_by"] == ["bob"]
    assert run_of(server, run["run_id"])["status"] == "paused" and ran("pay") == []

    carol = httpx.post(mailed["carol@example.com"], data={"action": "approve"}, timeout=30)
    assert carol.status_code == 200, carol.text
    assert "Approved. Approvals: 2 of 2. The agent carried on and finished." in carol.text
    assert ran("pay") == [{"amount": 250}]

    second = start_run(server, "pay 120")
    first_vote = httpx.post(links(4)["bob@example.com"], data={"action": "approve"}, timeout=30)
    assert first_vote.status_code == 200, first_vote.text
    assert "<h1>Vote counted</h1>" in first_vote.text and "carried on" not in first_vote.text
    assert "Your approval was counted. Approvals: 1 of 2, waiting for carol. The agent waits" in first_vote.text
    assert run_of(server, second["run_id"])["status"] == "paused" and ran("pay") == [{"amount": 250}]


def test_a_link_mailed_to_someone_who_may_not_see_the_request_decides_nothing(
    serve: Serve, smtp: Smtp, tmp_path: Path
) -> None:
    """carol may decide nothing of alice's: the link mailed to her answers a plain 404 page, as a made-up request
    would (it was a server error), opened or posted, before the request is decided and after: its page shows
    neither the arguments nor buttons, nor who decided. The request waits for bob."""
    port = free_port()
    config = channels_config(
        tmp_path, public_url=f"http://127.0.0.1:{port}", notify=["email:carol@example.com"], smtp_port=smtp.port
    )
    server, _ = serve(config, port=port)
    run = start_run(server, "pay 250")
    link = mailed_link(smtp.mailbox.wait_for(1)[0])
    opened = httpx.get(link, timeout=30)
    assert opened.status_code == 404 and "This link does not work" in opened.text, opened.text
    assert "no open or decided request has id" in opened.text
    assert "amount" not in opened.text and "<button" not in opened.text
    refused = httpx.post(link, data={"action": "approve"}, timeout=30)
    assert refused.status_code == 404 and "This link does not work" in refused.text, refused.text
    assert "no open or decided request has id" in refused.text
    assert run_of(server, run["run_id"])["status"] == "paused" and ran("pay") == []

    request_id = str(run["requests"][0]["id"])  # type: ignore[index]
    bob = {"Authorization": "Bearer bob-token"}
    decided = httpx.post(
        f"{server.base_url}/v1/requests/{request_id}/decision", json={"kind": "approve"}, headers=bob, timeout=30
    )
    assert decided.status_code == 200, decided.text
    after = httpx.get(link, timeout=30)
    assert after.status_code == 404 and "This link does not work" in after.text, after.text
    assert "bob" not in after.text
