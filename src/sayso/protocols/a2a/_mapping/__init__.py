"""The one mapping of the A2A package: sayso's requests and decisions ↔ kagent's HITL wire and A2A's messages.

It knows both sides: sayso's `Request`/`Decision` dataclasses, the JSON objects of the
`https://kagent.dev/extensions/hitl/v1` extension and of kagent 0.x's DataParts, and the A2A
protobuf messages that carry them, and how sayso's errors read as JSON-RPC errors
(`to_a2a_error`). Everything here is pure: the handler and the client do the I/O. It is one
package split by wire, each module under ~500 lines:

| module | holds |
|---|---|
| `_views` | what one A2A pause shows (`PauseView`) and its status text (kagent's rule, docs/guides/a2a.md) |
| `_v1` | v1 payloads: pause requests out, responses in (with sayso's edits beside them) |
| `_legacy` | kagent 0.x DataParts, both ways, and ADK's FunctionResponse answer |
| `_inputs` | a workflow's input request: the answer a message gives (a DataPart, or text) |
| `_elicitations` | an MCP elicitation (shown as questions): the answer kagent's or sayso's response gives |
| `_messages` | pause, decision and history messages; `to_a2a_error` |
| `_remote` | sayso as a client: what a remote pause asks, and the answer sent back |
"""

from __future__ import annotations

from ._elicitations import ELICITATION_RESPONSE, elicitation_from_answers
from ._inputs import decision_from_input
from ._legacy import LEGACY_CONFIRMATION, Confirmation, LegacyInput, decisions_from_legacy, legacy_input, legacy_parts
from ._messages import (
    data_parts,
    decision_message,
    history,
    is_unavailable,
    json_of,
    message_text,
    no_answer_reason,
    pause_message,
    sayso_extras,
    struct_of,
    text_message,
    to_a2a_error,
    v1_payload,
)
from ._remote import answer_message, asks_of, legacy_answer, legacy_asks, remote_outcome, response_payload
from ._v1 import HITL_RESPONSE, decisions_from_v1, refused, request_payload, response_of, sayso_payload
from ._views import (
    EXTENSION_DESCRIPTION,
    GENERIC_TEXT,
    HITL_URI,
    SAYSO_KEY,
    PauseView,
    _Pending,
    not_an_answer,
    pause_view,
    status_text,
    view_text,
    views_of,
)

__all__ = [
    "ELICITATION_RESPONSE",
    "EXTENSION_DESCRIPTION",
    "GENERIC_TEXT",
    "HITL_RESPONSE",
    "HITL_URI",
    "LEGACY_CONFIRMATION",
    "SAYSO_KEY",
    "Confirmation",
    "LegacyInput",
    "PauseView",
    "_Pending",
    "answer_message",
    "asks_of",
    "data_parts",
    "decision_from_input",
    "decision_message",
    "decisions_from_legacy",
    "decisions_from_v1",
    "elicitation_from_answers",
    "history",
    "is_unavailable",
    "json_of",
    "legacy_answer",
    "legacy_asks",
    "legacy_input",
    "legacy_parts",
    "message_text",
    "no_answer_reason",
    "not_an_answer",
    "pause_message",
    "pause_view",
    "refused",
    "remote_outcome",
    "request_payload",
    "response_of",
    "response_payload",
    "sayso_extras",
    "sayso_payload",
    "status_text",
    "struct_of",
    "text_message",
    "to_a2a_error",
    "v1_payload",
    "view_text",
    "views_of",
]
