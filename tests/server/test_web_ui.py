"""The web UI in a real headless Chromium (Debian's), against a real server on 127.0.0.1.

Besides the cards, it is live: a decision taken with `sayso decide` in another process turns the open
card into "Approved by alice (CLI)"; follow-up requests appear as they open; the transcript says who
decided what, how an edit changed the call, which remembered approval allowed a call, what was skipped,
and why a run failed; and the page fits a 390 px wide phone.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, Route, expect, sync_playwright
from pydantic_ai.models import Model

from sayso import Config, Sayso, load_config
from sayso.server import LiveSettings, create_app

from ..conftest import EXAMPLE, LiveServer
from ..models import answer, calls_then_reply, tool_model, verbs
from ..tools import HOLD, delete_file, explode, hold
from ..workflows.sections import sections_config
from .conftest import helper_models
from .test_live import files_example

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

LIVE = LiveSettings(every=0.2)
"""Pages follow the store closely, so a change made elsewhere shows within a fraction of a second."""

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (scripts/test installs it)"
)


@pytest.fixture
def serve(workdir: Path) -> Iterator[ServerFactory]:
    """Start real servers (the example, or `config`; `models` in place of the configured models of their names) for
    a browser to reach, and stop them after the test."""
    started: list[LiveServer] = []

    def factory(*, config: Config | None = None, models: Mapping[str, Model] | None = None) -> LiveServer:
        sayso = Sayso(config or load_config(EXAMPLE), models=models)
        app = create_app(sayso, expire_every_seconds=None, live=LIVE)
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


@contextmanager
def watched_page(browser: Browser, width: int = 1200, height: int = 800, *, errors: bool = False) -> Iterator[Page]:
    """A browser page that fails its test if the UI breaks its own Content Security Policy (or, with `errors`,
    throws a JavaScript error)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(15_000)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
    if errors:
        page.on("pageerror", lambda e: problems.append(str(e)))
    yield page
    context.close()
    assert problems == [], problems


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    with watched_page(browser) as page:
        yield page


def screenshot(locator_or_page: object, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    locator_or_page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))  # type: ignore[attr-defined]


def say(page: Page, message: str) -> None:
    page.get_by_label("Message").fill(message)
    page.get_by_role("button", name="Send").click()


def approval_card(page: Page) -> Locator:
    return page.locator("article.card[data-kind=approval]")


def test_person_approves_a_call(server: LiveServer, page: Page, workdir: Path) -> None:
    """Approving the card runs the tool, and the agent's answer appears in the chat."""
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    expect(card).to_contain_text("Deleting a file cannot be undone.")
    expect(card).to_contain_text("asked because every call to delete_file waits for approval (rule delete_file)")
    expect(card.get_by_label("Arguments", exact=True)).to_contain_text('"name": "notes.txt"')
    screenshot(card, "approval-card")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#transcript")).to_contain_text("Deleted notes.txt.")
    assert not (workdir / "sandbox" / "notes.txt").exists()


def test_person_edits_arguments_before_approving(server: LiveServer, page: Page, workdir: Path) -> None:
    """Edit and approve runs the call with the person's arguments, not the model's; JSON that is not an object of
    arguments (`null` would read as "no edit" and run the model's) is refused on the card."""
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    card.get_by_role("button", name="Edit and approve").click()
    card.get_by_label("Arguments (JSON)").fill("{not json")
    card.get_by_role("button", name="Approve with these arguments").click()
    expect(card.get_by_role("alert")).to_contain_text("not valid JSON")
    for not_arguments in ("null", '["todo.md"]'):
        card.get_by_label("Arguments (JSON)").fill(not_arguments)
        card.get_by_role("button", name="Approve with these arguments").click()
        expect(card.get_by_role("alert")).to_contain_text("must be a JSON object")
    card.get_by_label("Arguments (JSON)").fill('{"name": "todo.md"}')
    screenshot(card, "approval-card-editing")
    card.get_by_role("button", name="Approve with these arguments").click()
    expect(page.locator("#transcript")).to_contain_text("Deleted todo.md.")
    assert (workdir / "sandbox" / "notes.txt").exists()
    assert not (workdir / "sandbox" / "todo.md").exists()


def test_edit_and_approve_runs_a_whole_number_for_a_float_argument(
    serve: ServerFactory, page: Page, workdir: Path
) -> None:
    """An edit that changes only the account, with the amount written `30` for a `float`, runs as edited."""
    from ..protocols import transfer_tools
    from ..protocols.test_edited_approvals import CONFIG, SCRIPT

    (workdir / "script.yaml").write_text(SCRIPT)
    (workdir / "bank.yaml").write_text(CONFIG)
    transfer_tools.RAN.clear()
    server = serve(config=load_config(workdir / "bank.yaml"))
    page.goto(server.base_url)
    say(page, "pay bob")
    card = page.get_by_role("article", name="Approve transfer?")
    card.get_by_role("button", name="Edit and approve").click()
    card.get_by_label("Arguments (JSON)").fill('{"to": "bob", "amount": 30, "account": "savings"}')
    card.get_by_role("button", name="Approve with these arguments").click()
    expect(page.locator("#transcript")).to_contain_text("Done: sent 30.0 to bob from savings")
    assert [(r["amount"], r["account"]) for r in transfer_tools.RAN] == [(30.0, "savings")]
    transfer_tools.RAN.clear()


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
    server = serve(config=helper_config, models=helper_models())
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
    server = serve(config=helper_config, models=helper_models())
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
    expect(cards.nth(0).get_by_role("link", name="delete notes")).to_have_attribute(
        "href", f"#/thread/{first['thread_id']}"
    )
    expect(cards.nth(1).get_by_role("link", name="delete todo")).to_be_visible()
    expect(cards.nth(0)).to_contain_text("asked just now")
    screenshot(page, "inbox")
    cards.nth(0).get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_role("article", name="Approved by you (web UI)")).to_be_visible()
    cards.nth(1).get_by_role("button", name="Reject").click()
    cards.nth(1).get_by_role("button", name="Confirm rejection").click()
    expect(page.get_by_role("article", name="Rejected by you (web UI)")).to_be_visible()
    expect(page.locator("#inbox-count")).to_have_text("")
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


