"""The REST wire format, inbound: pydantic models of request bodies, strict, each turning itself into core values.

`to_decision` and `ClientToolIn.to_client_tool` are the one translation from a REST body to the
runtime's decisions and client tools; what goes out is described in `_schemas_out`.

A message, a reason, an answer or an error has no size cap here: the runtime checks them against the
config's `limits:` (`_core/limits.py`) as it does for every interface, and a body over
`limits.request_bytes` never reaches these models (`_guard`). A cap of REST's own would refuse what
the CLI and Python take, and with another status (422, not 413).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field
from pydantic.json_schema import JsonSchemaValue

from .._core.decisions import (
    Accept,
    Answer,
    Approve,
    Cancel,
    ClientError,
    ClientResult,
    Decision,
    Decline,
    Provide,
    Reject,
    Skip,
    current_kind,
)
from .._core.ids import ID_PATTERN
from .._core.requests import ClientTool, Scope

AGENT_PATTERN = r"^[^\x00-\x1f\x7f]{1,200}$"
"""An agent's name as a filter: up to 200 characters, none a control character (PostgreSQL cannot look up a NUL)."""


class _Wire(BaseModel):
    # Strict: `{"force": "yes"}` or `{"scope": 1}` is refused, never coerced into something the client did not say.
    model_config = ConfigDict(extra="forbid", strict=True)


# inbound


class ClientToolIn(_Wire):
    """A tool the client runs itself, declared with a run."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")
    description: str = Field(default="", max_length=2000)
    parameters: JsonSchemaValue = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON schema of the tool's arguments."""
    context: str | None = Field(default=None, max_length=20_000)
    """What the client knows that goes with the tool; only agents allowed the tool see it."""

    def to_client_tool(self) -> ClientTool:
        return ClientTool(
            name=self.name, description=self.description, parameters=self.parameters, context=self.context
        )


class RunIn(_Wire):
    """Start a run: a user message to an agent on a new or existing thread."""

    message: str = Field(min_length=1)
    agent: str | None = Field(default=None, min_length=1, max_length=200)
    """The agent of a new thread; default: the config's entry agent."""
    thread_id: str | None = Field(default=None, pattern=ID_PATTERN)
    """An existing thread to continue, or the id for a new one; default: a new thread."""
    client_tools: list[ClientToolIn] = Field(default_factory=list, max_length=64)


class ThreadIn(_Wire):
    """Open a new thread with an agent; it is stored when its first run starts."""

    agent: str | None = Field(default=None, min_length=1, max_length=200)


class ResumeIn(_Wire):
    """Resume a paused run."""

    force: bool = False
    """Resume even if requests are open; they count as skipped."""


class ApproveIn(_Wire):
    """Approve the call, optionally with edited arguments and a wider scope."""

    kind: Literal["approve"]
    scope: Scope = "once"
    edited_args: dict[str, Any] | None = None
    payload: Any = None
    """Feedback for a tool that asked with a `response_schema`; checked against it."""


class RejectIn(_Wire):
    """Do not run the call; the model reads the reason."""

    kind: Literal["reject"]
    reason: str | None = None


class SkipIn(_Wire):
    """Leave the request unanswered; the model reads why."""

    kind: Literal["skip"]
    reason: str | None = None


class AnswerIn(_Wire):
    """Answer the questions: one list of strings per question, in order."""

    kind: Literal["answer"]
    answers: list[list[str]]


class ClientResultIn(_Wire):
    """The value a client tool returned (`result`, its older tag, is read too).

    `value` is required (an explicit `null` is a value): a body that forgot it must not answer the
    tool with a `null` the client never said.
    """

    kind: Literal["client_result"]
    value: Any


class ClientErrorIn(_Wire):
    """The error a client tool reported (`error`, its older tag, is read too)."""

    kind: Literal["client_error"]
    message: str


class ProvideIn(_Wire):
    """Answer a workflow's `input` request with a value that fits its `response_schema`."""

    kind: Literal["provide"]
    value: Any
    """The answer as JSON: an object for a model, a string for a text answer, ..."""


class AcceptIn(_Wire):
    """Give an MCP server what it asked for: the form's content, or (a page to visit) nothing: "done"."""

    kind: Literal["accept"]
    content: dict[str, Any] | None = None


class DeclineIn(_Wire):
    """Refuse what an MCP server asked for."""

    kind: Literal["decline"]


class CancelIn(_Wire):
    """Dismiss what an MCP server asked for without choosing."""

    kind: Literal["cancel"]


AnyDecisionIn = (
    ApproveIn
    | RejectIn
    | SkipIn
    | AnswerIn
    | ClientResultIn
    | ClientErrorIn
    | ProvideIn
    | AcceptIn
    | DeclineIn
    | CancelIn
)
DecisionIn = Annotated[AnyDecisionIn, Discriminator("kind"), BeforeValidator(current_kind)]
"""Any decision, tagged by `kind` (an older client's `result` / `error` read as `client_result` / `client_error`)."""


def to_decision(body: AnyDecisionIn) -> Decision:
    """The core decision a request body stands for."""
    match body:
        case ApproveIn():
            return Approve(scope=body.scope, edited_args=body.edited_args, payload=body.payload)
        case ProvideIn():
            return Provide(value=body.value)
        case RejectIn():
            return Reject(reason=body.reason)
        case SkipIn():
            return Skip(reason=body.reason)
        case AnswerIn():
            return Answer(answers=tuple(tuple(a) for a in body.answers))
        case ClientResultIn():
            return ClientResult(value=body.value)
        case ClientErrorIn():
            return ClientError(message=body.message)
        case AcceptIn():
            return Accept(content=body.content)
        case DeclineIn():
            return Decline()
        case CancelIn():
            return Cancel()
