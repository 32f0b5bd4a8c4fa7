"""How stored rows are shown, shared by every backend so each lists and pages the same way.

Inbox cursors, agent-path matching, thread titles and transcript entries are plain functions
here; the SQL backend expresses the path rules as `LIKE` clauses beside them (`_sql/_listings.py`).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ..exceptions import InvalidCursor
from ._records import TranscriptEntry

TITLE_LENGTH = 80
"""How much of a thread's first message its title shows."""


def encode_cursor(created_at: float, request_id: str) -> str:
    """An opaque cursor pointing after the request (`created_at`, `request_id`)."""
    return base64.urlsafe_b64encode(json.dumps([created_at, request_id]).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """The position a cursor points after.

    Raises:
        InvalidCursor: the cursor is not one a store made.
    """
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidCursor(cursor) from exc
    if (
        not isinstance(raw, list)
        or len(raw) != 2
        or not isinstance(raw[0], int | float)
        or isinstance(raw[0], bool)
        or not isinstance(raw[1], str)
    ):
        raise InvalidCursor(cursor)
    return float(raw[0]), raw[1]


def rooted_at(path: str, agent: str) -> bool:
    """`agent` is the root (first) agent of `path`."""
    return path == agent or path.startswith(f"{agent}/")


def on_path(path: str, agent: str) -> bool:
    """`agent` is one of the `/`-separated agents of `path` (or a run of them, `analyst/reader`)."""
    return f"/{agent}/" in f"/{path}/"


def title(prompt: str | None) -> str | None:
    """A thread's title: its first message, shortened."""
    return prompt[:TITLE_LENGTH] if prompt else None


def transcript_entries(seq: int, run_id: str, messages: Iterable[ModelMessage]) -> list[TranscriptEntry]:
    """One stored batch of messages as plain entries: user and assistant text, tool calls and their results."""
    entries: list[TranscriptEntry] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    entries.append(TranscriptEntry(seq=seq, run_id=run_id, role="user", text=part.content))
                elif isinstance(part, ToolReturnPart):
                    entries.append(
                        TranscriptEntry(
                            seq=seq,
                            run_id=run_id,
                            role="tool_result",
                            tool_name=part.tool_name,
                            tool_call_id=part.tool_call_id,
                            text=part.model_response_str(),
                        )
                    )
        elif isinstance(message, ModelResponse):
            for rpart in message.parts:
                if isinstance(rpart, TextPart):
                    entries.append(TranscriptEntry(seq=seq, run_id=run_id, role="assistant", text=rpart.content))
                elif isinstance(rpart, ToolCallPart):
                    entries.append(
                        TranscriptEntry(
                            seq=seq,
                            run_id=run_id,
                            role="tool_call",
                            tool_name=rpart.tool_name,
                            tool_call_id=rpart.tool_call_id,
                            args=rpart.args_as_dict(),
                        )
                    )
    return entries
