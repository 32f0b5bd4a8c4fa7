"""A workflow run's state and the records around it: what the engine saves, reads back and returns.

`WorkflowState` is plain JSON (finished nodes' outputs, the answers a node got, what it waits
on), so a store can keep it and any process can resume from it; the engine in `_engine` steps
a run from one state to the next.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeAlias

from pydantic import Discriminator, TypeAdapter
from pydantic.json_schema import JsonSchemaValue

from .._core.requests import InputRequest, Request
from .._core.routing import Routing
from ..exceptions import RunNotFound
from ._graph import RouteKey

if TYPE_CHECKING:
    from pydantic_ai.agent import AbstractAgent

WorkflowStatus: TypeAlias = Literal["running", "paused", "completed", "failed"]
"""Where a workflow run stands; `running` also means "interrupted while running" after a crash."""


class InputSkipped(Exception):
    """Raised inside a node at its `yield RequestInput(...)` when the person skipped the question.

    A node may catch it and carry on; if it does not, the run fails naming the node, and a
    `resume` asks the question again.
    """

    def __init__(self, node: str, reason: str | None, *, index: int = 0, expired: bool = False) -> None:
        self.node = node
        self.reason = reason
        self.index = index
        self.expired = expired
        """Nobody skipped it: its time ran out (`ttl_seconds`) unanswered."""
        said = (
            f"the input of node {node!r} expired unanswered"
            if expired
            else f"the person skipped the input of node {node!r}"
        )
        super().__init__(said + (f" ({reason})" if expired and reason else f": {reason}" if reason else ""))

    def __reduce__(self) -> tuple[Any, ...]:
        return _skipped, (self.node, self.reason, self.index, self.expired)


def _skipped(node: str, reason: str | None, index: int, expired: bool = False) -> InputSkipped:
    return InputSkipped(node, reason, index=index, expired=expired)


# the state


@dataclass(frozen=True, kw_only=True)
class FinishedNode:
    """One node that ran to the end: its output, stored once and never recomputed."""

    node: str
    output: Any
    """The node's output as JSON (for a `Route`, the route's output)."""
    route: RouteKey | None = None
    """The route the node chose, when it returned a `Route`."""


@dataclass(frozen=True, kw_only=True)
class GivenAnswer:
    """An answer a person gave to one `RequestInput`, as JSON."""

    kind: Literal["given"] = "given"
    value: Any


@dataclass(frozen=True, kw_only=True)
class SkippedAnswer:
    """A `RequestInput` the person skipped; replaying raises `InputSkipped` at that `yield`."""

    kind: Literal["skipped"] = "skipped"
    reason: str | None = None
    expired: bool = False
    """Nobody skipped it: the request expired unanswered."""


RecordedAnswer: TypeAlias = Annotated[GivenAnswer | SkippedAnswer, Discriminator("kind")]


@dataclass(frozen=True, kw_only=True)
class PendingInput:
    """A question a node is waiting on: what the runtime turns into an `InputRequest`."""

    key: str
    """Stable for this very question: `node:visit:number` (a loop's next pass asks a new one)."""
    node: str
    """The node that asked."""
    message: str
    payload: Any = None
    """The `RequestInput` payload as JSON."""
    response_schema: JsonSchemaValue = field(default_factory=dict)
    """The JSON Schema the answer must fit (`{}`: any JSON value)."""
    refused: tuple[str, ...] = ()
    """Problems the node's own type found with the previous answer (one the JSON Schema let
    through, say a pydantic validator's): show them with the question asked again."""

    def to_request(
        self,
        *,
        request_id: str,
        run_id: str,
        thread_id: str,
        agent_path: str,
        created_at: float,
        expires_at: float | None = None,
        principal: str | None = None,
        routing: Routing | None = None,
    ) -> InputRequest:
        """The `input` request a person answers for this question.

        Its `tool_name` is the node and its `tool_call_id` this question's `key`; when the
        node's own type refused the previous answer, the reason leads the message.
        """
        message = self.message
        if self.refused:
            message = f"Your previous answer was refused: {'; '.join(self.refused)}\n\n{message}"
        return InputRequest(
            request_id=request_id,
            run_id=run_id,
            thread_id=thread_id,
            agent_path=agent_path,
            tool_call_id=self.key,
            tool_name=self.node,
            created_at=created_at,
            expires_at=expires_at,
            principal=principal,
            node=self.node,
            message=message,
            payload=self.payload,
            response_schema=self.response_schema,
            routing=routing,
        )


@dataclass(frozen=True, kw_only=True)
class WorkflowState:
    """Everything needed to carry a workflow run on, as plain data; see `WorkflowState.to_json`."""

    format_version: Literal[1] = 1
    run_id: str
    workflow: str
    status: WorkflowStatus = "running"
    principal: str | None = None
    """Who the run acts for; nodes read it as `ctx.principal`."""
    finished: tuple[FinishedNode, ...] = ()
    """The nodes that ran to the end, in order; a node in a loop appears once per pass."""
    node: str | None = None
    """The node to run, running, paused or failed; `None` once completed."""
    node_input: Any = None
    """That node's input, as JSON."""
    answers: tuple[RecordedAnswer, ...] = ()
    """Answers to that node's questions so far in this pass, in the order it asked them."""
    pending: PendingInput | None = None
    """The question the run waits on, when paused on input."""
    agent_handle: str | None = None
    """When paused on an agent node: the runner's handle for the agent's own run."""
    data: dict[str, Any] = field(default_factory=dict)
    """`ctx.state`, as the last finished node left it."""
    output: Any = None
    """The workflow's output, when completed."""
    error: str | None = None
    """What went wrong, when failed."""

    def to_json(self) -> bytes:
        """The state as JSON bytes, the form a store keeps."""
        return _state_adapter().dump_json(self)

    @classmethod
    def from_json(cls, data: str | bytes) -> WorkflowState:
        """Load a state written by `to_json`."""
        return _state_adapter().validate_json(data)

    def visits(self, node: str) -> int:
        """How many times `node` has finished in this run."""
        return sum(1 for f in self.finished if f.node == node)


@cache
def _state_adapter() -> TypeAdapter[WorkflowState]:
    """Built on first use: a process that runs no workflow (an agent's `sayso decide`) does not pay ~30 ms for it."""
    return TypeAdapter(WorkflowState)


# what the runtime plugs in


class WorkflowPersistence(Protocol):
    """Where the engine writes each state; the runtime backs it with its store."""

    async def save(self, state: WorkflowState) -> None:
        """Persist `state`, replacing the run's previous one; raise to stop the engine."""
        ...


class MemoryWorkflowPersistence:
    """States kept in memory as JSON, for tests and embedding; each save is a full round trip."""

    def __init__(self) -> None:
        self._states: dict[str, bytes] = {}
        self.saves = 0
        """How many times `save` was called."""

    async def save(self, state: WorkflowState) -> None:
        self._states[state.run_id] = state.to_json()
        self.saves += 1

    async def load(self, run_id: str) -> WorkflowState:
        """The last saved state of a run.

        Raises:
            RunNotFound: nothing was saved for `run_id`.
        """
        try:
            return WorkflowState.from_json(self._states[run_id])
        except KeyError:
            raise RunNotFound(run_id) from None


@dataclass(frozen=True, kw_only=True)
class AgentNodeCall:
    """What an agent node asks the runtime to run."""

    run_id: str
    """The workflow's run."""
    workflow: str
    node: str
    """The node's name; requests the agent opens should be labelled with it (`agent_path` `workflow/node`)."""
    agent: str | AbstractAgent[Any, Any]
    """A configured agent's name, or a pydantic-ai agent."""
    prompt: str
    """The node's input as text: a string as is, anything else as JSON."""
    node_input: Any
    """The node's input as JSON."""
    visit: int
    """1 on the node's first pass, 2 on the second, ... (a runner may keep one thread per node)."""
    principal: str | None
    output_type: Any = None
    """The type the node wants back, if any; the engine parses text answers into it as JSON."""


@dataclass(frozen=True, kw_only=True)
class AgentFinished:
    """The agent answered."""

    kind: Literal["finished"] = "finished"
    output: Any


@dataclass(frozen=True, kw_only=True)
class AgentPaused:
    """The agent paused for a person (approvals, questions, client tools)."""

    kind: Literal["paused"] = "paused"
    handle: str
    """What the runner needs to carry the agent's run on later (its run id); stored in the state."""
    requests: tuple[Request, ...] = ()
    """What a person can answer now, labelled with the node."""


AgentOutcome: TypeAlias = AgentFinished | AgentPaused


class AgentNodeRunner(Protocol):
    """Runs agent nodes for the engine; the runtime supplies it.

    A runner that raises fails the node (and the run), with the node named.
    """

    async def start(self, call: AgentNodeCall) -> AgentOutcome:
        """Run the agent on `call.prompt` until it answers or pauses."""
        ...

    async def resume(self, call: AgentNodeCall, handle: str) -> AgentOutcome:
        """Carry a paused agent run on (its requests were decided on that run); it may pause again."""
        ...


# outcomes


@dataclass(frozen=True, kw_only=True)
class WorkflowFinished:
    """The run reached a terminal node."""

    kind: Literal["completed"] = "completed"
    state: WorkflowState
    output: Any
    """The terminal node's output, as JSON."""


@dataclass(frozen=True, kw_only=True)
class WorkflowPaused:
    """The run waits on a person: a node's question (`input`) or an agent node's requests (`agent`)."""

    kind: Literal["paused"] = "paused"
    state: WorkflowState
    node: str
    input: PendingInput | None = None
    agent: AgentPaused | None = None


@dataclass(frozen=True, kw_only=True)
class WorkflowFailed:
    """A node failed; `resume` runs it again."""

    kind: Literal["failed"] = "failed"
    state: WorkflowState
    node: str
    error: str


WorkflowOutcome: TypeAlias = WorkflowFinished | WorkflowPaused | WorkflowFailed


# the engine
