"""Routing in the web UI (a real Chromium): a card says who decides and where the vote stands; a vote keeps it open."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from sayso import Config, Sayso
from sayso.server import LiveSettings, create_app

from ..conftest import LiveServer
from ..server.test_web_ui import ARGS, CHROMIUM, sign_in

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")


@pytest.fixture
def live(refunds: Config, browser: Browser) -> Iterator[LiveServer]:
    server = LiveServer.in_thread(create_app(Sayso(refunds), expire_every_seconds=None, live=LiveSettings(every=0.2)))
    yield server
    for context in browser.contexts:  # their pages' live streams would hold the server's stop for its grace period
        context.close()
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield browser
        browser.close()


def person(browser: Browser, live: LiveServer, name: str) -> Page:
    page = browser.new_context(viewport={"width": 1200, "height": 800}).new_page()
    page.set_default_timeout(15_000)
    sign_in(page, live.base_url, f"{name}-token")
    page.goto(f"{live.base_url}/#/inbox")
    return page


def test_two_approvers_vote_in_their_inboxes(live: LiveServer, browser: Browser) -> None:
    with live.client("alice-token") as alice:
        run = alice.post("/v1/runs", json={"message": "refund 250 to acme"}).json()
    bob = person(browser, live, "bob")
    card = bob.locator("#inbox-cards article.card")
    expect(card).to_contain_text("Decided by finance (bob, carol)")
    expect(card.locator(".quorum")).to_have_text("Approvals: 0 of 2, waiting for finance")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card).to_contain_text("Your vote is recorded: 1 of 2, waiting for finance")
    expect(card.locator(".quorum")).to_have_text("Approvals: 1 of 2, waiting for finance")
    carol = person(browser, live, "carol")
    card = carol.locator("#inbox-cards article.card")
    expect(card.locator(".quorum")).to_have_text("Approvals: 1 of 2, waiting for finance")
    card.get_by_role("button", name="Approve", exact=True).click()
    # The card turns into its receipt, which the live inbox may take away at once: either way it waits no more.
    expect(carol.locator("#inbox-cards article.card:not(.done)")).to_have_count(0)
    # The vote is recorded before the run resumes: the run finishes a moment after the card goes.
    deadline = time.monotonic() + 30
    with live.client("alice-token") as alice:
        while (done := alice.get(f"/v1/runs/{run['run_id']}").json())["status"] == "running":
            assert time.monotonic() < deadline, done
            time.sleep(0.05)
    assert done["status"] == "completed" and done["output"] == "Refunded 250 to acme."
    alice_page = person(browser, live, "alice")
    alice_page.goto(f"{live.base_url}/#/thread/{run['thread_id']}")
    lines = alice_page.locator("#transcript li.decision")
    expect(lines.nth(0)).to_contain_text("Vote 1 of 2: Approved by bob (web UI)")
    expect(lines.nth(1)).to_contain_text("Approved by carol (web UI)")


def test_a_keyboard_vote_leaves_focus_on_the_card(live: LiveServer, browser: Browser) -> None:
    """A vote pressed with Enter hid the card's buttons and dropped focus to the page's <body>; focus now moves to
    what the card says of the vote."""
    with live.client("alice-token") as alice:
        alice.post("/v1/runs", json={"message": "refund 250 to acme"})
    bob = person(browser, live, "bob")
    card = bob.locator("#inbox-cards article.card")
    card.get_by_role("button", name="Approve", exact=True).focus()
    bob.keyboard.press("Enter")
    expect(card.get_by_role("alert")).to_have_text("Your vote is recorded: 1 of 2, waiting for finance")
    expect(card.get_by_role("alert")).to_be_focused()


def test_an_open_card_shows_another_approvers_vote_live(live: LiveServer, browser: Browser) -> None:
    """carol's inbox is open while bob votes over REST: her card's progress changes without a reload."""
    with live.client("alice-token") as alice:
        run = alice.post("/v1/runs", json={"message": "refund 250 to acme"}).json()
    carol = person(browser, live, "carol")
    card = carol.locator("#inbox-cards article.card")
    expect(card.locator(".quorum")).to_have_text("Approvals: 0 of 2, waiting for finance")
    expect(carol.locator("body[data-live='on']")).to_have_count(1)
    carol.evaluate("window.__same_page = true")  # a reload would forget it
    with live.client("bob-token") as bob:
        voted = bob.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json={"kind": "approve"})
    assert voted.status_code == 200, voted.text
    expect(card.locator(".quorum")).to_have_text("Approvals: 1 of 2, waiting for finance")
    assert carol.evaluate("window.__same_page") is True


def test_someone_elses_thread_opens_as_no_such_thread_without_a_composer(live: LiveServer, browser: Browser) -> None:
    """dana follows a link to alice's thread: the page says no thread she may see has that id, as for a made-up one,
    and offers no message box that would only be refused; a new chat offers it again."""
    with live.client("alice-token") as alice:
        run = alice.post("/v1/runs", json={"message": "refund 250 to acme"}).json()
    dana = person(browser, live, "dana")
    for thread_id in (run["thread_id"], "thr_made_up"):
        dana.goto(f"{live.base_url}/#/thread/{thread_id}")
        expect(dana.locator("#chat-title")).to_have_text("No such thread")
        expect(dana.locator("#status")).to_have_text(
            "No thread you may see has this id. Start a new chat, or open one of your threads."
        )
        expect(dana.get_by_label("Message")).to_be_hidden()
        expect(dana.locator("#cards article.card")).to_have_count(0)
    dana.get_by_role("button", name="New chat").click()
    expect(dana.get_by_label("Message")).to_be_visible()


def test_the_starter_sees_their_routed_request_without_buttons_that_would_be_refused(
    live: LiveServer, browser: Browser
) -> None:
    """alice's refund waits for finance; in her thread its card shows what is asked and who decides, and no Approve,
    Edit or Reject that the server would only refuse (separation of duties). bob, who may decide it, has them."""
    with live.client("alice-token") as alice:
        run = alice.post("/v1/runs", json={"message": "refund 250 to acme"}).json()
    alice_page = person(browser, live, "alice")
    alice_page.goto(f"{live.base_url}/#/thread/{run['thread_id']}")
    card = alice_page.locator("#cards article.card")
    expect(card).to_contain_text("Decided by finance (bob, carol)")
    expect(card).to_contain_text("Waiting for finance: you may not decide this request.")
    expect(card.get_by_role("button")).to_have_count(0)
    bob = person(browser, live, "bob")
    expect(bob.locator("#inbox-cards article.card").get_by_role("button", name="Approve", exact=True)).to_be_visible()
