"""The web UI in a real headless Chromium (Debian's), against a real server on 127.0.0.1."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from sayso import Config, Sayso, load_config
from sayso.server import create_app

from ..conftest import EXAMPLE, LiveServer

ServerFactory = Callable[..., LiveServer]

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).parents[2] / "test-output" / "screenshots"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (scripts/test installs it)"
)


@pytest.fixture
def serve(workdir: Path) -> Iterator[ServerFactory]:
    """Start real servers (the example, or `config`) for a browser to reach, and stop them after the test."""
    started: list[LiveServer] = []

    def factory(*, config: Config | None = None) -> LiveServer:
        app = create_app(Sayso(config or load_config(EXAMPLE)), expire_every_seconds=None)
        started.append(LiveServer.in_thread(app))
        return started[-1]

    yield factory
    for running in started:
        running.stop()


@pytest.fixture
def server(serve: ServerFactory) -> LiveServer:
    """A real server in local development mode."""
    return serve()


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


def screenshot(locator_or_page: object, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    locator_or_page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))  # type: ignore[attr-defined]


def say(page: Page, message: str) -> None:
    page.get_by_label("Message").fill(message)
    page.get_by_role("button", name="Send").click()


def approval_card(page: Page) -> object:
    return page.locator("article.card[data-kind=approval]")


def test_person_approves_a_call(server: LiveServer, page: Page, workdir: Path) -> None:
    """Approving the card runs the tool, and the agent's answer appears in the chat."""
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    expect(card).to_contain_text("Deleting a file cannot be undone.")
    expect(card.get_by_label("Arguments", exact=True)).to_contain_text('"name": "notes.txt"')
    screenshot(card, "approval-card")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#transcript")).to_contain_text("Deleted notes.txt.")
    assert not (workdir / "sandbox" / "notes.txt").exists()


def test_person_edits_arguments_before_approving(server: LiveServer, page: Page, workdir: Path) -> None:
    """Edit and approve runs the call with the person's arguments, not the model's."""
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    card.get_by_role("button", name="Edit and approve").click()
    card.get_by_label("Arguments (JSON)").fill("{not json")
    card.get_by_role("button", name="Approve with these arguments").click()
    expect(card.get_by_role("alert")).to_contain_text("not valid JSON")
    card.get_by_label("Arguments (JSON)").fill('{"name": "todo.md"}')
    screenshot(card, "approval-card-editing")
    card.get_by_role("button", name="Approve with these arguments").click()
    expect(page.locator("#transcript")).to_contain_text("Deleted todo.md.")
    assert (workdir / "sandbox" / "notes.txt").exists()
    assert not (workdir / "sandbox" / "todo.md").exists()


def test_person_rejects_with_a_reason(server: LiveServer, page: Page, workdir: Path) -> None:
    """A rejection's reason reaches the model, and the call never runs."""
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    card.get_by_role("button", name="Reject").click()
    card.get_by_label("Reason").fill("I still need it")
    card.get_by_role("button", name="Confirm rejection").click()
    expect(page.locator("#transcript")).to_contain_text("Declined: I still need it")
    assert (workdir / "sandbox" / "notes.txt").exists()


def test_person_answers_a_multiple_choice_question_with_other(
    serve: ServerFactory, helper_config: Config, page: Page
) -> None:
    """Checked choices and the Other text are sent together as the answer to one question."""
    server = serve(config=helper_config)
    page.goto(server.base_url)
    say(page, "survey")
    card = page.get_by_role("article", name="A question for you")
    expect(card.get_by_role("group", name="Which colours do you like? (pick any)")).to_be_visible()
    card.get_by_label("red").check()
    card.get_by_label("blue").check()
    card.get_by_label("Other answer").fill("teal")
    screenshot(card, "question-card")
    card.get_by_role("button", name="Send answer").click()
    expect(page.locator("#transcript")).to_contain_text('"answer":["red","blue","teal"]')


def test_person_answers_a_client_tool_request(serve: ServerFactory, helper_config: Config, page: Page) -> None:
    """A client-tool request is a panel where the person gives the result the agent reads."""
    server = serve(config=helper_config)
    with server.client() as client:
        tool = {"name": "get_location", "description": "Where the person is", "parameters": {"type": "object"}}
        run = client.post("/v1/runs", json={"message": "locate", "client_tools": [tool]}).json()
    page.goto(f"{server.base_url}/#/thread/{run['thread_id']}")
    card = page.get_by_role("article", name="Run get_location here")
    expect(card).to_contain_text("Where the person is")
    card.get_by_label("Result (JSON)").fill("[1, 2")
    card.get_by_role("button", name="Send result").click()
    expect(card.get_by_role("alert")).to_contain_text("not valid JSON")
    card.get_by_label("Result (JSON)").fill('{"city": "Lyon"}')
    screenshot(card, "client-tool-card")
    card.get_by_role("button", name="Send result").click()
    expect(page.locator("#transcript")).to_contain_text("You are at")
    expect(page.locator("#transcript")).to_contain_text("Lyon")


