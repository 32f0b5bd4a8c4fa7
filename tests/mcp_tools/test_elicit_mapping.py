"""MCP elicitation ↔ sayso `elicitation` requests and decisions, and the checks on a person's answer (pure)."""

from __future__ import annotations

import pickle
from dataclasses import asdict, replace
from typing import Any

import mcp_types
import pytest
from mcp import MCPError, UrlElicitationRequiredError
from pydantic_ai.exceptions import ModelRetry

from sayso import Accept, Approve, Cancel, Decline, ElicitationRequest, InvalidDecision, Skip, request_json
from sayso._core.decisions import DECISION_ADAPTER, check_decision
from sayso._core.model_text import model_text
from sayso._core.requests import REQUEST_ADAPTER
from sayso._engine.calls import ElicitationDeferral, deferral_of
from sayso._engine.mcp.elicit import Elicitation, from_params, matches, to_elicit_result, url_required

PARTY = {
    "type": "object",
    "properties": {
        "people": {"type": "integer", "minimum": 1, "maximum": 12},
        "name": {"type": "string"},
        "email": {"type": "string", "format": "email"},
    },
    "required": ["people", "name"],
}


def form_request(**changes: Any) -> ElicitationRequest:
    asked = from_params(
        mcp_types.ElicitRequestFormParams(message="How many people?", requested_schema=PARTY), server="booking"
    )
    request = ElicitationRequest(
        request_id="req_1",
        run_id="run_1",
        thread_id="thr_1",
        agent_path="host",
        tool_call_id="call_1",
        tool_name="book_table",
        args={"day": "fri"},
        created_at=0.0,
        **asdict(asked),
    )
    return replace(request, **changes)


def url_request() -> ElicitationRequest:
    asked = from_params(
        mcp_types.ElicitRequestURLParams(message="Sign in", url="https://crm.example/login", elicitation_id="e-1"),
        server="crm",
    )
    return replace(form_request(), **asdict(asked))


def test_a_form_and_a_url_become_the_mcp_half_of_a_request() -> None:
    """Form params keep message and schema; URL params keep message, URL and the server's elicitation id."""
    assert form_request().mode == "form"
    assert form_request().requested_schema == PARTY
    url = url_request()
    assert (url.mode, url.message, url.url, url.elicitation_id, url.server) == (
        "url",
        "Sign in",
        "https://crm.example/login",
        "e-1",
        "crm",
    )
    assert url.requested_schema is None


def test_an_elicitation_travels_in_deferred_metadata_and_requests_persist() -> None:
    """A deferral carries the elicitation to the engine unchanged, and a stored elicitation request loads back equal."""
    asked = Elicitation(server="s", mode="form", message="m", requested_schema=PARTY)
    assert deferral_of(ElicitationDeferral(elicitation=asked).as_metadata()) == ElicitationDeferral(elicitation=asked)
    request = form_request()
    assert REQUEST_ADAPTER.validate_json(REQUEST_ADAPTER.dump_json(request)) == request
    assert request_json(request)["kind"] == "elicitation"


def test_the_url_elicitation_required_error_names_the_pages_to_visit() -> None:
    """-32042, bare or as the cause of pydantic-ai's `ModelRetry`, maps to URL elicitations; other errors do not."""
    pages = [
        mcp_types.ElicitRequestURLParams(message="Sign in first", url="https://crm.example/login", elicitation_id="x")
    ]
    error = UrlElicitationRequiredError(pages)
    # The client sees the wire error, not the server's exception class.
    wire = MCPError.from_error_data(error.error)
    try:
        raise ModelRetry("URL elicitation required") from wire
    except ModelRetry as retry:
        found = url_required(retry, server="crm")
    assert found == [
        Elicitation(
            server="crm",
            mode="url",
            message="Sign in first",
            url="https://crm.example/login",
            elicitation_id="x",
            delivery="retry",
        )
    ]
    assert url_required(MCPError(code=-32602, message="bad params"), server="crm") is None
    assert url_required(ModelRetry("plain tool error"), server="crm") is None


@pytest.mark.parametrize(
    ("decision", "action", "content"),
    [
        pytest.param(Accept(content={"people": 2, "name": "Ada"}), "accept", {"people": 2, "name": "Ada"}, id="accept"),
        pytest.param(Decline(), "decline", None, id="decline"),
        pytest.param(Cancel(), "cancel", None, id="cancel"),
        pytest.param(Skip(reason="forced"), "cancel", None, id="skipped-is-cancel"),
    ],
)
def test_a_decision_becomes_the_servers_elicit_result(decision: Any, action: str, content: Any) -> None:
    """Accept carries the content, decline stays decline, and cancel or a closed request is cancel."""
    result = to_elicit_result(form_request(), decision)
    assert (result.action, result.content) == (action, content)


def test_a_visited_url_is_accepted_without_content() -> None:
    """URL mode's "done" is accept with no content."""
    result = to_elicit_result(url_request(), Accept())
    assert (result.action, result.content) == ("accept", None)


