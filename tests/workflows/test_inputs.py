"""Response schemas of `RequestInput`, and the `input` request kind with its `Provide` decision."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

import pytest
from pydantic import AnyUrl, BaseModel, Field, field_validator

from sayso import (
    AlreadyDecided,
    Approve,
    ConfigError,
    DecisionRecord,
    InputRequest,
    InvalidDecision,
    Provide,
    Sayso,
    SchemaMismatch,
    Skip,
    load_config,
)
from sayso._core.decisions import DECISION_ADAPTER, check_decision
from sayso._core.model_text import model_text
from sayso._core.requests import REQUEST_ADAPTER
from sayso.workflows import input_schema, validate_input

from .one_node import one_node_workflow


class Trip(BaseModel):
    city: str
    days: int = Field(default=1, ge=1)
    pace: Literal["slow", "fast"] = "slow"


class Traveller(BaseModel):
    name: str
    trip: Trip


class Shouty(BaseModel):
    word: str

    @field_validator("word")
    @classmethod
    def _upper(cls, word: str) -> str:
        if word != word.upper():
            raise ValueError("must be upper case")
        return word


TRIP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"],
}


@dataclass(frozen=True)
class Case:
    id: str
    schema: Any
    value: Any
    expected: Any


VALID = [
    Case("str", str, "Lisbon", "Lisbon"),
    Case("int-from-text", int, "5", 5),
    Case("list-of-str", list[str], ["a", "b"], ["a", "b"]),
    Case("model", Trip, {"city": "Porto", "days": 2}, Trip(city="Porto", days=2)),
    Case("json-schema", TRIP_SCHEMA, {"city": "Faro"}, {"city": "Faro"}),
    Case("no-schema", None, {"anything": [1, 2]}, {"anything": [1, 2]}),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in VALID])
def test_a_fitting_answer_comes_back_validated(case: Case) -> None:
    """A fitting answer is returned in the schema's own form: a model instance where a model was given."""
    got = validate_input(case.schema, case.value)
    assert got == case.expected
    assert type(got) is type(case.expected)


INVALID = [
    Case("str-gets-number", str, 5, ("input should be a valid string",)),
    Case(
        "model-missing-and-wrong",
        Trip,
        {"days": 0, "pace": "medium"},
        (
            "city: field required",
            "days: input should be greater than or equal to 1",
            "pace: input should be 'slow' or 'fast'",
        ),
    ),
    Case(
        "nested-model",
        Traveller,
        {"name": "Ana", "trip": {"days": "x"}},
        (
            "trip.city: field required",
            "trip.days: input should be a valid integer, unable to parse string as an integer",
        ),
    ),
    Case(
        "list-item", list[int], [1, "x"], ("1: input should be a valid integer, unable to parse string as an integer",)
    ),
    Case(
        "json-schema",
        TRIP_SCHEMA,
        {"days": 0},
        ("city: field required", "days: 0 is less than the minimum of 1"),
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in INVALID])
def test_a_wrong_answer_names_every_field_and_why(case: Case) -> None:
    """Every problem of a wrong answer is reported, each naming the field path and why."""
    with pytest.raises(SchemaMismatch) as refused:
        validate_input(case.schema, case.value)
    assert refused.value.problems == case.expected
    assert str(refused.value) == "; ".join(case.expected)


def test_the_json_schema_shown_is_the_one_of_the_type() -> None:
    """A model's schema is shown as JSON Schema with its required fields, and checks answers the same way."""
    schema = input_schema(Trip).json_schema
    assert schema["required"] == ["city"]
    assert schema["properties"]["pace"]["enum"] == ["slow", "fast"]
    assert input_schema(str).json_schema == {"type": "string"}
    assert input_schema(None).json_schema == {}


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        pytest.param({"type": 5}, "not a valid JSON Schema", id="bad-json-schema"),
        pytest.param(object(), "is not a type, a pydantic model or a JSON Schema dict", id="not-a-type"),
    ],
)
def test_an_unusable_schema_is_a_config_error(spec: Any, problem: str) -> None:
    """A response schema that is neither a type nor a valid JSON Schema is the developer's error."""
    with pytest.raises(ConfigError, match=problem):
        input_schema(spec)


