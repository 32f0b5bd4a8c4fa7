"""How stored rows are shown, shared by every backend so each lists and pages the same way.

Paging cursors (the inbox's, the thread list's, a transcript's), agent-path matching, thread titles,
transcript entries and their pages are plain functions here; the SQL backend expresses the path
rules as `LIKE` clauses beside them (`_sql/_listings.py`).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeAlias, cast

from .._core.audit_events import ShownDecision
from .._core.decisions import LEGACY_KINDS
from ..exceptions import InvalidCursor
from ._records import RequestFact, RunRecord, TranscriptEntry

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ToolReturnPart

_ROW_ID = re.compile(r"[A-Za-z0-9_.:\-]{1,64}")
"""What a request's or a thread's id looks like (`req_`, `thr_` and URL-safe base64): a cursor naming anything else
is no store's."""

TITLE_LENGTH = 80
"""How much of a thread's first message its title shows."""


MAX_SEQ = 2**31 - 1
"""The largest batch position (PostgreSQL's int32): a cursor past it is no store's, not a database error."""


def _pack(position: list[object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(position).encode()).decode().rstrip("=")


def _unpack(cursor: str) -> object:
    try:
        return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidCursor(cursor) from exc


Listing: TypeAlias = Literal["requests", "threads", "grants"]
"""Which listing a cursor pages: one listing's cursor is no position in another's."""


def encode_cursor(listing: Listing, created_at: float, row_id: str) -> str:
    """An opaque cursor pointing after the request, thread or grant (`created_at`, its id), as its listing pages."""
    return _pack([created_at, row_id] if listing == "requests" else [listing, created_at, row_id])


def decode_cursor(listing: Listing, cursor: str) -> tuple[float, str]:
    """The position a cursor of `listing` points after (the inbox's are untagged: those handed out before still work).

    Raises:
        InvalidCursor: the cursor is not one a store made for this listing.
    """
    raw = _unpack(cursor)
    if listing != "requests":
        if not isinstance(raw, list) or raw[:1] != [listing]:
            raise InvalidCursor(cursor)
        raw = raw[1:]
    if (
        not isinstance(raw, list)
        or len(raw) != 2
        or not isinstance(raw[0], int | float)
        or isinstance(raw[0], bool)
        or not math.isfinite(raw[0])  # `json` reads NaN and Infinity, which no request was created at
        or not isinstance(raw[1], str)
        or not _ROW_ID.fullmatch(raw[1])  # a NUL in it was PostgreSQL's error, not the cursor's
    ):
        raise InvalidCursor(cursor)
    return float(raw[0]), raw[1]


Position = tuple[int, int]
"""Where a transcript line is: its batch's `seq`, and its place among the lines of that `seq`.

Lines are only ever added after a batch's last line, so a position names the same line for good.
"""


def decode_position(thread_id: str, cursor: str) -> Position:
    """The position in `thread_id`'s transcript a page's cursor points before.

    A cursor names its thread: one of another thread's transcript is no position in this one.

    Raises:
        InvalidCursor: the cursor is not one a store made, or was made for another thread.
    """
    raw = _unpack(cursor)
    if not (isinstance(raw, list) and len(raw) == 4 and raw[0] == "transcript" and isinstance(raw[1], str)):
        raise InvalidCursor(cursor)
    if raw[1] != thread_id:
        raise InvalidCursor(cursor, "pages another thread's transcript")
    if not all(type(v) is int and 0 <= v <= MAX_SEQ for v in raw[2:]):
        raise InvalidCursor(cursor)
    return raw[2], raw[3]


def placed(
    entries: Sequence[TranscriptEntry], *, before: Position | None = None
) -> list[tuple[Position, TranscriptEntry]]:
    """`entries` (oldest first, beginning with a batch's first line) with their positions, those before `before`."""
    out: list[tuple[Position, TranscriptEntry]] = []
    index = 0
    for i, entry in enumerate(entries):
        index = index + 1 if i and entries[i - 1].seq == entry.seq else 0
        if before is None or (entry.seq, index) < before:
            out.append(((entry.seq, index), entry))
    return out


def transcript_page(
    thread_id: str, lines: Sequence[tuple[Position, TranscriptEntry]], *, limit: int, complete: bool
) -> tuple[list[TranscriptEntry], str | None]:
    """The newest `limit` of `thread_id`'s `lines` (oldest first), and the cursor of the lines before them.

    `complete`: `lines` begin at the thread's first line; a store reads back until they do or hold
    more than `limit`, so whether older lines exist is known without reading them.
    """
    shown = lines[-limit:]
    more = len(lines) > limit or not complete
    cursor = _pack(["transcript", thread_id, *shown[0][0]]) if more and shown else None
    return [entry for _, entry in shown], cursor


def rooted_at(path: str, agent: str) -> bool:
    """`agent` is the root (first) agent of `path`."""
    return path == agent or path.startswith(f"{agent}/")


def on_path(path: str, agent: str) -> bool:
    """`agent` is one of the `/`-separated agents of `path` (or a run of them, `analyst/reader`)."""
    return f"/{agent}/" in f"/{path}/"


def title(prompt: str | None) -> str | None:
    """A thread's title: its first message, shortened."""
    return prompt[:TITLE_LENGTH] if prompt else None


DECISION_FIELDS = tuple(ShownDecision.__annotations__)
"""What a transcript's decision line shows of a call's approval record (`ShownDecision`'s keys)."""


def _epoch(moment: datetime | None) -> float | None:
    return moment.timestamp() if moment is not None else None


def _decision_line(seq: int, run_id: str, part: ToolReturnPart) -> TranscriptEntry | None:
    """The decision a call's result carries (kept there by the engine), as a line of its own."""
    record = part.metadata.get("approval") if isinstance(part.metadata, dict) else None
    if not isinstance(record, dict):
        return None
    decided_at = record.get("decided_at")
    shown = {k: record[k] for k in DECISION_FIELDS if k in record}
    if shown.get("decision") in LEGACY_KINDS:  # an older record: shown with today's tag
        shown["decision"] = LEGACY_KINDS[shown["decision"]]
    return TranscriptEntry(
        seq=seq,
        run_id=run_id,
        role="decision",
        tool_name=part.tool_name,
        tool_call_id=part.tool_call_id,
        decision=cast(ShownDecision, shown),
        at=float(decided_at) if isinstance(decided_at, int | float) else None,
    )


def transcript_entries(seq: int, run_id: str, messages: Iterable[ModelMessage]) -> list[TranscriptEntry]:
    """One stored batch of messages as plain entries: user and assistant text, tool calls, decisions, results."""
    # Imported here, not with the module: listing requests (the CLI's inbox) needs no engine.
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

    entries: list[TranscriptEntry] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    entries.append(
                        TranscriptEntry(
                            seq=seq, run_id=run_id, role="user", text=part.content, at=_epoch(part.timestamp)
                        )
                    )
                elif isinstance(part, ToolReturnPart):
                    line = _decision_line(seq, run_id, part)
                    if line is not None:
                        entries.append(line)
                    entries.append(
                        TranscriptEntry(
                            seq=seq,
                            run_id=run_id,
                            role="tool_result",
                            tool_name=part.tool_name,
                            tool_call_id=part.tool_call_id,
                            text=part.model_response_str(),
                            at=_epoch(part.timestamp),
                        )
                    )
        elif isinstance(message, ModelResponse):
            for rpart in message.parts:
                if isinstance(rpart, TextPart):
                    entries.append(
                        TranscriptEntry(
                            seq=seq, run_id=run_id, role="assistant", text=rpart.content, at=_epoch(message.timestamp)
                        )
                    )
                elif isinstance(rpart, ToolCallPart):
                    entries.append(
                        TranscriptEntry(
                            seq=seq,
                            run_id=run_id,
                            role="tool_call",
                            tool_name=rpart.tool_name,
                            tool_call_id=rpart.tool_call_id,
                            args=rpart.args_as_dict(),
                            at=_epoch(message.timestamp),
                        )
                    )
    return entries


def delivery_id(event_id: str, hook: str) -> str:
    """The id of one outbox event's delivery to one webhook: the same for every sender and every retry."""
    return f"dlv_{event_id.removeprefix('evt_')}_{hook}"


def thread_transcript(
    batches: Iterable[tuple[int, str, Sequence[ModelMessage]]], runs: Sequence[RunRecord], *, after_seq: int = 0
) -> list[TranscriptEntry]:
    """A thread's stored batches as entries, with each failed run's failure where it happened.

    `batches` are `(seq, run_id, messages)` after `after_seq`, in order, and `runs` the thread's runs.
    A failed run stores no messages of its own, so its message and its error come from the run
    itself; they carry the `seq` of the batch before them, so reading on from `after_seq` shows a
    failure only once a later batch exists, or when it came after the last batch read.
    """
    groups: list[tuple[str, list[TranscriptEntry]]] = []
    for seq, run_id, messages in batches:
        entries = transcript_entries(seq, run_id, messages)
        if groups and groups[-1][0] == run_id:
            groups[-1][1].extend(entries)
        else:
            groups.append((run_id, entries))
    by_id = {r.run_id: r for r in runs}
    stored = {run_id for run_id, _ in groups}
    silent = sorted((r for r in runs if r.status == "failed" and r.run_id not in stored), key=lambda r: r.created_at)
    out: list[TranscriptEntry] = []
    last_seq = after_seq

    def failure(run: RunRecord, *, with_prompt: bool) -> None:
        if with_prompt and run.prompt:
            out.append(
                TranscriptEntry(seq=last_seq, run_id=run.run_id, role="user", text=run.prompt, at=run.created_at)
            )
        out.append(
            TranscriptEntry(
                seq=last_seq, run_id=run.run_id, role="error", text=run.error or "the run failed", at=run.updated_at
            )
        )

    for run_id, entries in groups:
        started = by_id[run_id].created_at if run_id in by_id else None
        while silent and started is not None and silent[0].created_at < started:
            failure(silent.pop(0), with_prompt=True)
        out.extend(entries)
        if entries:
            last_seq = max(last_seq, entries[-1].seq)
        run = by_id.get(run_id)
        if run is not None and run.status == "failed":
            failure(run, with_prompt=False)
    for run in silent:
        failure(run, with_prompt=True)
    return [e for e in out if after_seq == 0 or e.seq > after_seq]


def fact_of(
    request_id: str,
    created_at: float,
    escalations: int,
    body: bytes,
    *,
    kind: str | None,
    by: str | None,
    principal: str | None,
    decided_at: float | None,
    closed: bool,
) -> RequestFact:
    """A statistics row from a stored request (its tool and rule read from its JSON body) and its decision."""
    shown = json.loads(body)
    return RequestFact(
        request_id=request_id,
        tool_name=str(shown.get("tool_name", "")),
        rule=shown.get("rule"),
        created_at=created_at,
        escalations=escalations or 0,
        decision=kind,
        by=by,
        principal=principal,
        decided_at=decided_at,
        closed=closed,
    )
