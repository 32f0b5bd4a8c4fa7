"""The port through which the runtime reaches remote agents, and what goes through it.

The A2A client that implements `RemoteAgents` lives with the protocol (`sayso.protocols.a2a`);
the runtime's remote runner (`_remote`) drives it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from pydantic.json_schema import JsonSchemaValue

from .._core.decisions import Decision
from .._core.requests import Question

RemoteWire: TypeAlias = Literal["v1", "legacy"]
"""How a remote agent speaks human-in-the-loop: kagent's v1 extension, or kagent 0.x's DataParts."""


@dataclass(frozen=True, kw_only=True)
class RemoteAsk:
    """One thing a paused remote task waits on, as its visible tool."""

    kind: Literal["approval", "question", "input"]
    """`input`: a remote sayso workflow's input, shown to kagent clients as questions, with its schema under sayso's
    own key: asked here as that input, so its answer is checked here before it goes down."""
    ask_id: str
    """The id the remote agent expects back in its response."""
    tool_name: str
    args: dict[str, object] = field(default_factory=dict[str, object])
    hint: str | None = None
    questions: tuple[Question, ...] = ()
    call_id: str | None = None
    """The remote model's id for the call (kagent's `call_id`; what kagent 0.x keys its decisions by)."""
    wire: RemoteWire = "v1"
    """How the remote agent paused, and so how its answer goes back."""
    expires_at: float | None = None
    """When the remote agent closes the ask unanswered (its request's expiry, when it says so)."""
    message: str = ""
    """An input's message."""
    payload: Any = None
    """An input's data to show."""
    response_schema: JsonSchemaValue | None = None
    """The JSON Schema an input's answer must fit."""


@dataclass(frozen=True, kw_only=True)
class RemoteOutcome:
    """Where a remote task stands after a message."""

    status: Literal["completed", "paused", "failed", "input_without_hitl", "working"]
    """`input_without_hitl`: the remote task waits for input but says neither what nor how to answer; `working`:
    it is still at its work (what asking where a task stands may find, as a call it took runs)."""
    task_id: str
    context_id: str
    text: str = ""
    """The remote agent's answer (or what went wrong)."""
    asks: tuple[RemoteAsk, ...] = ()


class RemoteUnreachable(Exception):
    """The message never reached the remote agent: no connection was made, so it may be sent again."""

    def __init__(self, url: str, problem: str) -> None:
        self.url = url
        self.problem = problem
        super().__init__(f"the remote agent at {url} could not be reached: {problem}")


class RemoteCutOff(Exception):
    """The message went out but no answer came back (the connection broke): the agent may or may not have taken it."""

    def __init__(self, url: str, problem: str) -> None:
        self.url = url
        self.problem = problem
        super().__init__(f"the remote agent at {url} stopped answering: {problem}")


class RemoteAgents(Protocol):
    """How the runtime reaches remote agents: start a task, answer what it waits on, ask where it stands.

    A message that certainly did not reach the agent raises `RemoteUnreachable`; one whose answer
    never came back (it may have been taken) `RemoteCutOff`.
    """

    async def start(self, url: str, text: str) -> RemoteOutcome: ...

    async def answer(
        self, url: str, *, task_id: str, context_id: str, decisions: list[tuple[RemoteAsk, Decision]]
    ) -> RemoteOutcome: ...

    async def standing(self, url: str, *, task_id: str, context_id: str) -> RemoteOutcome:
        """Where a task stands now, without changing it (`working` while it works)."""
        ...

    async def cancel(self, url: str, *, task_id: str, context_id: str) -> bool:
        """Cancel a task (A2A `CancelTask`); `False` when the agent cancels no tasks (its asks are skipped instead).

        A task the agent no longer has, or that ended already, has nothing left to cancel: `True`.
        """
        ...
