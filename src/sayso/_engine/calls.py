"""What sayso attaches to a call in pydantic-ai's metadata: the typed seam between the gate and the engine.

pydantic-ai carries an opaque `metadata` mapping with a deferred call (`ApprovalRequired`,
`CallDeferred`) to the run's `DeferredToolRequests`, and with a decided call
(`DeferredToolResults.metadata`) back to the tool as `ctx.tool_call_metadata`. sayso keeps one
typed value under its own key in both directions, each a tagged union told apart by `kind`, as
the core's `Request` is:

- `Deferral` — from the gate, `ask_user`, client tools, delegates, MCP servers and before-call
  hooks to the engine: what kind of request the call becomes and what the person will be shown;
- `ApprovedCall` — from the engine back to the gate, the tool body, the hook and the MCP toolset:
  which request let the call go on, by whom, with which arguments, and (for an elicitation) the
  person's answer.

Nothing else in sayso reads or writes that metadata, so the contract lives here alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Self, TypeAlias, get_args

from pydantic.json_schema import JsonSchemaValue

from .._core.decisions import Accept, Cancel, Decline
from .._core.escalation import EscalationStep, OnTimeout
from .._core.requests import (
    ElicitationDelivery,
    ElicitationMode,
    ElicitationRequest,
    Question,
    RejectMode,
    Scope,
    Subject,
    ToolInfo,
)
from .._core.routing import Routing

META_KEY = "sayso"
"""The key under which sayso keeps its own value in pydantic-ai tool and deferred-call metadata."""


@dataclass(frozen=True, kw_only=True)
class Elicitation:
    """What an MCP server (or a before-call hook) asked the person for, before it belongs to a run.

    The part of an `ElicitationRequest` that comes from the asker; the engine adds run, thread and ids.
    """

    server: str | None
    """The server that asked, by its name under `mcp_servers`; `None` for a before-call hook."""
    mode: ElicitationMode
    message: str
    requested_schema: JsonSchemaValue | None = None
    """Form mode: the schema the content must fit."""
    url: str | None = None
    """URL mode: the page to visit."""
    elicitation_id: str | None = None
    """URL mode: the server's id for the elicitation."""
    delivery: ElicitationDelivery = "live"
    """How the answer will reach the asker (see `ElicitationDelivery`)."""
    task: dict[str, Any] | None = None
    """`task` delivery: the server's create-task result."""
    replay: bool = False
    """`live` delivery: the call may be issued again with the answer (see `ElicitationRequest.replay`)."""
    holder: str | None = None
    """`live` delivery: the runtime holding the call (see `ElicitationRequest.holder`)."""


@dataclass(frozen=True, kw_only=True)
class _Attached:
    """A value sayso keeps under `META_KEY` in pydantic-ai's metadata of a call."""

    def as_metadata(self) -> dict[str, object]:
        """The metadata mapping pydantic-ai carries for this call."""
        return {META_KEY: self}


@dataclass(frozen=True, kw_only=True)
class _DeferralBase(_Attached):
    ttl_seconds: float | None = None
    """How long the request stays open; `None` waits forever."""
    expires_at: float | None = None
    """An absolute expiry a service gave; wins over `ttl_seconds`."""

    def with_ttl(self, ttl_seconds: float | None) -> Self:
        """This deferral with `ttl_seconds` where whoever raised it gave none."""
        return self if self.ttl_seconds is not None else replace(self, ttl_seconds=ttl_seconds)


@dataclass(frozen=True, kw_only=True)
class ApprovalDeferral(_DeferralBase):
    """A call that waits for a person's approval: the policy's, a tool body's, a hook's or a service's ask."""

    kind: Literal["approval"] = "approval"
    hint: str | None = None
    """Why the person should look (the tool's own hint or the default one)."""
    scopes: tuple[Scope, ...] = ("once",)
    """The scopes the person may choose from."""
    args_schema: JsonSchemaValue | None = None
    """The tool's JSON schema, so edited arguments can be checked and forms built."""
    subject: Subject | None = None
    binding: str | None = None
    """The hash of tool, canonical arguments and subject the approval is bound to."""
    payload: Any = None
    """Data a tool attached when it asked from its body."""
    from_body: bool = False
    """The tool asked from inside its body: on approval the body runs again."""
    response_schema: JsonSchemaValue | None = None
    """Approval from the body: the JSON Schema of the feedback the person sends with an approval."""
    response_type: str | None = None
    """Approval from the body: the Python type the feedback is checked by, by name (`ApprovalRequest.response_type`)."""
    on_reject: RejectMode = "deny"
    """Approval from the body: `call` runs the body again on a rejection, so it decides what to return."""
    service_request: str | None = None
    """A service's own request id when the service asked through its reply.

    See docs/concepts/pauses.md#tools-whose-service-asks.
    """
    tool_info: ToolInfo | None = None
    """What the tool's source (an MCP server) says about the tool."""
    routing: Routing | None = None
    """Who decides the call and how many must agree, when its rule names approvers (docs/guides/routing.md)."""
    asked_because: str | None = None
    """Why the policy asked, in words."""
    rule: str | None = None
    """The policy rule that asked, by name."""
    escalation: tuple[EscalationStep, ...] = ()
    """The rule's escalation steps."""
    on_timeout: OnTimeout | None = None
    """What the request's expiry decides."""

    def with_defaults(self, *, hint: str, args_schema: JsonSchemaValue | None) -> ApprovalDeferral:
        """This deferral with the tool's hint and schema where the body that raised it gave none."""
        return replace(
            self, hint=self.hint or hint, args_schema=self.args_schema if self.args_schema is not None else args_schema
        )


