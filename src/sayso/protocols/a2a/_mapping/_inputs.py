"""A workflow's `input` request over A2A, client -> agent: the answer a message gives.

The pause shows it as kagent's `ask_user_request` (`_views.input_questions`), with the payload and
JSON Schema under `SAYSO_KEY`. The answer comes back as kagent's `ask_user_response` (v1) or
`ask_user_answers` (0.x), one answer per question, read by each field's type; or as a DataPart
holding the value, or as text (as is for a string schema, else read as JSON). The runtime then
checks the value against the schema and names every field still wrong.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.types import Message
from google.protobuf.json_format import MessageToDict
from pydantic.json_schema import JsonSchemaValue

from ...._core.decisions import Decision, Provide, Skip
from ...._core.requests import InputRequest
from ._elicitations import answer_lists
from ._legacy import legacy_input, legacy_reason
from ._messages import data_parts, message_text, sayso_extras, v1_payload, whole_numbers
from ._v1 import sayso_edits
from ._views import (
    PauseView,
    ShownRequest,
    field_choices,
    field_type,
    input_fields,
    input_questions,
    refused,
)


def decision_from_input(view: PauseView, message: Message, *, legacy: bool) -> list[tuple[ShownRequest, Decision]]:
    """The answer a message gives to a shown `input` request: kagent's answers, its DataPart, or its text.

    A v1 `ask_user_response` (or, with `legacy`, a 0.x `decision_type` DataPart) answers the
    questions the input was shown as. Otherwise text is the answer as is where the schema asks for
    a string, and is read as JSON elsewhere (text that is not JSON is passed on, for the schema
    check to say what is wrong with it).

    Raises:
        InvalidInput: the answer does not fit the questions, the message holds neither a
            DataPart nor text, holds several DataParts (which one is meant is not known), or carries edits under
            sayso's key (`field` is `HITL_RESPONSE`).
    """
    (request,) = view.requests
    assert isinstance(request, InputRequest)
    sayso_edits(view, sayso_extras(message))  # refuses edits (an input has none), and sayso's key malformed
    payload = v1_payload(message)
    if payload is not None:
        if payload.get("type") != "ask_user_response":
            raise refused(f"this task waits for a ask_user_response, not a {payload.get('type')}")
        if payload.get("id") != request.request_id:
            raise refused(f"invalid correlation: the answer's id must be {request.request_id!r}")
        return [(request, Provide(value=_value_of(request, answer_lists(payload.get("answers")))))]
    decided = legacy_input(data_parts(message)).decision if legacy else None
    if decided is not None:
        answers = decided.get("ask_user_answers")
        if isinstance(answers, list):
            return [(request, Provide(value=_value_of(request, answer_lists(answers))))]
        if decided["decision_type"] == "reject":
            reason = legacy_reason(decided.get("rejection_reason"))
            return [(request, Skip(reason=reason or "the person declined"))]
        raise refused("this task waits for input: send decision_type approve with ask_user_answers")
    values = [part.data for part in message.parts if part.HasField("data")]
    if len(values) > 1:
        raise refused(f"this task waits for one input: send its value as one DataPart, not {len(values)}")
    if values:
        return [(request, Provide(value=whole_numbers(MessageToDict(values[0]))))]
    text = message_text(message)
    if not text.strip():
        raise refused("this task waits for input: send the answer as a DataPart, or as text")
    if request.response_schema.get("type") == "string":
        return [(request, Provide(value=text))]
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError:
        value = text
    return [(request, Provide(value=value))]


def _value_of(request: InputRequest, answers: list[list[str]]) -> Any:
    """The value answers to an input's questions give: an object of its fields, or the one answer."""
    expected = len(input_questions(request))
    if len(answers) != expected:
        raise refused(f"expected {expected} answer(s), one per question, got {len(answers)}")
    fields = input_fields(request)
    if fields is None:
        return _typed(answers[0], request.response_schema)
    value: dict[str, object] = {}
    for (name, field), words in zip(fields.items(), answers, strict=True):
        if [w.strip() for w in words] in ([], [""], ["-"]):
            continue
        value[name] = _typed(words, field)
    return value


def _typed(words: list[str], field: JsonSchemaValue) -> Any:
    """One answer read by its field's type; left as words when it does not read as that type.

    A list's answers are its items, each read by the items' type: `3` is a number where the list holds
    numbers, and `[1, 2]` a list where it holds lists.
    """
    kind = field_type(field)
    if kind == "array":
        items = _items(field)
        return [_json(w) if field_type(items) == "array" else _typed([w], items) for w in words if w.strip()]
    raw = " ".join(w.strip() for w in words if w.strip())
    if kind == "string" or (kind is None and field_choices(field)):
        return raw
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw)
        if kind is None or kind == "object":
            return json.loads(raw)
    except ValueError:
        return raw
    if kind == "boolean" and raw.lower() in ("true", "yes", "false", "no"):
        return raw.lower() in ("true", "yes")
    return raw


def _items(field: JsonSchemaValue) -> JsonSchemaValue:
    """What a list field's items are (looking through `anyOf` with null); `{}`, any JSON, when it does not say."""
    options = [field, *(o for o in field.get("anyOf", []) if isinstance(o, dict))]
    items: object = next((o["items"] for o in options if isinstance(o.get("items"), dict)), {})
    return items if isinstance(items, dict) else {}


def _json(word: str) -> Any:
    """A word read as JSON (a list inside a list), or the word itself when it is none, for the schema check to name."""
    try:
        return json.loads(word)
    except ValueError:
        return word.strip()
