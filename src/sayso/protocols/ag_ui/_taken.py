"""The AG-UI messages a thread already took, by id: each message the person sent reaches the agent once.

An AG-UI client sends the whole history with every run, and nothing in a `RunAgentInput` says
which of its messages are new. The HttpAgent's history after a workflow's interrupt still ends
with the person's message (a workflow streams no assistant message), and a client may send an
earlier input again: read as new, either would run the turn again. So the endpoint keeps the id
of every user message it sends to the agent, as a runtime mark (namespace `ag-ui.messages`, per
thread and message id) naming the run that took it, written before that run starts. A message
counts as taken once that run exists: one refused before its run was written (a thread busy, a
tool that is no tool) is taken when it comes again.

What an input adds is what its history ends with, back to the last message the thread holds: the
person's messages the thread never took (all of them, oldest first: one sent while a run was
refused is not dropped for the one typed after it) and the tool messages among them. A history
that ends with what the server streamed adds nothing: it came before when the thread took its
last user message.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ag_ui.core import ToolMessage, UserMessage

from ..._runtime import Sayso, new_id
from ...exceptions import InvalidInput, RunNotFound
from ._inbound import text_of, trailing

NAMESPACE = "ag-ui.messages"
"""The marks' namespace: per thread and AG-UI message id, the run that took the message."""

MAX_NEW = 32
"""The most user messages one input may add; more is refused rather than looked up one by one."""


@dataclass(frozen=True, kw_only=True)
class NewInput:
    """What an input adds to what its thread holds."""

    said: tuple[UserMessage, ...] = ()
    """The person's messages the thread never took, oldest first."""
    answers: tuple[ToolMessage, ...] = ()
    """The tool messages among them: answers to browser tool calls (or echoes of results streamed)."""
    taken_by: str | None = None
    """When the input adds no message: the run that took the message it ends with (the input came before)."""

    @property
    def text(self) -> str | None:
        """What the person said, every new message's text in order, or `None` when they said nothing new."""
        if not self.said:
            return None
        return "\n\n".join(text for text in (text_of(m) for m in self.said) if text.strip())

    @property
    def ids(self) -> list[str]:
        return [m.id for m in self.said]


async def read_input(sayso: Sayso, thread_id: str, messages: Sequence[Any], *, known: bool) -> NewInput:
    """What `messages` add to thread `thread_id` (`known`: it exists and the caller sees it; else all is new).

    Raises:
        InvalidInput: more than `MAX_NEW` user messages the thread never took end the history.
    """
    said: list[UserMessage] = []
    answers: list[ToolMessage] = []
    tail = trailing(messages)
    if not tail:
        last = next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
        if known and last is not None and (run_id := await taken_by(sayso, thread_id, last.id)) is not None:
            return NewInput(taken_by=run_id)
        return NewInput()
    for message in reversed(tail):
        if isinstance(message, ToolMessage):
            answers.append(message)
            continue
        if known and (run_id := await taken_by(sayso, thread_id, message.id)) is not None:
            taken = run_id if not said and not answers else None
            return NewInput(said=tuple(reversed(said)), answers=tuple(reversed(answers)), taken_by=taken)
        said.append(message)
        if len(said) > MAX_NEW:
            raise InvalidInput(
                f"the history ends with more than {MAX_NEW} messages this thread never received; "
                f"send at most {MAX_NEW} new ones at once",
                field="messages",
            )
    return NewInput(said=tuple(reversed(said)), answers=tuple(reversed(answers)))


async def taken_by(sayso: Sayso, thread_id: str, message_id: str) -> str | None:
    """The run of `thread_id` that took the message, or `None` when the thread never took it."""
    run_id = _run_id(await sayso.get_mark(NAMESPACE, _key(thread_id, message_id)))
    if run_id is None:
        return None
    try:
        run = await sayso.run_record(run_id)
    except RunNotFound:
        return None  # kept for a run that was refused before it was written: the message was not taken
    return run_id if run.thread_id == thread_id else None


async def take(sayso: Sayso, thread_id: str, message_ids: Sequence[str]) -> str:
    """The id of the run that takes these messages, kept for each before the run starts.

    Two inputs taking the same new message at once get the same run id, so one run starts and
    the other is refused as any second run on a busy thread is.
    """
    run_id = new_id("run")
    *older, newest = message_ids
    if not await sayso.claim_mark(NAMESPACE, _key(thread_id, newest), _value(run_id)):
        # Kept by an earlier input: one refused before its run was written, or one taking it right now.
        kept = _run_id(await sayso.get_mark(NAMESPACE, _key(thread_id, newest)))
        if kept is None:
            await sayso.set_mark(NAMESPACE, _key(thread_id, newest), _value(run_id))
        else:
            run_id = kept
    for message_id in older:
        await sayso.set_mark(NAMESPACE, _key(thread_id, message_id), _value(run_id))
    return run_id


def _key(thread_id: str, message_id: str) -> str:
    """A mark's key: the thread id (at most 64 characters) and a digest of the client's id, of any length."""
    digest = hashlib.sha256(message_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{thread_id}/{digest[:40]}"


def _value(run_id: str) -> str:
    return json.dumps({"run_id": run_id})


def _run_id(raw: str | None) -> str | None:
    try:
        value = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    run_id = value.get("run_id") if isinstance(value, dict) else None
    return run_id if isinstance(run_id, str) else None