def test_second_tab_sees_the_decision_without_a_reload(server: LiveServer, browser: Browser) -> None:
    """Two tabs show the same request; when one approves, the other's card says so at once, and its thread
    shows the call's outcome."""
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
        expect(second.locator("#transcript")).to_contain_text("Deleted notes.txt.")
        expect(second.locator("#transcript li.decision")).to_contain_text("Approved by you (web UI)")
        expect(second.locator("article.card")).to_have_count(0)  # the card gave way to the transcript's line
        expect(second.locator("#status")).to_have_text("")
        screenshot(second.locator("#chat-view"), "approval-decided-elsewhere")
    finally:
        context.close()


def test_a_tab_that_decides_too_late_says_its_answer_was_not_taken(server: LiveServer, page: Page) -> None:
    """A tab whose live updates lag rejects a call someone approved a moment before: its card stays to say the
    rejection came too late, beside the transcript's line of the approval that won."""
    with server.client() as client:
        run = client.post("/v1/runs", json={"message": "delete notes"}).json()
    page.route("**/v1/events*", lambda route: route.abort())  # this tab hears of nothing decided elsewhere
    page.goto(f"{server.base_url}/#/thread/{run['thread_id']}")
    card = page.get_by_role("article", name="Approve delete_file?")
    expect(card).to_be_visible()
    with server.client() as client:
        decided = client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json={"kind": "approve"})
        assert decided.status_code == 200
    card.get_by_role("button", name="Reject").click()
    card.get_by_role("button", name="Confirm rejection").click()
    expect(page.locator("#transcript li.decision")).to_contain_text("Approved by you (REST)")
    receipt = page.get_by_role("article", name="Approved by you (REST)")
    expect(receipt.get_by_role("alert")).to_contain_text("Your answer was not taken")
    expect(page.locator("#transcript")).to_contain_text("Deleted notes.txt.")
    page.wait_for_timeout(500)  # a second refresh of the thread keeps it too
    expect(receipt).to_be_visible()


def test_the_grants_page_shows_every_grant_however_many_pages_they_take(server: LiveServer, page: Page) -> None:
    """GET /v1/grants answers a page at a time: the grants page reads on to the last page (here one grant a page),
    showing every grant, not only the first page's."""
    with server.client() as client:
        for name in ("notes", "todo", "report-2025"):
            run = client.post("/v1/runs", json={"message": f"delete {name}"}).json()
            body = {"kind": "approve", "scope": "thread"}
            assert client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json=body).status_code == 200
        assert len(client.get("/v1/grants").json()["grants"]) == 3

    def one_a_page(route: Route) -> None:
        url = urlsplit(route.request.url)
        query = urlencode({**dict(parse_qsl(url.query)), "limit": "1"})
        route.continue_(url=urlunsplit(url._replace(query=query)))

    page.route(re.compile(r".*/v1/grants(\?.*)?$"), one_a_page)
    page.goto(f"{server.base_url}/#/grants")
    expect(page.locator("#grants-rows tr")).to_have_count(3)


def test_a_card_answered_not_found_never_says_its_request_closed(server: LiveServer, page: Page) -> None:
    """The server answers a decision on a request its sender may not see as it answers a made-up id: 404. The card
    says the answer was not taken and why, never that the request, still open, was closed."""
    with server.client() as client:
        run = client.post("/v1/runs", json={"message": "delete notes"}).json()
        made_up = client.post("/v1/requests/req_made_up/decision", json={"kind": "approve"})
    assert made_up.status_code == 404
    request_id = run["requests"][0]["id"]
    answer_404 = made_up.text.replace("req_made_up", request_id)
    page.route(
        f"**/v1/requests/{request_id}/decision",
        lambda route: route.fulfill(status=404, content_type="application/problem+json", body=answer_404),
    )
    page.goto(f"{server.base_url}/#/thread/{run['thread_id']}")
    card = page.get_by_role("article", name="Approve delete_file?")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card.get_by_role("alert")).to_contain_text("Your answer was not taken: Not found")
    expect(card.get_by_role("alert")).to_contain_text("not one you may decide")
    expect(card).not_to_contain_text("closed")
    with server.client() as client:
        assert client.get(f"/v1/requests/{request_id}").json()["status"] == "open"


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
    expect(approval_card(page)).to_have_count(0)
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
    chat = page.locator("#threads a").get_attribute("data-thread-id")
    page.goto(f"{server.base_url}/#/inbox")
    links = page.locator("#inbox-cards article.card").get_by_role("link", name="report")
    expect(links).to_have_count(2)  # each delegate's card links to the person's chat, not the delegate's thread
    for link in links.all():
        expect(link).to_have_attribute("href", f"#/thread/{chat}")
    page.goto(f"{server.base_url}/#/thread/{chat}")
    question.get_by_label("Q2").check()
    question.get_by_role("button", name="Send answer").click()
    approval.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#transcript")).to_contain_text("Revenue in Q2 grew 5%.")


