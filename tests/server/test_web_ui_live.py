"""The web UI keeps up without a reload, in Debian's Chromium: the grants page follows grants given and revoked
elsewhere, and a keyboard user whose card gives way to its transcript line keeps their place on the page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from ..conftest import LiveServer
from .test_web_ui import CHROMIUM, browser, say, serve, server, watched_page

__all__ = ["browser", "serve", "server"]  # fixtures, shared with the web UI tests

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (scripts/test installs it)"
)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page that fails its test on a JavaScript error or a Content Security Policy violation."""
    with watched_page(browser, errors=True) as page:
        yield page


def test_the_grants_page_shows_grants_given_and_revoked_elsewhere(server: LiveServer, page: Page) -> None:
    """The grants page, open, lists an approval remembered "for this chat" in another client, and drops it when
    that client revokes it, without a reload."""
    page.goto(f"{server.base_url}/#/grants")
    expect(page.locator("#grants-status")).to_contain_text("No remembered approvals")
    with server.client() as client:
        run = client.post("/v1/runs", json={"message": "delete notes"}).json()
        body = {"kind": "approve", "scope": "thread"}
        assert client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json=body).status_code == 200
        (grant,) = client.get("/v1/grants").json()["grants"]
    rows = page.locator("#grants-rows tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("delete_file")
    expect(page.locator("#grants-status")).to_have_text("")
    with server.client() as client:
        assert client.delete(f"/v1/grants/{grant['grant_id']}").status_code in (200, 204)
    expect(rows).to_have_count(0)
    expect(page.locator("#grants-status")).to_contain_text("No remembered approvals")


def test_a_card_that_gives_way_to_its_line_hands_focus_to_the_message_box(server: LiveServer, page: Page) -> None:
    """Enter on Approve, in the chat: once the transcript holds the decision its card goes, and focus moves to the
    message box (no card is left), not to the page's <body> a keyboard user would tab through from the top."""
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    card.get_by_role("button", name="Approve", exact=True).focus()
    page.keyboard.press("Enter")
    expect(page.locator("#transcript")).to_contain_text("Deleted notes.txt.")
    expect(page.locator("#cards article.card")).to_have_count(0)
    expect(page.get_by_label("Message")).to_be_focused()


def test_a_card_decided_elsewhere_hands_focus_on_when_it_goes(server: LiveServer, page: Page) -> None:
    """A person on a card that someone else decides keeps the keyboard on the page when the card goes: the message
    box holds focus."""
    with server.client() as client:
        run = client.post("/v1/runs", json={"message": "delete notes"}).json()
    page.goto(f"{server.base_url}/#/thread/{run['thread_id']}")
    card = page.get_by_role("article", name="Approve delete_file?")
    card.get_by_role("button", name="Reject").focus()
    with server.client() as client:
        decided = client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json={"kind": "approve"})
        assert decided.status_code == 200
    expect(page.locator("#transcript")).to_contain_text("Deleted notes.txt.")
    expect(page.locator("#cards article.card")).to_have_count(0)
    expect(page.get_by_label("Message")).to_be_focused()


def test_a_card_that_gives_way_hands_focus_to_the_card_that_follows(server: LiveServer, page: Page) -> None:
    """An answer sent by keyboard lets the run go on to the approval that follows: when the question's card gives way
    to its transcript line, focus is on that next card's heading, from where Tab reaches its buttons."""
    page.goto(server.base_url)
    say(page, "delete report")
    question = page.get_by_role("article", name="A question for you")
    question.get_by_label("report-2025.txt").check()
    question.get_by_role("button", name="Send answer").focus()
    page.keyboard.press("Enter")
    follow_up = page.get_by_role("article", name="Approve delete_file?")
    expect(follow_up).to_contain_text("report-2025.txt")
    expect(page.get_by_role("article", name="Answered by you (web UI)")).to_have_count(0)
    expect(follow_up.get_by_role("heading", name="Approve delete_file?")).to_be_focused()