def test_content_that_breaks_the_schema_is_refused_field_by_field() -> None:
    """Missing, mistyped, out-of-range, badly formatted and unknown fields are each named; the pause stays open."""
    request = form_request(requested_schema={**PARTY, "additionalProperties": False})
    content = {"people": 40, "email": "not-an-email", "colour": "red"}
    with pytest.raises(InvalidDecision) as refused:
        check_decision(request, Accept(content=content), existing=None, now=1.0)
    assert refused.value.fields == {
        "name": "is required",
        "people": "40 is greater than the maximum of 12",
        "email": "'not-an-email' is not a 'email'",
        "colour": "is not a field of this form",
    }
    assert refused.value.request_id == "req_1"
    assert "name: is required" in str(refused.value)
    with pytest.raises(InvalidDecision) as mistyped:
        check_decision(request, Accept(content={"people": "two", "name": "Ada"}), existing=None, now=1.0)
    assert mistyped.value.fields == {"people": "'two' is not of type 'integer'"}
    # The field-level detail survives crossing a process boundary.
    assert pickle.loads(pickle.dumps(refused.value)).fields == refused.value.fields


OPEN_FORM = {"type": "object", "properties": {"note": {}, "tags": {"type": "array"}}}
"""A form whose schema leaves its values' types open: only what MCP can carry back may be taken."""


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("text", id="string"),
        pytest.param(3, id="int"),
        pytest.param(2.5, id="float"),
        pytest.param(True, id="bool"),
        pytest.param(None, id="null"),
        pytest.param(["a", "b"], id="strings"),
        pytest.param({"a": 1}, id="object"),
        pytest.param([1, 2], id="numbers"),
        pytest.param([{"a": 1}], id="objects"),
    ],
)
def test_content_is_taken_exactly_when_the_mcp_client_can_deliver_it(value: Any) -> None:
    """What the check takes is what MCP's own `ElicitResult` accepts, so nothing taken fails on delivery."""
    request = form_request(requested_schema=OPEN_FORM)
    try:
        mcp_types.ElicitResult(action="accept", content={"note": value})
        deliverable = True
    except ValueError:
        deliverable = False
    taken = True
    try:
        check_decision(request, Accept(content={"note": value}), existing=None, now=1.0)
    except InvalidDecision as refused:
        taken = False
        assert refused.fields == {"note": "must be a string, number, boolean, list of strings or null (a form is flat)"}
    assert taken == deliverable


def test_a_field_the_form_does_not_have_is_refused_even_when_the_schema_leaves_it_open() -> None:
    """MCP forms are flat and closed: an extra field would reach a server that never asked for it."""
    with pytest.raises(InvalidDecision) as refused:
        check_decision(
            form_request(), Accept(content={"people": 2, "name": "Ada", "x": {"a": 1}}), existing=None, now=1
        )
    assert refused.value.fields == {"x": "is not a field of this form"}


def test_valid_content_and_plain_decline_or_cancel_are_recorded() -> None:
    """Content that fits is accepted as is; decline and cancel need nothing more."""
    accept = Accept(content={"people": 2, "name": "Ada", "email": "ada@example.org"})
    assert check_decision(form_request(), accept, existing=None, now=1.0) == accept
    assert check_decision(form_request(), Decline(), existing=None, now=1.0) == Decline()
    assert check_decision(url_request(), Cancel(), existing=None, now=1.0) == Cancel()
    assert DECISION_ADAPTER.validate_python({"kind": "accept", "content": {"a": 1}}) == Accept(content={"a": 1})


def test_an_elicitation_takes_only_accept_decline_or_cancel() -> None:
    """An approval's answers do not fit an elicitation; a URL is accepted without content."""
    with pytest.raises(InvalidDecision, match="takes accept, decline, cancel, not 'approve'"):
        check_decision(form_request(), Approve(), existing=None, now=1.0)
    with pytest.raises(InvalidDecision, match="accepted without content"):
        check_decision(url_request(), Accept(content={"x": 1}), existing=None, now=1.0)


def test_what_the_model_reads_when_the_answer_cannot_reach_the_server() -> None:
    """Decline and cancel have words for the model; an accepted answer goes to the server instead."""
    assert model_text(Accept(content={})) is None
    assert model_text(Decline()) == "Declined: the person declined what the server asked for."
    cancelled = model_text(Cancel())
    assert cancelled is not None and cancelled.startswith("Cancelled:")


def test_a_stored_answer_matches_only_the_same_question() -> None:
    """Replaying an answer needs the same server, mode, message, schema (key order aside) and URL."""
    request = form_request()
    same = Elicitation(
        server="booking", mode="form", message="How many people?", requested_schema=dict(reversed(PARTY.items()))
    )
    assert matches(request, same)
    assert not matches(request, replace(same, message="How many guests?"))
    assert not matches(request, replace(same, requested_schema={"type": "object", "properties": {}}))
    assert not matches(request, replace(same, server="other"))
