"""The web UI's elicitation cards in a real headless Chromium: a form built from the schema, a page to visit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from sayso import Config, Sayso
from sayso.server import create_app

from ..conftest import LiveServer
from ..models import tool_model, verbs
from .conftest import ElicitServer

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"]

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (scripts/test installs it)"
)

ROUTE = verbs(book=("book_table", "day"), sign_in="sign_in")
"""`book DAY` books a table on the test server, `sign in` signs in to it; the model says what the call returned."""


@pytest.fixture
def server(tmp_path: Path, elicit_server: ElicitServer) -> Iterator[LiveServer]:
    """`sayso serve`'s app on a real port, for an agent that books tables on the test server."""
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "models": {"m": "test"},
            "mcp_servers": {"booking": {"url": elicit_server.mcp_url, "session": "legacy"}},
            "agents": {"host": {"model": "m", "mcp": [{"server": "booking", "tools": ["book_table", "sign_in"]}]}},
            "base_dir": tmp_path,
        }
    )
    app = create_app(Sayso(config, models={"m": tool_model(ROUTE, read="{result}")}), expire_every_seconds=None)
    live = LiveServer.in_thread(app)
    yield live
    live.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def say(page: Page, message: str) -> None:
    page.get_by_label("Message").fill(message)
    page.get_by_role("button", name="Send").click()


def test_a_servers_form_is_filled_in_field_by_field_and_wrong_fields_are_marked(
    server: LiveServer, page: Page, elicit_server: ElicitServer
) -> None:
    """The card builds inputs from the requested schema; a refused answer marks its fields; a good one books."""
    page.goto(server.base_url)
    say(page, "book fri")
    card = page.get_by_role("article", name="booking asks (book_table)")
    expect(card).to_contain_text("Booking for fri: how many people, and under which name?")
    people = card.get_by_label("People *", exact=True)
    expect(people).to_have_attribute("type", "number")
    card.get_by_role("button", name="Submit").click()
    expect(card.locator('.field-error[data-loc="name"]')).to_have_text("is required")
    name = card.get_by_label("Name *", exact=True)
    expect(name).to_have_attribute("aria-invalid", "true")
    people.fill("2")
    name.fill("Ada")
    card.get_by_role("button", name="Submit").click()
    expect(page.locator("#transcript")).to_contain_text("Booked fri for 2 (Ada)")
    assert elicit_server.bookings() == ["fri:2:Ada"]


def test_a_page_to_visit_has_open_and_done(server: LiveServer, page: Page, elicit_server: ElicitServer) -> None:
    """The URL card links to the page (a new tab, no opener) and "Done" tells the server it was visited."""
    page.goto(server.base_url)
    say(page, "sign in")
    card = page.get_by_role("article", name="booking asks (sign_in)")
    expect(card).to_contain_text("Sign in to the CRM")
    link = card.get_by_role("link", name="Open")
    expect(link).to_have_attribute("href", f"{elicit_server.base_url}/login?user=ada")
    expect(link).to_have_attribute("target", "_blank")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    card.get_by_role("button", name="Done").click()
    expect(page.locator("#transcript")).to_contain_text("sign-in accept")