def test_invalid_input_survives_pickling() -> None:
    """The error crosses process boundaries with its problems intact."""
    error = SchemaMismatch(("city: field required",))
    assert pickle.loads(pickle.dumps(error)).problems == ("city: field required",)


def input_request(schema: Any = Trip) -> InputRequest:
    return InputRequest(
        request_id="req_in",
        run_id="run_1",
        thread_id="thr_1",
        agent_path="concierge",
        tool_call_id="ask:1:1",
        tool_name="ask",
        created_at=100.0,
        node="ask",
        message="Where to?",
        payload={"hint": "a city"},
        response_schema=input_schema(schema).json_schema,
    )


def test_a_wrong_answer_to_an_input_request_is_refused_naming_the_field() -> None:
    """`Provide` with a value that breaks the request's schema is refused; the message names the field."""
    with pytest.raises(InvalidDecision) as refused:
        check_decision(input_request(), Provide(value={"days": 2}), existing=None, now=101)
    assert refused.value.request_id == "req_in"
    assert refused.value.problem == "city: field required"


def test_a_fitting_answer_to_an_input_request_is_recorded() -> None:
    """A fitting value is the decision to record, and the model reads no refusal text for it."""
    decision = Provide(value={"city": "Lisbon"})
    assert check_decision(input_request(), decision, existing=None, now=101) == decision
    assert model_text(decision) is None


def test_an_input_request_takes_only_provide_or_skip() -> None:
    """An input request may be skipped, but not answered like a question or an approval."""
    assert check_decision(input_request(), Skip(), existing=None, now=101) == Skip()
    with pytest.raises(InvalidDecision, match="takes provide, skip, not 'approve'"):
        check_decision(input_request(), Approve(), existing=None, now=101)


def test_repeating_the_same_answer_is_a_no_op_and_a_different_one_is_refused() -> None:
    """The first answer wins: the same again changes nothing, another is refused."""
    first = DecisionRecord(
        request_id="req_in", decision=Provide(value={"city": "Lisbon"}), by="person", principal=None, decided_at=101
    )
    assert check_decision(input_request(), Provide(value={"city": "Lisbon"}), existing=first, now=102) is None
    with pytest.raises(AlreadyDecided, match="first decision wins"):
        check_decision(input_request(), Provide(value={"city": "Porto"}), existing=first, now=102)


def test_input_requests_and_provide_decisions_round_trip_through_the_store_adapters() -> None:
    """An input request and its decision load back exactly as they were stored."""
    request = input_request()
    assert REQUEST_ADAPTER.validate_json(REQUEST_ADAPTER.dump_json(request)) == request
    decision = Provide(value={"city": "Lisbon"})
    assert DECISION_ADAPTER.validate_json(DECISION_ADAPTER.dump_json(decision)) == decision


def test_a_model_validator_is_applied_to_the_answer() -> None:
    """Validators on a pydantic model run too, beyond what its JSON Schema can say."""
    with pytest.raises(SchemaMismatch, match="word: value error, must be upper case"):
        validate_input(Shouty, {"word": "quiet"})


class Meeting(BaseModel):
    at: datetime
    day: date
    link: AnyUrl | None = None
    ref: UUID | None = None


AT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}}
MEETING = {"at": "2024-05-01T10:00:00Z", "day": "2024-05-01"}


FORMATS = [
    Case("no-zone-taken", Meeting, {**MEETING, "at": "2024-05-01T10:00"}, {}),
    Case("url-and-uuid-taken", Meeting, {**MEETING, "link": "https://example.org/a", "ref": str(UUID(int=7))}, {}),
    Case(
        "words-for-a-datetime",
        Meeting,
        {**MEETING, "at": "next tuesday"},
        {"at": "input should be a valid datetime or date, invalid character in year"},
    ),
    Case(
        "a-day-that-is-not",
        Meeting,
        {**MEETING, "day": "2024-02-30"},
        {"day": "input should be a valid date or datetime, day value is outside expected range"},
    ),
    Case(
        "relative-url-and-short-uuid",
        Meeting,
        {**MEETING, "link": "not a url", "ref": "abc"},
        {
            "link": "input should be a valid URL, relative URL without a base",
            "ref": "input should be a valid UUID, invalid length: found 3",
        },
    ),
    Case(
        "json-schema-format",
        AT_SCHEMA,
        {"at": "soon"},
        {"at": "input should be a valid datetime or date, input is too short"},
    ),
    Case("json-schema-format-taken", AT_SCHEMA, {"at": "2024-05-01 10:00"}, {}),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in FORMATS])
