"""Values pass through the web UI as they are, in Debian's Chromium: an integer too large for a JavaScript number
(an account or reference number) is shown and sent back digit for digit, a form starts from its schema's defaults,
and a list of numbers says which line is not a number."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from playwright.sync_api import Browser, Page, expect
from pydantic import BaseModel

from sayso import Config
from sayso.workflows import RequestInput

from ..models import tool_model
from ..tools import ran
from .test_web_ui import CHROMIUM, ServerFactory, browser, say, serve, watched_page

__all__ = ["browser", "serve"]  # fixtures, shared with the web UI tests

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (scripts/test installs it)"
)

BIG = 9007199254740993
"""2**53 + 1: the smallest integer a JavaScript number rounds (to 9007199254740992)."""


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page that fails its test on a JavaScript error or a Content Security Policy violation."""
    with watched_page(browser, errors=True) as page:
        yield page


def refunds(workdir: Path) -> Config:
    return Config.model_validate(
        {
            "store": f"sqlite:///{workdir / 'sayso.db'}",
            "base_dir": str(workdir),
            "models": {"m": "test"},
            "agents": {"refunds": {"model": "m", "tools": ["tests.tools:refund"], "interrupt": {"tools": ["refund"]}}},
            "entry": "refunds",
        }
    )


def test_a_large_integer_is_shown_and_approved_digit_for_digit(serve: ServerFactory, page: Page, workdir: Path) -> None:
    """The card shows the model's 9007199254740993, not the 9007199254740992 a JavaScript number makes of it; an edit
    of another field runs the call with the amount unchanged, and the transcript lists the one field edited."""
    model = tool_model(lambda said: ("refund", {"amount": BIG, "to": "bob"}), read="model read: {result}")
    server = serve(config=refunds(workdir), models={"m": model})
    page.goto(server.base_url)
    say(page, "refund bob")
    card = page.get_by_role("article", name="Approve refund?")
    expect(card.get_by_label("Arguments", exact=True)).to_contain_text(f'"amount": {BIG}')
    expect(page.locator("#transcript li.tool_call")).to_contain_text(str(BIG))
    card.get_by_role("button", name="Edit and approve").click()
    editor = card.get_by_label("Arguments (JSON)")
    editor.fill(editor.input_value().replace('"bob"', '"carol"'))
    expect(card.locator(".preview li")).to_have_count(1)
    card.get_by_role("button", name="Approve with these arguments").click()
    expect(page.locator("#transcript")).to_contain_text(f"model read: refunded {BIG} to carol")
    assert ran("refund") == [{"amount": BIG, "to": "carol"}]
    edits = page.locator("#transcript ul.edits li")
    expect(edits).to_have_count(1)
    expect(edits).to_contain_text("to bob → carol")


class Order(BaseModel):
    customer: str
    channels: list[Literal["email", "sms", "post"]] = ["email"]
    tags: list[str] = ["new"]
    counts: list[int] = []
    lines: list[dict[str, Any]] = [{"sku": "a1"}]


def order(node_input: str) -> Generator[RequestInput, Any, str]:
    value = Order.model_validate((yield RequestInput("Place the order", response_schema=Order)))
    return f"ORDER {value.model_dump_json()}"


def workflow(workdir: Path, node: str) -> Config:
    """A config whose entry is a workflow of the one `node` (a function of this module)."""
    return Config.model_validate(
        {
            "store": f"sqlite:///{workdir / 'sayso.db'}",
            "base_dir": str(workdir),
            "models": {"m": "test"},
            "agents": {"idle": {"model": "m"}},
            "workflows": {"flow": {"nodes": {node: f"{__name__}:{node}"}, "edges": [["START", node]]}},
            "entry": "flow",
        }
    )


def test_a_form_starts_from_its_defaults(serve: ServerFactory, page: Page, workdir: Path) -> None:
    """Lists show their defaults (the channel ticked, the tag and the line written), so a form sent as it stands
    gives the workflow those defaults, not empty lists nobody chose."""
    server = serve(config=workflow(workdir, "order"))
    page.goto(server.base_url)
    say(page, "hello")
    card = page.get_by_role("article", name="Order")
    expect(card.get_by_label("email")).to_be_checked()
    expect(card.get_by_label("sms")).not_to_be_checked()
    expect(card.get_by_label("Tags (one per line)")).to_have_value("new")
    card.get_by_label("Customer *").fill("Ann")
    card.get_by_role("button", name="Send").click()
    expect(page.locator("#transcript")).to_contain_text(
        'ORDER {"customer":"Ann","channels":["email"],"tags":["new"],"counts":[],"lines":[{"sku":"a1"}]}'
    )


