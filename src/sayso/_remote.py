"""Remote delegates (§5): an agent behind an A2A URL used as a delegate, its pauses mirrored into sayso's.

The runtime talks to a remote agent through the small `RemoteAgents` port below; the A2A client
that implements it lives with the protocol (`sayso.protocols.a2a`). A remote delegate's task is
represented here by a local *proxy run*: its requests mirror what the remote task waits on, so
the inbox, decisions, nesting and restarts work exactly as for a local delegate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from ._core.decisions import Decision
from ._core.requests import Question


@dataclass(frozen=True, kw_only=True)
class RemoteAsk:
    """One thing a paused remote task waits on, as its visible tool."""

    kind: Literal["approval", "question"]
    ask_id: str
    """The id the remote agent expects back in its response."""
    tool_name: str
    args: dict[str, object] = field(default_factory=dict[str, object])
    hint: str | None = None
    questions: tuple[Question, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RemoteOutcome:
    """Where a remote task stands after a message."""

    status: Literal["completed", "paused", "failed"]
    task_id: str
    context_id: str
    text: str = ""
    """The remote agent's answer (or what went wrong)."""
    asks: tuple[RemoteAsk, ...] = ()


class RemoteAgents(Protocol):
    """How the runtime reaches remote agents: start a task, answer what it waits on."""

    async def start(self, url: str, text: str) -> RemoteOutcome: ...

    async def answer(
        self, url: str, *, task_id: str, context_id: str, decisions: list[tuple[RemoteAsk, Decision]]
    ) -> RemoteOutcome: ...


def default_remote_agents() -> RemoteAgents:
    """The A2A client, imported only when a config names a remote delegate."""
    from .protocols.a2a._client import A2ARemoteAgents

    return A2ARemoteAgents()
