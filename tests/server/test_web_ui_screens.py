"""The web UI as a person meets it, in Debian's Chromium at desktop width and at 390 px: Markdown answers (safe),
tool calls as small cards, a working indicator, a placeholder and a hint that fit the chosen agent, internal agents
not offered, workflow cards titled from their schema with multi-line text and answers shown as fields, grants and
audit rows that stack on a phone with Revoke in reach, "Invalid token" on a wrong sign-in, and the unanchored audit
note muted in local development mode. Each screen is saved under tmp/artifacts/ at both widths."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from sayso import load_config

from ..conftest import ROOT, LiveServer
from .test_live import files_example
from .test_web_ui import CHROMIUM, DEMO, PRINCIPALS, ServerFactory, browser, say, serve, sign_in, watched_page

__all__ = ["browser", "serve"]  # fixtures, shared with the web UI tests

ARTIFACTS = ROOT / "tmp" / "artifacts"
WIDTHS = {"desktop": (1280, 860), "phone": (390, 844)}

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (scripts/test installs it)"
)


@pytest.fixture(params=list(WIDTHS))
def width(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def page(browser: Browser, width: str) -> Iterator[Page]:
    """A page at desktop or phone width that fails its test on a Content Security Policy violation or a JS error."""
    with watched_page(browser, *WIDTHS[width], errors=True) as page:
        yield page


def shot(page: Page, name: str, width: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)


def fits(page: Page) -> None:
    """Nothing on the page is wider than the window (no sideways scrolling on a phone)."""
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_chat_shows_markdown_answers_and_tool_calls_as_cards(serve: ServerFactory, page: Page, width: str) -> None:
    """`list` shows the call as a card (name, arguments) and its result folded; the answer is Markdown, built as
    nodes: a reply holding HTML shows it as text, never as markup."""
    server = serve()
    page.goto(server.base_url)
    placeholder = "Message files: manages the files of a sandbox folder"
    expect(page.get_by_label("Message")).to_have_attribute("placeholder", placeholder)
    say(page, "list")
    transcript = page.locator("#transcript")
    expect(transcript).to_contain_text("Files in the sandbox:")
    call = transcript.get_by_label("Called list_files")
    expect(call.locator(".tool-name")).to_have_text("list_files")
    expect(transcript.locator("li.tool_result summary")).to_contain_text("list_files returned")
    expect(transcript.locator("li.tool_result pre")).to_be_hidden()  # folded until opened
    answer = transcript.locator("li.assistant").last
    expect(answer.locator("p")).to_contain_text("notes.txt")
    say(page, "read <img/src=x/onerror=alert(1)>")  # the reply quotes the name: text, never an element
    expect(transcript.locator("li.assistant").last).to_contain_text("No file named '<img/src=x/onerror=alert(1)>'")
    assert transcript.locator("li.assistant img").count() == 0
    fits(page)
    shot(page, "chat", width)


def test_a_run_shows_a_working_indicator_then_the_approval(serve: ServerFactory, page: Page, width: str) -> None:
    """While a run works the status line spins (aria-busy on the transcript); a pause stops it; the approval is then
    recorded once, as a transcript line."""
    server = serve()
    page.goto(server.base_url)
    page.evaluate(
        """() => {
          window.sawWorking = false;
          new MutationObserver(() => {
            if (document.getElementById('status').classList.contains('working')) window.sawWorking = true;
          }).observe(document.getElementById('status'), { attributes: true, childList: true });
        }"""
    )
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    expect(card).to_be_visible()
    assert page.evaluate("window.sawWorking")
    expect(page.locator("#status")).not_to_have_class("working")
    expect(page.locator("#transcript")).to_have_attribute("aria-busy", "false")
    fits(page)
    shot(page, "approval", width)
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#transcript")).to_contain_text("Deleted notes.txt.")
    # One record of the decision: its transcript line; the card does not stay beside it as a second receipt.
    expect(page.locator("#transcript li.decision")).to_have_count(1)
    expect(page.locator("#cards article.card")).to_have_count(0)
    shot(page, "approved", width)


def test_a_workflow_chat_is_hinted_and_its_forms_read_as_forms(serve: ServerFactory, page: Page, width: str) -> None:
    """The demo: `planner` is internal, so not offered; picking the concierge shows how its chat starts and a
    placeholder for it; its card is titled from the schema, feedback is multi-line, and a sent form reads as fields
    in the transcript."""
    server = serve(config=load_config(DEMO))
    page.goto(server.base_url)
    if width == "phone":
        page.get_by_role("button", name="Threads").click()
    choose = page.get_by_label("Agent for a new chat")
    expect(choose.locator("option")).to_have_text(["files", "concierge (workflow)"])
    choose.select_option("concierge")
    hint = page.locator("#workflow-hint")
    expect(hint).to_contain_text("concierge is a workflow: Plans a day out")
    expect(hint).to_contain_text("Send any message to start it")
    placeholder = 'Say anything to start concierge, for example "hello"'
    expect(page.get_by_label("Message")).to_have_attribute("placeholder", placeholder)
    shot(page, "workflow-start", width)
    say(page, "hello")
    expect(hint).to_be_hidden()
    card = page.get_by_role("article", name="Preferences")
    expect(card).to_contain_text("step: Ask preferences")
    card.get_by_label("City *").fill("Lisbon")
    card.get_by_label("Hobby").fill("fado")
    fits(page)
    shot(page, "workflow-form", width)
    card.get_by_role("button", name="Send").click()
    review = page.get_by_role("article", name="User feedback").last
    response = review.get_by_label("User response *")
    expect(response).to_have_js_property("tagName", "TEXTAREA")
    response.fill("more fado,\nless walking")
    shot(page, "workflow-review", width)
    # The sent form is one record, the transcript's line (its receipt card gave way to it), and reads as fields.
    answered = page.locator("#transcript li.decision").first
    expect(answered).to_contain_text("Answered by you")
    expect(answered.locator("dt").first).to_have_text("City")
    expect(answered.locator("dd").first).to_have_text("Lisbon")


def test_grants_and_audit_stack_on_a_phone_and_revoke_is_in_reach(serve: ServerFactory, page: Page, width: str) -> None:
    """A remembered approval is listed; at 390 px each row is a labelled block whose Revoke button is on screen and
    works; the audit log stacks the same way, and its unanchored note is muted in local development mode."""
    server = serve()
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    card.get_by_label("Always allow").check()
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#transcript")).to_contain_text("Deleted notes.txt.")
    page.goto(f"{server.base_url}/#/grants")
    revoke = page.get_by_role("button", name="Revoke delete_file on the sandbox's top folder")
    expect(revoke).to_be_visible()
    box = revoke.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= WIDTHS[width][0]
    if width == "phone":
        expect(page.locator("#grants-rows td[data-label=Tool]")).to_have_css("display", "grid")
    fits(page)
    shot(page, "grants", width)
    revoke.click()
    expect(page.locator("#grants-status")).to_contain_text("Revoked: delete_file")
    page.goto(f"{server.base_url}/#/audit")
    expect(page.locator("#audit-rows tr").first).to_be_visible()
    page.get_by_role("button", name="Verify").click()
    note = page.locator("#audit-result p")
    expect(note).to_contain_text("UNANCHORED")
    expect(note).to_have_class("muted")  # expected while developing locally: no alarm
    fits(page)
    shot(page, "audit", width)


def test_a_wrong_token_says_invalid_token(serve: ServerFactory, page: Page, width: str, workdir: Path) -> None:
    """Signing in with a token no principal has says "Invalid token" by the field; the right one signs in."""
    server: LiveServer = serve(config=load_config(files_example(workdir, PRINCIPALS)))
    page.goto(server.base_url)
    page.get_by_label("Bearer token").fill("not-a-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert").filter(has_text="Invalid token")).to_be_visible()
    shot(page, "sign-in-refused", width)
    sign_in(page, server.base_url, "bob-token")
    expect(page.locator("#signin-error")).to_have_text("")
    shot(page, "signed-in", width)