def test_inbox_decides_requests_of_two_threads(server: LiveServer, page: Page, workdir: Path) -> None:
    """The inbox lists the open requests of every thread, and deciding there resumes each run."""
    with server.client() as client:
        first = client.post("/v1/runs", json={"message": "delete notes"}).json()
        second = client.post("/v1/runs", json={"message": "delete todo"}).json()
    assert first["thread_id"] != second["thread_id"]
    page.goto(f"{server.base_url}/#/inbox")
    cards = page.locator("#inbox-cards article.card")
    expect(cards).to_have_count(2)
    expect(page.locator("#inbox-count")).to_have_text("2")
    expect(cards.nth(0)).to_contain_text(first["thread_id"])
    expect(cards.nth(1)).to_contain_text(second["thread_id"])
    screenshot(page, "inbox")
    cards.nth(0).get_by_role("button", name="Approve", exact=True).click()
    expect(cards.nth(0)).to_contain_text("Decided")
    cards.nth(1).get_by_role("button", name="Reject").click()
    cards.nth(1).get_by_role("button", name="Confirm rejection").click()
    expect(cards.nth(1)).to_contain_text("Decided")
    page.get_by_role("button", name="Refresh").click()
    expect(page.get_by_text("Nothing is waiting for a decision.")).to_be_visible()
    assert not (workdir / "sandbox" / "notes.txt").exists()
    assert (workdir / "sandbox" / "todo.md").exists()
    with server.client() as client:
        assert client.get(f"/v1/runs/{first['run_id']}").json()["status"] == "completed"
        assert client.get(f"/v1/runs/{second['run_id']}").json()["output"] == "Declined by the person."


def test_reloading_mid_pause_shows_the_pause_again(server: LiveServer, page: Page) -> None:
    """A pause lives in the store, not the page: a reload shows the same open request."""
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    request_id = card.get_attribute("data-request-id")
    assert page.url.split("#")[1].startswith("/thread/thr_")
    page.reload()
    again = page.get_by_role("article", name="Approve delete_file?")
    expect(again).to_have_attribute("data-request-id", request_id or "")
    expect(page.locator("#transcript")).to_contain_text("delete notes")


def test_second_tab_sees_the_request_already_decided(server: LiveServer, browser: Browser) -> None:
    """Two tabs show the same request; after one decides, the other's different decision is refused."""
    with httpx.Client(base_url=server.base_url) as client:
        run = client.post("/v1/runs", json={"message": "delete notes"}).json()
    context = browser.new_context()
    try:
        first, second = context.new_page(), context.new_page()
        for tab in (first, second):
            tab.goto(f"{server.base_url}/#/thread/{run['thread_id']}")
            expect(tab.get_by_role("article", name="Approve delete_file?")).to_be_visible()
        first.get_by_role("button", name="Approve", exact=True).click()
        expect(first.locator("#transcript")).to_contain_text("Deleted notes.txt.")
        card = second.get_by_role("article", name="Approve delete_file?")
        card.get_by_role("button", name="Reject").click()
        card.get_by_role("button", name="Confirm rejection").click()
        expect(card.get_by_role("alert")).to_contain_text("Already decided")
        screenshot(card, "approval-card-already-decided")
    finally:
        context.close()


def test_allow_for_this_chat_then_revoke_and_verify_the_audit_log(
    server: LiveServer, page: Page, workdir: Path
) -> None:
    """'Allow for this chat' lets the next delete in the folder run without a card; the grants page revokes it;
    the audit page verifies the chain intact, and names the first record edited behind its back."""
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    expect(card.get_by_role("group", name="Remember")).to_contain_text("Just this call")
    expect(card.get_by_label("Just this call")).to_be_checked()
    card.get_by_label("Allow for this chat").check()
    screenshot(card, "approval-card-scope")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#transcript")).to_contain_text("Deleted notes.txt.")
    say(page, "delete todo")
    expect(page.locator("#transcript")).to_contain_text("Deleted todo.md.")
    expect(approval_card(page)).to_have_count(0)  # type: ignore[arg-type]
    assert not (workdir / "sandbox" / "todo.md").exists()

    page.get_by_role("link", name="Grants").click()
    rows = page.locator("#grants-rows tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("delete_file")
    expect(rows.first).to_contain_text("the sandbox's top folder")
    expect(rows.first).to_contain_text("Allow for this chat")
    screenshot(page, "grants")
    rows.first.get_by_role("button", name="Revoke delete_file on the sandbox's top folder").click()
    expect(page.locator("#grants-status")).to_contain_text("Revoked")
    expect(rows).to_have_count(0)
    with server.client() as client:
        assert client.get("/v1/grants").json()["grants"] == []

    page.get_by_role("link", name="Audit log").click()
    audit_rows = page.locator("#audit-rows tr")
    expect(audit_rows.first).to_contain_text("grant_revoked")  # newest first
    expect(page.locator("#audit-rows")).to_contain_text("approve (thread)")
    page.get_by_role("button", name="Verify").click()
    expect(page.locator("#audit-result")).to_contain_text("Intact")
    screenshot(page, "audit-log")
    with sqlite3.connect(workdir / "sayso.db") as db:
        db.execute("UPDATE audit SET body = replace(body, 'thread', 'always') WHERE seq = 1")
    page.get_by_role("button", name="Verify").click()
    expect(page.locator("#audit-result")).to_contain_text("Broken at record 1")
    expect(page.locator('#audit-rows tr[data-seq="1"]')).to_have_class("bad")
    screenshot(page, "audit-log-broken")


def test_nested_requests_are_labelled_with_who_asked_for_whom(serve: ServerFactory, page: Page) -> None:
    """A delegate's cards say which agent asked on whose behalf, and answering both finishes the run."""
    team = load_config(Path(__file__).resolve().parents[2] / "examples" / "team" / "sayso.yaml")
    server = serve(config=team)
    page.goto(server.base_url)
    say(page, "report")
    question = page.get_by_role("article", name="A question for you")
    expect(question).to_contain_text("asked by analyst for coordinator")
    approval = page.get_by_role("article", name="Approve archive_logs?")
    expect(approval).to_contain_text("asked by ops for coordinator")
    expect(page.locator("#threads a")).to_have_count(1)  # the delegates' own threads are not listed
    screenshot(page, "nested-cards")
    question.get_by_label("Q2").check()
    question.get_by_role("button", name="Send answer").click()
    approval.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#transcript")).to_contain_text("Revenue in Q2 grew 5%.")