# Live updates, every decision in the transcript, friendly surface and a phone-sized screen.

PRINCIPALS: list[dict[str, Any]] = [
    {"name": "bob", "token": "bob-token"},
    {"name": "alice", "token": "alice-token", "approver_for": ["files"]},
]


def sign_in(page: Page, base_url: str, token: str) -> None:
    page.goto(base_url)
    page.get_by_label("Bearer token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#who")).to_contain_text("signed in as")


def test_a_decision_from_the_cli_turns_the_card_live(serve: ServerFactory, page: Page, workdir: Path) -> None:
    """Bob's open card becomes "Approved by alice (CLI)" when alice approves with `sayso decide` in another
    process, and the thread moves on without a reload: the result, and a transcript line naming her."""
    config = files_example(workdir, PRINCIPALS)
    server = serve(config=load_config(config))
    sign_in(page, server.base_url, "bob-token")
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    expect(page.locator("#status")).to_have_text("Waiting for you.")
    request_id = card.get_attribute("data-request-id")
    assert request_id
    decided = subprocess.run(
        [sys.executable, "-m", "sayso", "decide", str(config), request_id, "approve", "--principal", "alice"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert decided.returncode == 0, decided.stderr
    expect(page.locator("#transcript")).to_contain_text("Deleted notes.txt.")
    expect(page.locator("#transcript li.decision")).to_contain_text("Approved by alice (CLI)")
    expect(page.locator("#transcript li.decision")).to_contain_text("delete_file")
    expect(page.locator("#cards article.card")).to_have_count(0)  # one record of the decision: its line
    expect(page.locator("#status")).to_have_text("")
    screenshot(page, "live-decision-from-cli")
    assert not (workdir / "sandbox" / "notes.txt").exists()


def test_a_message_the_server_refuses_stays_in_the_box_with_the_reason(
    serve: ServerFactory, page: Page, workdir: Path
) -> None:
    """Alice, an approver, opens Bob's chat and writes in it: the server refuses (only its owner speaks there), and
    the page keeps saying why, her words back in the message box, Bob's card still open."""
    server = serve(config=load_config(files_example(workdir, PRINCIPALS)))
    with server.client("bob-token") as bob:
        run = bob.post("/v1/runs", json={"message": "delete notes"}).json()
    sign_in(page, server.base_url, "alice-token")
    page.goto(f"{server.base_url}/#/thread/{run['thread_id']}")
    expect(page.get_by_role("article", name="Approve delete_file?")).to_be_visible()
    say(page, "bob, are you sure?")
    page.get_by_role("button", name="Send anyway").click()
    expect(page.locator("#status")).to_contain_text("only the thread's owner may send messages into it")
    expect(page.get_by_label("Message")).to_have_value("bob, are you sure?")
    expect(page.get_by_role("article", name="Approve delete_file?")).to_be_visible()
    page.wait_for_timeout(500)  # later refreshes of the thread keep the reason
    expect(page.locator("#status")).to_contain_text("only the thread's owner")


def test_the_transcript_shows_each_decision(server: LiveServer, page: Page) -> None:
    """An approval shows its scope and what it covers, and a later call it allowed names the remembered
    approval; each is a line of the transcript, between the call and its result."""
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    card.get_by_label("Allow for this chat").check()
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#transcript")).to_contain_text("Deleted notes.txt.")
    say(page, "delete todo")  # covered by the approval just remembered: no card
    expect(page.locator("#transcript")).to_contain_text("Deleted todo.md.")
    lines = page.locator("#transcript li.decision")
    expect(lines).to_have_count(2)
    expect(lines.nth(0)).to_contain_text("Approved by you (web UI)")
    expect(lines.nth(0)).to_contain_text("remembered for this chat: the sandbox's top folder")
    expect(lines.nth(1)).to_contain_text("Allowed by a remembered approval")
    expect(lines.nth(1)).to_contain_text("the sandbox's top folder (for this chat, given by you)")
    roles = page.locator("#transcript > li").evaluate_all("items => items.map(i => i.className.split(' ')[0])")
    decided = [i for i, role in enumerate(roles) if role == "decision"]
    assert [(roles[i - 1], roles[i + 1]) for i in decided] == [("tool_call", "tool_result")] * 2, roles
    screenshot(page.locator("#transcript"), "transcript-decisions")


def test_a_folded_result_of_several_lines_says_there_is_more(server: LiveServer, page: Page) -> None:
    """`delete report` lists two files before it asks which one: the folded result shows the first line and says
    that more follows, so it does not read as the only match."""
    page.goto(server.base_url)
    say(page, "delete report")
    expect(page.get_by_role("article", name="A question for you")).to_be_visible()
    folded = page.locator("#transcript li.tool_result").first
    expect(folded).to_contain_text("report-2025.txt …")


def test_rejections_and_skips_are_transcript_lines(server: LiveServer, page: Page) -> None:
    """A rejection shows its reason; a message sent over an open request asks first, then skips it, saying so."""
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    card.get_by_role("button", name="Reject").click()
    reason = card.get_by_label("Reason")
    expect(card.get_by_text("(optional)")).to_be_visible()
    reason.fill("I still need it")
    reason.press("Enter")  # Enter sends the rejection
    decision = page.locator("#transcript li.decision")
    expect(decision).to_contain_text("Rejected by you (web UI)")
    expect(decision).to_contain_text("I still need it")
    expect(page.locator("#cards article.card")).to_have_count(0)  # one record per decision: the line, no receipt

    say(page, "delete todo")
    expect(page.get_by_role("article", name="Approve delete_file?")).to_be_visible()
    say(page, "list")
    warning = page.get_by_role("alert").filter(has_text="skips the open request")
    expect(warning).to_be_visible()
    screenshot(page.locator("#chat-view"), "skip-warning")
    page.get_by_role("button", name="Keep them open").click()
    expect(warning).to_be_hidden()
    expect(page.get_by_role("article", name="Approve delete_file?")).to_be_visible()
    page.get_by_role("button", name="Send").click()
    page.get_by_role("button", name="Send anyway").click()
    skipped = page.locator("#transcript li.decision").last
    expect(skipped).to_contain_text("Skipped by you (web UI)")
    expect(skipped).to_contain_text("the person sent a message instead of answering")
    expect(page.locator("article.card")).to_have_count(0)


def test_an_edit_shows_what_changed_before_and_after(server: LiveServer, page: Page, workdir: Path) -> None:
    """Editing the arguments previews the change field by field, and the transcript keeps it: before → after."""
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    card.get_by_role("button", name="Edit and approve").click()
    card.get_by_label("Arguments (JSON)").fill('{"name": "todo.md"}')
    expect(card.get_by_role("list", name="Changes")).to_contain_text("name notes.txt → todo.md")
    card.get_by_role("button", name="Approve with these arguments").click()
    line = page.locator("#transcript li.decision")
    expect(line).to_contain_text("Edited and approved by you (web UI)")
    expect(line.locator("del")).to_have_text("notes.txt")
    expect(line.locator("ins")).to_have_text("todo.md")
    expect(page.locator("#transcript")).to_contain_text("Deleted todo.md.")
    screenshot(page.locator("#transcript"), "transcript-edit")
    assert (workdir / "sandbox" / "notes.txt").exists()


def test_the_follow_up_request_appears_in_the_inbox_as_it_opens(server: LiveServer, page: Page) -> None:
    """Answering a question in the Inbox shows the approval that follows at once, and the badge counts it."""
    with server.client() as client:
        client.post("/v1/runs", json={"message": "delete report"})
    page.goto(f"{server.base_url}/#/inbox")
    question = page.get_by_role("article", name="A question for you")
    question.get_by_label("report-2025.txt").check()
    question.get_by_role("button", name="Send answer").click()
    expect(page.get_by_role("article", name="Answered by you (web UI)")).to_contain_text("report-2025.txt")
    follow_up = page.get_by_role("article", name="Approve delete_file?")
    expect(follow_up).to_contain_text("report-2025.txt")
    expect(page.locator("#inbox-count")).to_have_text("1")
    screenshot(page, "inbox-follow-up")


def test_a_request_opened_elsewhere_appears_in_the_open_inbox(server: LiveServer, page: Page) -> None:
    """A request another client opens shows in an open Inbox, with the badge, without Refresh."""
    page.goto(f"{server.base_url}/#/inbox")
    expect(page.get_by_text("Nothing is waiting for a decision.")).to_be_visible()
    with server.client() as client:
        client.post("/v1/runs", json={"message": "delete notes"})
    expect(page.get_by_role("article", name="Approve delete_file?")).to_be_visible()
    expect(page.locator("#inbox-count")).to_have_text("1")
    expect(page.get_by_text("Nothing is waiting for a decision.")).to_be_hidden()


def test_the_inbox_reaches_every_open_request_and_the_badge_counts_them_all(serve: ServerFactory, page: Page) -> None:
    """With 250 requests open (the badge said 200 and the Inbox showed the oldest 200, nothing more), the badge says
    250, the Inbox says how many of them it shows, and Show more reaches the last; deciding one counts it off."""
    many = calls_then_reply(*[("delete_file", {"name": f"f{n:03}.txt"}) for n in range(250)], reply="done")
    server = serve(models={"demo": many})
    with server.client() as client:
        assert len(client.post("/v1/runs", json={"message": "delete them all"}).json()["requests"]) == 250
    page.goto(f"{server.base_url}/#/inbox")
    cards = page.locator("#inbox-cards article.card")
    expect(page.locator("#inbox-count")).to_have_text("250")
    expect(page.locator("#inbox-shown")).to_have_text("Showing 100 of 250 open requests.")
    expect(cards).to_have_count(100)
    screenshot(page, "inbox-many")
    more = page.get_by_role("button", name="Show more")
    more.click()
    expect(cards).to_have_count(200)
    more.click()
    expect(cards).to_have_count(250)
    expect(page.locator("#inbox-shown")).to_have_text("All 250 open requests are shown.")
    expect(more).to_be_hidden()
    shown = {name for text in cards.all_inner_texts() for name in re.findall(r"f\d{3}\.txt", text)}
    assert shown == {f"f{n:03}.txt" for n in range(250)}
    cards.last.get_by_role("button", name="Approve", exact=True).click()
    # A page of 250 cards on a busy machine: the receipt may take longer than expect's 5 s.
    expect(page.get_by_role("article", name="Approved by you (web UI)")).to_be_visible(timeout=15_000)
    expect(page.locator("#inbox-count")).to_have_text("249")
    expect(page.locator("#inbox-shown")).to_have_text("All 249 open requests are shown.")
    expect(cards).to_have_count(250)  # the decided one stays, as its receipt


def test_a_keyboard_decision_leaves_focus_on_the_cards_receipt(server: LiveServer, page: Page) -> None:
    """Pressing Enter on Approve turned the card into its receipt and dropped focus to the page's <body>: a keyboard
    or screen reader user was thrown back to the top. Focus now stays on the card, at its receipt's heading."""
    with server.client() as client:
        client.post("/v1/runs", json={"message": "delete notes"})
    page.goto(f"{server.base_url}/#/inbox")
    card = page.locator("#inbox-cards article.card")
    approve = card.get_by_role("button", name="Approve", exact=True)
    approve.focus()
    page.keyboard.press("Enter")
    receipt = page.get_by_role("article", name="Approved by you (web UI)")
    expect(receipt).to_be_visible()
    expect(receipt.get_by_role("heading", name="Approved by you (web UI)")).to_be_focused()
    assert page.evaluate("document.activeElement.closest('article.card') !== null")


def test_older_threads_are_listed_on_request_and_stay_listed(serve: ServerFactory, page: Page) -> None:
    """The sidebar lists the newest 50 threads and an Older threads button lists the rest (there was no way past
    the 50th); a thread started elsewhere afterwards joins the top, the older ones staying listed."""
    server = serve(models={"demo": answer("hello")})
    with server.client() as client:
        for n in range(55):
            client.post("/v1/runs", json={"message": f"chat {n:02}"})
    page.goto(server.base_url)
    links = page.locator("#threads a")
    expect(links).to_have_count(50)
    expect(links.first).to_contain_text("chat 54")
    older = page.get_by_role("button", name="Older threads")
    older.click()
    expect(links).to_have_count(55)
    expect(links.last).to_contain_text("chat 00")
    expect(older).to_be_hidden()
    with server.client() as client:
        client.post("/v1/runs", json={"message": "chat later"})
    expect(links).to_have_count(56)
    expect(links.first).to_contain_text("chat later")
    links.last.click()
    expect(page.get_by_role("heading", name="chat 00", exact=True)).to_be_visible()


def test_a_long_thread_opens_at_its_newest_messages_and_reads_back_on_request(serve: ServerFactory, page: Page) -> None:
    """A long thread opened at its oldest line and drew its whole history; it opens at the newest 100 lines, scrolled
    to the last, and Older messages adds the earlier ones above, the lines the person read staying where they were;
    a message sent elsewhere afterwards joins the end, the older lines staying shown."""
    server = serve(models={"demo": answer("hello")})
    with server.client() as client:
        thread_id = client.post("/v1/runs", json={"message": "chat 00"}).json()["thread_id"]
        for n in range(1, 60):
            client.post("/v1/runs", json={"thread_id": thread_id, "message": f"chat {n:02}"})
    page.set_viewport_size({"width": 1000, "height": 700})
    page.goto(f"{server.base_url}/#/thread/{thread_id}")
    lines = page.locator("#transcript > li")
    expect(lines).to_have_count(100)
    expect(lines.first).to_contain_text("chat 10")
    expect(lines.last).to_be_in_viewport()
    expect(page.get_by_role("heading", name="chat 00", exact=True)).to_be_visible()
    read = lines.filter(has_text="chat 12")
    read.scroll_into_view_if_needed()
    top = read.evaluate("line => line.getBoundingClientRect().top")
    older = page.get_by_role("button", name="Older messages")
    older.click()
    expect(lines).to_have_count(120)
    expect(lines.first).to_contain_text("chat 00")
    expect(older).to_be_hidden()
    assert abs(read.evaluate("line => line.getBoundingClientRect().top") - top) < 2
    with server.client() as client:
        client.post("/v1/runs", json={"thread_id": thread_id, "message": "chat later"})
    expect(lines).to_have_count(122)
    expect(lines.first).to_contain_text("chat 00")
    expect(lines.nth(120)).to_contain_text("chat later")


def test_a_failed_run_is_an_error_card_in_the_transcript(serve: ServerFactory, page: Page, workdir: Path) -> None:
    """A run that fails shows its cause in the transcript, and still does after a reload."""
    config = Config.model_validate(
        {
            "store": f"sqlite:///{workdir / 'sayso.db'}",
            "agents": {"boom": {"model": "boom", "tools": [explode]}},
            "base_dir": workdir,
        }
    )
    server = serve(config=config, models={"boom": tool_model(lambda said: ("explode", {}))})
    page.goto(server.base_url)
    say(page, "go")
    failure = page.locator("#transcript li.failure")
    expect(failure).to_contain_text("The run failed")
    expect(failure).to_contain_text("the disk is on fire")
    page.reload()
    expect(page.locator("#transcript li.failure")).to_contain_text("the disk is on fire")
    expect(page.locator("#transcript li.user")).to_contain_text("go")
    screenshot(page.locator("#chat-view"), "transcript-failure")


def test_another_thread_opened_while_a_run_works_shows_its_own_card(
    serve: ServerFactory, page: Page, workdir: Path
) -> None:
    """While one chat's run works, the person opens another chat: it shows its own transcript and open card, which
    they can decide, not a blank page under the first chat's "Working…"; the first chat's answer lands in it."""
    config = Config.model_validate(
        {
            "store": f"sqlite:///{workdir / 'sayso.db'}",
            "agents": {"a": {"model": "m", "tools": [hold, delete_file], "interrupt": {"tools": ["delete_file"]}}},
            "base_dir": workdir,
        }
    )
    route = verbs(wait="hold", delete=("delete_file", "name"))
    server = serve(config=config, models={"m": tool_model(route, read="done: {result}")})
    HOLD.clear()
    try:
        page.goto(server.base_url)
        say(page, "delete notes")
        expect(page.get_by_role("article", name="Approve delete_file?")).to_be_visible()
        waiting = page.url
        page.get_by_role("button", name="New chat").click()
        say(page, "wait")
        expect(page.locator("#status")).to_contain_text("Working…")
        working = page.url
        page.goto(waiting)
        card = page.get_by_role("article", name="Approve delete_file?")
        expect(card).to_be_visible()
        expect(page.locator("#transcript")).to_contain_text("delete notes")
        expect(page.locator("#status")).to_have_text("Waiting for you.")
        card.get_by_role("button", name="Approve", exact=True).click()
        expect(page.locator("#transcript")).to_contain_text("done: deleted notes")
        HOLD.set()
        page.goto(working)
        expect(page.locator("#transcript")).to_contain_text("done: held until released")
        expect(page.locator("#transcript")).not_to_contain_text("delete notes")
    finally:
        HOLD.set()


def test_reloading_while_a_run_works_shows_the_message_once(serve: ServerFactory, page: Page, workdir: Path) -> None:
    """A reload while the run works shows the message just sent under "Working…", not an empty chat; once the run
    ends, the message is there once, with the answer."""
    config = Config.model_validate(
        {
            "store": f"sqlite:///{workdir / 'sayso.db'}",
            "agents": {"a": {"model": "m", "tools": [hold]}},
            "base_dir": workdir,
        }
    )
    server = serve(config=config, models={"m": tool_model(verbs(wait="hold"), read="done: {result}")})
    HOLD.clear()
    try:
        page.goto(server.base_url)
        say(page, "wait for me")
        expect(page.locator("#status")).to_contain_text("Working…")
        thread_id = page.url.split("#/thread/")[1]
        for _ in range(500):  # the run has begun on the server: a reload no longer takes the message with it
            thread = httpx.get(f"{server.base_url}/v1/threads/{thread_id}")
            if thread.status_code == 200 and thread.json()["active_run"]:
                break
            time.sleep(0.02)
        else:
            raise AssertionError(f"the run of {thread_id} never began")
        page.reload()
        expect(page.locator("#transcript li.user.pending")).to_contain_text("wait for me")
        expect(page.locator("#status")).to_contain_text("Working…")
        expect(page.locator("#chat-title")).to_have_text("wait for me")
        screenshot(page.locator("#chat-view"), "reload-mid-run")
        HOLD.set()
        expect(page.locator("#transcript")).to_contain_text("done: held until released")
        expect(page.locator("#transcript li.user")).to_have_count(1)
        expect(page.locator("#transcript li.user.pending")).to_have_count(0)
        expect(page.locator("#status")).to_have_text("")
    finally:
        HOLD.set()


def test_titles_and_times_read_like_a_chat(server: LiveServer, page: Page) -> None:
    """A thread is titled by its first message in the list and the heading, with a relative time."""
    page.goto(server.base_url)
    say(page, "list")
    expect(page.locator("#transcript")).to_contain_text("notes.txt")
    expect(page.get_by_role("heading", name="list", exact=True)).to_be_visible()
    link = page.locator("#threads a").first
    expect(link).to_contain_text("list")
    expect(link).to_contain_text("just now")
    expect(page.locator("#chat-meta")).to_contain_text("started just now")


def test_a_phone_sized_screen_has_one_column_and_nothing_wider(server: LiveServer, browser: Browser) -> None:
    """At 390 px wide the page fits without sideways scrolling, the card's actions are reachable, and the
    thread list opens from the header."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True)
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(server.base_url)
        say(page, "delete notes")
        card = page.get_by_role("article", name="Approve delete_file?")
        card.get_by_role("button", name="Reject").click()
        for name in ("Approve", "Edit and approve", "Confirm rejection"):
            box = card.get_by_role("button", name=name, exact=True).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (name, box)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        screenshot(page, "phone-approval")
        expect(page.locator("#threads")).to_be_hidden()
        page.get_by_role("button", name="Threads").click()
        expect(page.locator("#threads a")).to_contain_text("delete notes")
        page.get_by_role("link", name="Audit log").click()
        expect(page.locator("#audit-rows tr")).to_have_count(0)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        context.close()


def test_the_api_docs_work_offline(server: LiveServer, page: Page) -> None:
    """`/docs` renders from the server's own files (the browser may reach nothing else) and names each operation."""
    outside: list[str] = []

    def only_the_server(route: Route) -> None:
        if route.request.url.startswith(server.base_url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_server)
    page.goto(f"{server.base_url}/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("sayso")
    expect(page.get_by_text("decide_request").first).to_be_attached()
    assert outside == []


DEMO = Path(__file__).parents[2] / "examples" / "demo.yaml"


def test_concierge_workflow_form_refuses_a_wrong_value_inline_and_runs_to_the_plan(
    serve: ServerFactory, page: Page
) -> None:
    """`make demo`'s config: the concierge workflow's form is built from its schema; a missing city and a wrong
    age (over the maximum, then text the browser cannot read as a number) are shown next to their fields,
    fixed, then the itinerary is reviewed until done and the plan written."""
    server = serve(config=load_config(DEMO))
    page.goto(server.base_url)
    expect(page.get_by_label("Agent for a new chat")).to_contain_text("concierge")
    page.get_by_label("Agent for a new chat").select_option("concierge")
    say(page, "Plan my day")
    card = page.get_by_role("article", name="Preferences")  # titled from the schema, not the function
    expect(card).to_contain_text("This is an interactive concierge")
    expect(card.get_by_label("City *")).to_have_value("")
    expect(card.get_by_label("Pace")).to_have_value('"relaxed"')  # an enum is a select, its default chosen
    card.get_by_label("Hobby").fill("fado")
    card.get_by_label("Age").fill("200")
    card.get_by_role("button", name="Send").click()
    expect(card.locator('.field-error[data-loc="city"]')).to_have_text("field required")
    expect(card.locator('.field-error[data-loc="age"]')).to_have_text("200 is greater than the maximum of 130")
    expect(card.locator('.field-error[data-loc="hobby"]')).to_have_text("")
    screenshot(card, "input-card-refused")
    card.get_by_label("City *").fill("Lisbon")
    card.get_by_label("Age").clear()
    card.get_by_label("Age").press_sequentially("4e")  # the browser cannot read it: not sent as "no age"
    card.get_by_role("button", name="Send").click()
    expect(card.locator('.field-error[data-loc="age"]')).to_have_text("not a number")
    expect(card.locator('.field-error[data-loc="city"]')).to_have_text("")
    card.get_by_label("Age").fill("41")
    screenshot(card, "input-card")
    card.get_by_role("button", name="Send").click()

    review = page.get_by_role("article", name="User feedback")
    details = review.get_by_role("region", name="Details")
    expect(details).to_contain_text("Itinerary")
    expect(details).to_contain_text("An afternoon of fado")
    expect(details).to_contain_text("The best place in Lisbon for fado.")
    review.get_by_label("User response *").fill("add a tram ride")
    screenshot(review, "input-card-payload")
    review.get_by_role("button", name="Send").click()
    again = page.get_by_role("article", name="User feedback")
    expect(again.get_by_role("region", name="Details")).to_contain_text("add a tram ride")
    again.get_by_label("User response *").fill("perfect")
    again.get_by_label("Done").check()
    again.get_by_role("button", name="Send").click()
    transcript = page.locator("#transcript")
    expect(transcript).to_contain_text("Your day in Lisbon")
    # The plan is Markdown: its numbered lines are a list.
    expect(transcript.locator("li.assistant ol > li").nth(1)).to_contain_text("Your request: add a tram ride")

    def answers_in_order() -> None:
        """Each answer is a line of the transcript, in order, above the plan; no receipt is left below it."""
        answers = page.locator("#transcript li.decision")
        expect(answers).to_have_count(3)
        expect(answers.nth(0)).to_contain_text("Answered by you (web UI)")
        expect(answers.nth(0)).to_contain_text("Lisbon")
        expect(answers.nth(2)).to_contain_text("perfect")
        expect(page.locator("#transcript li.assistant").last).to_contain_text("Your day in Lisbon")
        expect(page.locator("#cards article.card")).to_have_count(0)

    answers_in_order()
    page.reload()
    answers_in_order()
    screenshot(page, "concierge-plan")


def sections_card(serve: ServerFactory, page: Page, tmp_path: Path) -> Locator:
    """The `sections` workflow's form (a required section `where`, an optional `extra`), its name and city filled."""
    server = serve(config=Config.model_validate(sections_config(tmp_path)))
    page.goto(server.base_url)
    page.get_by_label("Agent for a new chat").select_option("sections")
    say(page, "go")
    card = page.get_by_role("article", name="Outer")
    card.get_by_label("Name *").fill("x")
    card.get_by_label("City *").fill("Lisbon")  # a required section's fields are there to fill
    return card


def test_an_optional_section_the_person_did_not_add_is_left_out(
    serve: ServerFactory, page: Page, tmp_path: Path
) -> None:
    """`extra: Extra | None = None` is offered behind "Add extra", its fields hidden; sent untouched, the answer leaves
    it out (its unticked checkbox is no answer) and the workflow carries on."""
    card = sections_card(serve, page, tmp_path)
    expect(card.get_by_label("Add extra")).not_to_be_checked()
    expect(card.get_by_label("Flag")).to_be_hidden()
    screenshot(card, "input-card-optional-section")
    card.get_by_role("button", name="Send").click()
    expect(page.locator("#transcript")).to_contain_text("x in Lisbon, no extra")


def test_an_added_optional_section_is_checked_whole_with_errors_by_its_fields(
    serve: ServerFactory, page: Page, tmp_path: Path
) -> None:
    """Once added, the section's required field is required: the refusal is shown next to that field, and the
    filled-in section reaches the workflow."""
    card = sections_card(serve, page, tmp_path)
    card.get_by_label("Add extra").check()
    card.get_by_label("Flag *").check()
    card.get_by_role("button", name="Send").click()
    expect(card.locator('.field-error[data-loc="extra.note"]')).to_have_text("field required")
    card.get_by_label("Note *").fill("hi")
    card.get_by_role("button", name="Send").click()
    expect(page.locator("#transcript")).to_contain_text("x in Lisbon, extra True hi")


def test_a_line_of_a_number_list_that_is_no_number_is_said_so_and_nothing_is_sent(
    serve: ServerFactory, page: Page, tmp_path: Path
) -> None:
    """`rows: list[int]` is a box of one number per line: a line the browser would read as no number (`abc`, sent as
    null) or as another one (`0x10`, sent as 16) is shown by the field as it was typed, and nothing is sent."""
    server = serve(config=Config.model_validate(sections_config(tmp_path)))
    page.goto(server.base_url)
    page.get_by_label("Agent for a new chat").select_option("seats")
    say(page, "go")
    card = page.get_by_role("article", name="Seats")
    card.get_by_label("Rows * (one per line)").fill("3\nabc\n0x10")
    card.get_by_role("button", name="Send").click()
    expect(card.locator('.field-error[data-loc="rows"]')).to_have_text(
        'line 2: "abc" is not a number; line 3: "0x10" is not a number'
    )
    expect(card).to_contain_text("Not sent")
    card.get_by_label("Rows * (one per line)").fill("3\n4")
    card.get_by_role("button", name="Send").click()
    expect(page.locator("#transcript")).to_contain_text("rows [3, 4]")


def test_an_optional_yes_or_no_left_unsaid_is_no_answer_and_said_is_sent(
    serve: ServerFactory, page: Page, tmp_path: Path
) -> None:
    """`urgent: bool | None = None` is not a checkbox, which always reads yes or no: left at "—" it is left out of
    the answer (the workflow reads None), and "no" is sent as false."""
    server = serve(config=Config.model_validate(sections_config(tmp_path)))
    for choice, said in (("—", "urgent None"), ("no", "urgent False")):
        page.goto(server.base_url)
        page.get_by_label("Agent for a new chat").select_option("flagged")
        say(page, "go")
        card = page.get_by_role("article", name="Flagged")
        card.get_by_label("Name *").fill("x")
        card.get_by_label("Urgent").select_option(label=choice)
        card.get_by_role("button", name="Send").click()
        expect(page.locator("#transcript")).to_contain_text(f"x, {said}")
        page.get_by_role("button", name="New chat").click()


def test_a_first_message_refused_then_sent_again_goes_to_the_agent_picked(serve: ServerFactory, page: Page) -> None:
    """A new chat with the concierge workflow whose first message is too large: refused, and the message sent
    next starts the workflow picked (its form), not the entry agent."""
    server = serve(config=load_config(DEMO))
    page.goto(server.base_url)
    page.get_by_label("Agent for a new chat").select_option("concierge")
    say(page, "x" * 100_001)
    expect(page.locator("#status")).to_contain_text("the limit is 100000")
    say(page, "Plan my day")
    expect(page.get_by_role("article", name="Preferences")).to_be_visible()


def test_the_stats_page_charts_the_decisions(server: LiveServer, page: Page) -> None:
    """The stats page shows time to decide and a chart and table of outcomes per tool, rule and approver."""
    page.goto(server.base_url)
    say(page, "delete notes")
    card = page.get_by_role("article", name="Approve delete_file?")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#transcript")).to_contain_text("Deleted notes.txt.")
    say(page, "delete todo")
    expect(page.get_by_role("article", name="Approve delete_file?")).to_be_visible()
    say(page, "list")  # a new message instead of an answer: the request is closed unanswered
    page.get_by_role("button", name="Send anyway").click()
    expect(page.locator("#transcript")).to_contain_text("Files in the sandbox:")
    say(page, "delete todo")  # left open: the table counts it, as `sayso stats` does
    expect(page.get_by_role("article", name="Approve delete_file?")).to_be_visible()
    page.get_by_role("link", name="Stats").click()
    expect(page.locator("#stats-result")).to_contain_text("3 approval request(s); median time to decide")
    chart = page.get_by_role("img", name="Approval requests per tool, by outcome")
    expect(chart.locator("rect[data-outcome=approved]")).to_have_count(1)
    expect(chart.locator("rect[data-outcome=closed]")).to_have_count(1)
    expect(chart.locator("rect[data-outcome=open]")).to_have_count(1)
    tool_table = page.get_by_role("table", name="Per tool")
    # The CLI's columns and numbers: the outcomes, closed and open ones too, add up to the requests.
    expect(tool_table.get_by_role("columnheader")).to_have_text(
        ["", "Requests", "Approved", "Rejected", "Timed out", "Closed unanswered", "Open", "Escalated"]
        + ["p50 to decide", "p90 to decide"]
    )
    expect(tool_table.get_by_role("row", name="delete_file").get_by_role("cell")).to_have_text(
        ["3", "1 (33%)", "0 (0%)", "0 (0%)", "1 (33%)", "1 (33%)", "0 (0%)", re.compile(r"\d+ s"), re.compile(r"\d+ s")]
    )
    expect(page.get_by_role("table", name="Per approver")).to_contain_text("local")
    screenshot(page.locator("#stats-view"), "stats-page")
