"""The rule a message is checked by against the thread it goes to, inside the transaction that starts its run.

The start verb builds a `StartAsk` up front (who speaks, the agent they named, what this runtime
runs); the store's `begin_run` reads the thread and calls `check_thread` on it before writing
anything, so a refused message changes nothing. Pure: the store imports this rule, the runtime
hands it only data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..exceptions import AgentNotFound, InvalidInput, NotAllowed
from .access import Principal, may_message


class ThreadAsRead(Protocol):
    """What the rule reads of a thread (the store's `ThreadRecord` has it)."""

    @property
    def thread_id(self) -> str: ...
    @property
    def owner(self) -> str: ...
    @property
    def agent(self) -> str: ...


@dataclass(frozen=True, kw_only=True)
class StartAsk:
    """A message starting a run, as the start verb asks for it, with what this runtime runs."""

    principal: Principal
    """Who speaks."""
    agent: str | None
    """The agent (or workflow) the caller named; a thread keeps its own."""
    agents: tuple[str, ...]
    """The runtime's agents."""
    workflows: frozenset[str] = frozenset()
    """The runtime's workflows."""


def check_thread(ask: StartAsk, thread: ThreadAsRead | None) -> None:
    """Refuse a message on a thread that is not the speaker's, of another agent, or of one this runtime lacks.

    A new thread (`None`) passes: its agent was checked before the transaction. A thread id names one
    thread for everyone, so an id that is someone else's thread cannot start one of the speaker's:
    refusing it tells that the id is taken, which nothing can hide. Nothing more: it is refused first,
    before its agent or its runs are looked at, in the same words whether or not the speaker may read
    that thread (an approver of it, an outsider, to whom reading it answers "no thread"), naming
    neither its owner nor its agent (docs/guides/rest.md#who-may-call).
    """
    if thread is None:
        return
    if not may_message(ask.principal, owner=thread.owner):
        raise NotAllowed(
            thread.thread_id,
            f"only the thread's owner may send messages into it, not {ask.principal.name!r}; "
            "to start a thread of your own, leave the thread id out or choose another",
            subject="thread",
        )
    check_agent(thread, ask.agent)
    if thread.agent not in ask.workflows and thread.agent not in ask.agents:
        raise AgentNotFound(thread.agent, known=ask.agents)


def check_agent(thread: ThreadAsRead, agent: str | None) -> None:
    """Refuse naming another agent than the thread's (a thread keeps its agent; `None` names none).

    Raises:
        InvalidInput: `agent` is not the thread's agent.
    """
    if agent is not None and agent != thread.agent:
        raise InvalidInput(
            f"thread {thread.thread_id!r} belongs to agent {thread.agent!r}, not {agent!r}", field="agent"
        )