@dataclass(frozen=True, kw_only=True)
class QuestionDeferral(_DeferralBase):
    """An `ask_user` call: what it asks."""

    kind: Literal["question"] = "question"
    questions: tuple[Question, ...]


@dataclass(frozen=True, kw_only=True)
class ClientToolDeferral(_DeferralBase):
    """A call of a tool the client runs itself, as the client declared the tool."""

    kind: Literal["client_tool"] = "client_tool"
    description: str | None = None
    args_schema: JsonSchemaValue | None = None


@dataclass(frozen=True, kw_only=True)
class DelegateDeferral(_DeferralBase):
    """A call to a delegate (or a remote agent) that paused: the delegate's run the call waits on."""

    kind: Literal["delegate"] = "delegate"
    child_run_id: str


@dataclass(frozen=True, kw_only=True)
class ElicitationDeferral(_DeferralBase):
    """An MCP server (or a before-call hook) asked the person for something while serving the call."""

    kind: Literal["elicitation"] = "elicitation"
    elicitation: Elicitation


Deferral: TypeAlias = ApprovalDeferral | QuestionDeferral | ClientToolDeferral | DelegateDeferral | ElicitationDeferral
"""Why a call was deferred and what its request shows; built where the call is stopped."""

DeferralKind: TypeAlias = Literal["approval", "question", "client_tool", "delegate", "elicitation"]

_DEFERRALS = get_args(Deferral)


@dataclass(frozen=True, kw_only=True)
class _Resumed(_Attached):
    request_id: str
    """The request whose decision let the call go on."""
    principal: str | None = None
    """Who decided it."""


@dataclass(frozen=True, kw_only=True)
class CallApproved(_Resumed):
    """A person approved the call (perhaps with edited arguments): it runs, and must match what was approved."""

    kind: Literal["approved"] = "approved"
    payload: Any = None
    """What the person sent back with the approval, or else the payload the tool attached."""
    edited: bool = False
    """Whether the person edited the arguments."""
    response: Any = None
    """What the person sent back with the approval (`Approve(payload=...)`) as JSON, `None` when nothing was."""
    approved_args: dict[str, Any] | None = None
    """The edited arguments, when edited: the call that runs must match them."""
    subject_key: str | None = None
    """The policy subject the person saw; the call that runs must keep it (services check their own)."""
    from_body: bool = False
    """The approval answered a request the call raised itself (its body, or a before-call hook)."""


@dataclass(frozen=True, kw_only=True)
class CallRejected(_Resumed):
    """A rejection of a body that asked with `on_reject="call"`: the body runs again to decide itself."""

    kind: Literal["rejected"] = "rejected"
    payload: Any = None
    """The payload the tool attached when it asked."""
    reason: str | None = None
    """Why it was rejected (the text the model would have read)."""


@dataclass(frozen=True, kw_only=True)
class ElicitationAnswered(_Resumed):
    """The person answered what a server (or a hook) asked: the call goes on with the answer."""

    kind: Literal["answered"] = "answered"
    elicitation: ElicitationRequest
    """The request the person answered, so a re-issued call can match the server's question."""
    answer: Accept | Decline | Cancel
    """The person's answer, handed back to the server."""


ApprovedCall: TypeAlias = CallApproved | CallRejected | ElicitationAnswered
"""What a call let go on by a person carries back to the gate, the tool body, the hook and the MCP toolset."""

_APPROVED_CALLS = get_args(ApprovedCall)


def deferral_of(metadata: Mapping[str, Any] | None) -> Deferral | None:
    """The deferral sayso attached to a deferred call's metadata, if sayso deferred it."""
    value = (metadata or {}).get(META_KEY)
    return value if isinstance(value, _DEFERRALS) else None


def approved_call_of(metadata: Mapping[str, Any] | None) -> ApprovedCall | None:
    """The record sayso attached to an approved call in a tool's `ctx.tool_call_metadata`."""
    value = (metadata or {}).get(META_KEY)
    return value if isinstance(value, _APPROVED_CALLS) else None