def test_a_line_of_a_number_list_that_is_no_number_is_named(serve: ServerFactory, page: Page, workdir: Path) -> None:
    """`abc` in a list of integers is refused at the field as what it is, not as the `null` it would be sent as;
    once corrected the form goes."""
    server = serve(config=workflow(workdir, "order"))
    page.goto(server.base_url)
    say(page, "hello")
    card = page.get_by_role("article", name="Order")
    card.get_by_label("Customer *").fill("Ann")
    counts = card.get_by_label("Counts (one per line)")
    counts.fill("1\nabc\n3")
    card.get_by_role("button", name="Send").click()
    expect(card.locator('.field-error[data-loc="counts"]')).to_have_text('line 2: "abc" is not a number')
    expect(counts).to_have_attribute("aria-invalid", "true")
    counts.fill("1\n2\n3")
    card.get_by_role("button", name="Send").click()
    expect(page.locator("#transcript")).to_contain_text('"counts":[1,2,3]')


TITLED = {
    "type": "object",
    "title": "Plan choice",
    "properties": {
        "plan": {"type": "string", "oneOf": [{"const": "p1", "title": "Basic plan"}, {"const": "p2", "title": "Pro"}]},
        "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]},
        "extras": {
            "type": "array",
            "items": {"anyOf": [{"const": "x", "title": "Extra seat"}, {"const": "y", "title": "Extra room"}]},
        },
    },
    "required": ["plan"],
}
"""Choices with titles as MCP's elicitation forms write them: `oneOf` of `const`s, `enumNames`, `anyOf` items."""


def pick(node_input: str) -> Generator[RequestInput, Any, str]:
    return f"PICKED {(yield RequestInput('Pick a plan', response_schema=TITLED))}"


def test_titled_choices_are_picked_by_their_titles(serve: ServerFactory, page: Page, workdir: Path) -> None:
    """A choice written with titles is a select (or ticks) showing the titles, and sends the values behind them."""
    server = serve(config=workflow(workdir, "pick"))
    page.goto(server.base_url)
    say(page, "hello")
    card = page.get_by_role("article", name="Plan choice")
    card.get_by_label("Plan *").select_option(label="Pro")
    card.get_by_label("Legacy").select_option(label="Beta")
    card.get_by_label("Extra room").check()
    card.get_by_role("button", name="Send").click()
    expect(page.locator("#transcript")).to_contain_text("PICKED {'plan': 'p2', 'legacy': 'b', 'extras': ['y']}")


def test_a_very_long_argument_keeps_the_buttons_in_reach(serve: ServerFactory, page: Page, workdir: Path) -> None:
    """A call with pages of arguments shows them in a box that scrolls (by keyboard too), so the card, with its
    buttons, fits the window instead of running thousands of pixels down; the whole value is still there."""
    note = "word " * 4000
    model = tool_model(lambda said: ("refund", {"amount": 1, "to": note}), read="model read: {result}")
    server = serve(config=refunds(workdir), models={"m": model})
    page.goto(server.base_url)
    say(page, "refund")
    card = page.get_by_role("article", name="Approve refund?")
    arguments = card.get_by_role("region", name="Arguments")
    expect(arguments).to_contain_text('"to": "word word')
    assert note.strip() in arguments.inner_text()
    expect(arguments).to_have_attribute("tabindex", "0")
    card_box, call_box = card.bounding_box(), page.locator("#transcript li.tool_call").bounding_box()
    assert card_box is not None and call_box is not None
    assert card_box["height"] < 800 and call_box["height"] < 800, (card_box, call_box)
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#transcript")).to_contain_text("model read: refunded 1")


def test_a_titled_choice_answer_reads_as_the_title_picked(serve: ServerFactory, page: Page, workdir: Path) -> None:
    """The person picked "Pro", "Beta" and "Extra room": the inbox's receipt and the transcript's line say so, not the
    values `p2`, `b` and `y` behind them (which follow, muted); a reload still reads the titles."""
    server = serve(config=workflow(workdir, "pick"))
    page.goto(server.base_url)
    say(page, "hello")
    expect(page.get_by_role("article", name="Plan choice")).to_be_visible()
    page.get_by_role("link", name="Inbox").click()
    card = page.locator("#inbox-cards").get_by_role("article", name="Plan choice")
    card.get_by_label("Plan *").select_option(label="Pro")
    card.get_by_label("Legacy").select_option(label="Beta")
    card.get_by_label("Extra room").check()
    card.get_by_role("button", name="Send").click()
    receipt = page.locator("#inbox-cards").get_by_role("article", name="Answered by you (web UI)")
    answer = receipt.get_by_label("Answer")
    for title in ("Pro", "Beta", "Extra room"):
        expect(answer).to_contain_text(title)
    expect(answer.locator(".muted").first).to_contain_text("p2")
    page.go_back()
    line = page.locator("#transcript li.decision")
    for _ in range(2):
        for title in ("Pro", "Beta", "Extra room"):
            expect(line).to_contain_text(title)
        page.reload()