def test_a_formatted_answer_is_refused_when_decided_exactly_when_the_node_would_refuse_it(case: Case) -> None:
    """`date-time`, `date`, `uri`, `uuid`: what the node's own validation refuses is refused before it is recorded,
    naming each field as pydantic does, and what it takes is taken."""
    decision = Provide(value=case.value)
    if not case.expected:
        assert check_decision(input_request(case.schema), decision, existing=None, now=101) == decision
        validate_input(case.schema, case.value)
        return
    with pytest.raises(InvalidDecision) as refused:
        check_decision(input_request(case.schema), decision, existing=None, now=101)
    assert refused.value.fields == case.expected
    with pytest.raises(SchemaMismatch) as at_the_node:
        validate_input(case.schema, case.value)
    assert at_the_node.value.problems == tuple(f"{field}: {why}" for field, why in case.expected.items())


class Address(BaseModel):
    zip: str = Field(pattern=r"^\d{5}$")


class Extra(BaseModel):
    note: str


class Letter(BaseModel):
    to: str
    address: Address | None = None
    extra: Extra | None = None
    count: int | None = None


def test_a_wrong_optional_nested_field_is_named_by_its_whole_path() -> None:
    """Inside `X | None` the problem is said at the field's own path, as pydantic says it (the form and REST's
    `errors[].loc` show it beside that field), not at the optional object's."""
    value = {"to": "Ana", "address": {"zip": "1234"}, "extra": {}}
    with pytest.raises(InvalidDecision) as refused:
        check_decision(input_request(Letter), Provide(value=value), existing=None, now=101)
    assert refused.value.fields == {
        "address.zip": "'1234' does not match '^\\\\d{5}$'",
        "extra.note": "field required",
    }
    assert refused.value.problem == "address.zip: '1234' does not match '^\\\\d{5}$'; extra.note: field required"


def test_a_null_is_called_null() -> None:
    """A JSON null is said as `null`, never as Python's `None` (nor `none`)."""
    with pytest.raises(InvalidDecision) as refused:
        check_decision(input_request(int), Provide(value=None), existing=None, now=101)
    assert refused.value.problem == "null is not of type 'integer'"
    with pytest.raises(InvalidDecision) as refused:
        check_decision(input_request(Letter), Provide(value={"to": None}), existing=None, now=101)
    assert refused.value.problem == "to: null is not of type 'string'"


COUNT_NODES = """
from sayso.workflows import RequestInput


def ask():
    schema = {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "sizes": {"type": "array", "items": {"$ref": "#/$defs/n"}},
            "unit": {"type": "string", "default": "sheep"},
        },
        "required": ["count"],
        "$defs": {"n": {"type": ["integer", "null"]}},
    }
    got = yield RequestInput("How many?", response_schema=schema)
    return ",".join(str(i) for i in range(got["count"])) + f" sizes={got.get('sizes')} {got['unit']}"
"""


async def test_a_json_schema_answer_reaches_the_node_as_its_schema_promises(tmp_path: Path) -> None:
    """JSON Schema counts 3.0 as an integer, and a client serialising floats sends it so: the node that was promised
    an integer gets 3 (as a pydantic type gives it), not a float its `range` fails on, in lists and `$ref`s too; and
    a field left out that the schema gives a default arrives with it, as a form would have filled it in."""
    async with Sayso(load_config(one_node_workflow(tmp_path, "count", COUNT_NODES))) as app:
        paused = await app.run("go")
        done = await app.decide(paused.requests[0].request_id, Provide(value={"count": 3.0, "sizes": [2.0, None]}))
    assert (done.run.status, done.run.output) == ("completed", "0,1,2 sizes=[2, None] sheep")
