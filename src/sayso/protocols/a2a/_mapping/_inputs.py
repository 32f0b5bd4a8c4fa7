"""A workflow's `input` request over A2A, client -> agent: the answer a message gives.

kagent has no form for it: the pause's text is the request's message, with the payload and
JSON Schema under `SAYSO_KEY` (`_messages.pause_message`). The answer comes back as a DataPart
holding the value, or as text (as is for a string schema, else read as JSON).
"""

from __future__ import annotations

import json
from typing import Any

from a2a.types import Message
from google.protobuf.json_format import MessageToDict

from ...._core.decisions import Decision, Provide
from ...._core.requests import InputRequest
from ._messages import message_text
from ._v1 import refused
from ._views import PauseView, ShownRequest


def decision_from_input(view: PauseView, message: Message) -> list[tuple[ShownRequest, Decision]]:
    """The answer a message gives to a shown `input` request: its first DataPart, else its text.

    Text is the answer as is where the schema asks for a string, and is read as JSON otherwise
    (text that is not JSON is passed on, for the schema check to say what is wrong with it).

    Raises:
        InvalidInput: the message holds neither a DataPart nor text (`field` is `HITL_RESPONSE`).
    """
    (request,) = view.requests
    assert isinstance(request, InputRequest)
    for part in message.parts:
        if part.HasField("data"):
            return [(request, Provide(value=_whole_numbers(MessageToDict(part.data))))]
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


def _whole_numbers(value: Any) -> Any:
    """JSON from a protobuf `Value`, with whole numbers as integers again (protobuf keeps every number as a double)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    return value
