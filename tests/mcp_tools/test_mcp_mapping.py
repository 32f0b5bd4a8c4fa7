"""How `/mcp` asks each kind of request as an elicitation, and what each answer decides (pure, the mapping's table)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import mcp_types
import pytest
from pydantic import BaseModel

from sayso import (
    Accept,
    Answer,
    ApprovalRequest,
    Approve,
    Cancel,
    ClientError,
    ClientResult,
    ClientToolRequest,
    Decision,
    Decline,
    ElicitationRequest,
    InputRequest,
    Provide,
    Question,
    QuestionRequest,
    Reject,
    Request,
    Skip,
)
from sayso.exceptions import InvalidDecision
from sayso.protocols.mcp import decision_from, elicitation_for

COMMON: dict[str, Any] = {
    "request_id": "req_1",
    "run_id": "run_1",
    "thread_id": "thr_1",
    "agent_path": "ops",
    "tool_call_id": "call_1",
    "created_at": 0.0,
}

APPROVAL = ApprovalRequest(
    **COMMON, tool_name="drop", args={"table": "t"}, hint="Drops a table.", scopes=("once", "thread")
)
QUESTION = QuestionRequest(
    **COMMON,
    tool_name="ask_user",
    questions=(
        Question(question="Which?", choices=("a", "b")),
        Question(question="Tags?", choices=("x", "y"), multiple=True),
    ),
)
INPUT = InputRequest(
    **COMMON, tool_name="plan", node="plan", message="How many nights?", response_schema={"type": "integer"}
)
FORM_INPUT = InputRequest(
    **COMMON,
    tool_name="plan",
    node="plan",
    message="Where?",
    response_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CLIENT = ClientToolRequest(**COMMON, tool_name="locate")
PAGE = ElicitationRequest(
    **COMMON, tool_name="crm", mode="url", message="Sign in", server="crm", url="https://crm/login"
)
FORM = ElicitationRequest(
    **COMMON,
    tool_name="book",
    mode="form",
    message="How many?",
    server="booking",
    requested_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
)


def accept(**content: Any) -> mcp_types.ElicitResult:
    return mcp_types.ElicitResult(action="accept", content=content)


DECLINE = mcp_types.ElicitResult(action="decline")
CANCEL = mcp_types.ElicitResult(action="cancel")


@dataclass(frozen=True)
class Case:
    id: str
    request: Request
    reply: mcp_types.ElicitResult
    decision: Decision


CASES = [
    Case("approve-scope", APPROVAL, accept(decision="approve", scope="thread"), Approve(scope="thread")),
    Case("reject-reason", APPROVAL, accept(decision="reject", reason="no"), Reject(reason="no")),
    Case("approval-declined", APPROVAL, DECLINE, Reject()),
    Case("approval-cancelled", APPROVAL, CANCEL, Skip(reason="the person dismissed the question in their MCP client")),
    Case("answers", QUESTION, accept(answer_1="b", answer_2=["x", "y"]), Answer(answers=(("b",), ("x", "y")))),
    Case(
        "own-words",
        QUESTION,
        accept(answer_1_own=" c ", answer_2=["y"], answer_2_own="z"),
        Answer(answers=(("c",), ("y", "z"))),
    ),
    Case("question-declined", QUESTION, DECLINE, Skip(reason="the person declined to answer")),
    Case("input-value", INPUT, accept(value=3), Provide(value=3)),
    Case("input-form", FORM_INPUT, accept(city="Lyon"), Provide(value={"city": "Lyon"})),
    Case("client-json", CLIENT, accept(result='{"lat": 1}'), ClientResult(value={"lat": 1})),
    Case("client-text", CLIENT, accept(result="Lyon"), ClientResult(value="Lyon")),
    Case("client-declined", CLIENT, DECLINE, ClientError(message="the person declined to run the tool")),
    Case("form-content", FORM, accept(n=2), Accept(content={"n": 2})),
    Case("page-done", PAGE, accept(), Accept()),
    Case("form-declined", FORM, DECLINE, Decline()),
    Case("form-cancelled", FORM, CANCEL, Cancel()),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_answer_decides_per_the_table(case: Case) -> None:
    """An MCP client's accept / decline / cancel becomes the decision the mapping's table names."""
    assert decision_from(case.request, case.reply) == case.decision


def test_each_request_is_asked_with_a_form_of_its_own() -> None:
    """Approvals, questions, inputs and client tools become forms; a server's form or page passes through."""
    approval = elicitation_for(APPROVAL)
    assert isinstance(approval, mcp_types.ElicitRequestFormParams)
    assert approval.message == 'ops wants to run drop with {"table": "t"}. Drops a table.'
    assert approval.requested_schema["properties"]["scope"]["enum"] == ["once", "thread"]
    question = elicitation_for(QUESTION)
    assert isinstance(question, mcp_types.ElicitRequestFormParams)
    assert question.requested_schema["properties"]["answer_2"]["items"]["enum"] == ["x", "y"]
    assert question.requested_schema["properties"]["answer_1"]["enum"] == ["a", "b"]
    assert question.requested_schema["properties"]["answer_1_own"]["type"] == "string"
    assert question.requested_schema["properties"]["answer_2_own"]["type"] == "string"
    assert question.requested_schema["required"] == []  # a pick or one's own words: checked on the answer
    value = elicitation_for(INPUT)
    assert isinstance(value, mcp_types.ElicitRequestFormParams)
    assert value.requested_schema["properties"]["value"] == {"type": "integer"}
    form_input = elicitation_for(FORM_INPUT)
    assert isinstance(form_input, mcp_types.ElicitRequestFormParams)
    assert form_input.requested_schema == FORM_INPUT.response_schema
    page = elicitation_for(PAGE, problem="try again")
    assert isinstance(page, mcp_types.ElicitRequestURLParams)
    assert (page.url, page.elicitation_id, page.message) == (
        "https://crm/login",
        "req_1",
        "Not accepted: try again. Sign in",
    )
    form = elicitation_for(FORM)
    assert isinstance(form, mcp_types.ElicitRequestFormParams)
    assert form.requested_schema == FORM.requested_schema
    client = elicitation_for(CLIENT)
    assert isinstance(client, mcp_types.ElicitRequestFormParams)
    assert client.requested_schema["required"] == ["result"]


@pytest.mark.parametrize(
    ("request_", "reply", "problem"),
    [
        pytest.param(APPROVAL, accept(decision="APPROVE!"), "decision: 'APPROVE!' is not one of", id="approval-choice"),
        pytest.param(APPROVAL, accept(reason="no"), "decision", id="approval-no-decision"),
        pytest.param(APPROVAL, accept(decision="approve", scope="always"), "scope: 'always'", id="scope-not-offered"),
        pytest.param(
            ApprovalRequest(**COMMON, tool_name="drop", args={}, hint="h"),
            accept(decision="approve", scope="always"),
            "scope 'always' was not offered",
            id="scope-not-asked",
        ),
        pytest.param(QUESTION, accept(answer_1="c", answer_2=["x"]), "answer_1: 'c' is not one of", id="not-a-choice"),
        pytest.param(QUESTION, accept(answer_2=["x"]), "question 'Which?' needs an answer", id="unanswered"),
        pytest.param(
            QUESTION, accept(answer_1="a", answer_1_own="c", answer_2=["x"]), "takes one answer", id="two-for-one"
        ),
        pytest.param(CLIENT, accept(), "result", id="client-no-result"),
    ],
)
def test_an_answer_that_does_not_fit_the_form_sent_is_refused(
    request_: Request, reply: mcp_types.ElicitResult, problem: str
) -> None:
    """An accepted answer is checked against the form that was sent; what breaks it decides nothing."""
    with pytest.raises(InvalidDecision) as refused:
        decision_from(request_, reply)
    assert problem in refused.value.problem and refused.value.request_id == "req_1"


class Pace(enum.StrEnum):
    slow = "slow"
    fast = "fast"


class Stop(BaseModel):
    city: str
    pace: Pace = Pace.slow


class Trip(BaseModel):
    name: str
    tags: list[str] = []
    stops: list[Stop] = []
    first: Stop | None = None


TRIP_INPUT = InputRequest(
    **COMMON, tool_name="plan", node="plan", message="Your trip?", response_schema=Trip.model_json_schema()
)


def test_an_input_of_lists_and_sections_is_asked_with_primitive_fields_and_json_text_for_the_rest() -> None:
    """A pick from an enum stays a pick (its `$ref` followed); a list of text or of models, which MCP's forms cannot
    hold, is text written as JSON; a section's fields are optional under its title, without defaults filled in."""
    form = elicitation_for(TRIP_INPUT)
    assert isinstance(form, mcp_types.ElicitRequestFormParams)
    fields = form.requested_schema["properties"]
    assert list(fields) == ["name", "tags", "stops", "first.city", "first.pace"]
    assert fields["tags"]["type"] == fields["stops"]["type"] == "string"
    assert fields["tags"]["title"] == "Tags (JSON)" and "Written as JSON: a list" in fields["stops"]["description"]
    assert fields["first.pace"] == {"enum": ["slow", "fast"], "title": "Stop: Pace", "type": "string"}
    assert form.requested_schema["required"] == ["name"]


def test_an_answer_to_a_flat_form_is_rebuilt_into_the_inputs_shape() -> None:
    """JSON text is read as JSON; a section given any field is rebuilt; text that is no JSON stays text for the
    runtime's check of the whole answer to name."""
    reply = accept(**{"name": "x", "tags": '["a", "b"]', "first.city": "Porto", "stops": "Lisbon"})
    assert decision_from(TRIP_INPUT, reply) == Provide(
        value={"name": "x", "tags": ["a", "b"], "stops": "Lisbon", "first": {"city": "Porto"}}
    )
    assert decision_from(TRIP_INPUT, accept(name="x")) == Provide(value={"name": "x"})
