"""What sayso attaches to a call in pydantic-ai's metadata: the typed seam between the gate and the engine.

pydantic-ai carries an opaque `metadata` mapping with a deferred call (`ApprovalRequired`,
`CallDeferred`) to the run's `DeferredToolRequests`, and with a decided call
(`DeferredToolResults.metadata`) back to the tool as `ctx.tool_call_metadata`. sayso keeps one
typed value under its own key in both directions:

- `Deferral` — from the gate, `ask_user`, client tools, delegates, MCP servers and before-call
  hooks to the engine: what kind of request the call becomes and what the person will be shown;
- `ApprovedCall` — from the engine back to the gate, the tool body, the hook and the MCP toolset:
  which request let the call go on, by whom, with which arguments, and (for an elicitation) the
  person's answer.

Nothing else in sayso reads or writes that metadata, so the contract lives here alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .._core.decisions import Accept, Cancel, Decline
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

META_KEY = "sayso"
"""The key under which sayso keeps its own value in pydantic-ai tool and deferred-call metadata."""

DeferralKind = Literal["approval", "question", "client_tool", "delegate", "elicitation"]


@dataclass(frozen=True, kw_only=True)
class Elicitation:
    """What an MCP server (or a before-call hook) asked the person for, before it belongs to a run.

    The part of an `ElicitationRequest` that comes from the asker; the engine adds run, thread and ids.
    """

    server: str | None
    """The server that asked, by its name under `mcp_servers`; `None` for a before-call hook."""
    mode: ElicitationMode
    message: str
    requested_schema: dict[str, Any] | None = None
    """Form mode: the schema the content must fit."""
    url: str | None = None
    """URL mode: the page to visit."""
    elicitation_id: str | None = None
    """URL mode: the server's id for the elicitation."""
    delivery: ElicitationDelivery = "live"
    """How the answer will reach the asker (see `ElicitationDelivery`)."""
    task: dict[str, Any] | None = None
    """`task` delivery: the server's create-task result."""

    def request_fields(self) -> dict[str, Any]:
        """The fields of an `ElicitationRequest` that come from the asker."""
        from dataclasses import asdict

        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class Deferral:
    """Why a call was deferred and what its request shows; built where the call is stopped."""

    kind: DeferralKind
    hint: str | None = None
    """Approval: why the person should look (the tool's own hint or the default one)."""
    scopes: tuple[Scope, ...] = ("once",)
    """Approval: the scopes the person may choose from."""
    ttl_seconds: float | None = None
    expires_at: float | None = None
    """An absolute expiry a service gave; wins over `ttl_seconds`."""
    args_schema: dict[str, Any] | None = None
    """The tool's JSON schema, so edited arguments can be checked and forms built."""
    subject: Subject | None = None
    binding: str | None = None
    """The hash of tool, canonical arguments and subject the approval is bound to."""
    payload: Any = None
    """Data a tool attached when it asked from its body (or a remote agent's URL)."""
    from_body: bool = False
    """The tool asked from inside its body: on approval the body runs again."""
    response_schema: dict[str, Any] | None = None
    """Approval from the body: the JSON Schema of the feedback the person sends with an approval."""
    on_reject: RejectMode = "deny"
    """Approval from the body: `call` runs the body again on a rejection, so it decides what to return."""
    service_request: str | None = None
    """A service's own request id when the service asked through its reply.

    See docs/concepts/pauses.md#tools-whose-service-asks.
    """
    questions: tuple[Question, ...] = ()
    """Question: what `ask_user` asks."""
    description: str | None = None
    """Client tool: the description the client declared."""
    child_run_id: str | None = None
    """Delegate: the delegate's run the call waits on."""
    tool_info: ToolInfo | None = None
    """Approval: what the tool's source (an MCP server) says about the tool."""
    elicitation: Elicitation | None = None
    """Elicitation: what the server (or hook) asked."""

    def as_metadata(self) -> dict[str, Any]:
        """The metadata mapping pydantic-ai carries for this call."""
        return {META_KEY: self}

    def with_defaults(self, *, hint: str, args_schema: dict[str, Any] | None, ttl_seconds: float | None) -> Deferral:
        """This deferral with the tool's hint, schema and TTL where the body that raised it gave none."""
        from dataclasses import replace

        return replace(
            self,
            hint=self.hint or hint,
            args_schema=self.args_schema if self.args_schema is not None else args_schema,
            ttl_seconds=self.ttl_seconds if self.ttl_seconds is not None else ttl_seconds,
        )


@dataclass(frozen=True, kw_only=True)
class ApprovedCall:
    """What an approved call carries back to the gate and to a tool body that asked."""

    request_id: str
    payload: Any = None
    """What the person sent back with the approval, or else the payload the tool attached."""
    principal: str | None = None
    edited: bool = False
    """Whether the person edited the arguments."""
    approved: bool = True
    """`False` for a rejection of a body that asked with `on_reject="call"`: the body runs to decide itself."""
    reason: str | None = None
    """Why it was rejected, when it was (the text the model would have read)."""
    response: Any = None
    """What the person sent back with the approval (`Approve(payload=...)`) as JSON, `None` when nothing was."""
    approved_args: dict[str, Any] | None = None
    """The edited arguments, when edited: the call that runs must match them."""
    subject_key: str | None = None
    """The policy subject the person saw; the call that runs must keep it (services check their own)."""
    from_body: bool = False
    """The approval answered a request the call raised itself (its body, or a before-call hook)."""
    elicitation: ElicitationRequest | None = None
    """Elicitation: the request the person answered, so a re-issued call can match the server's question."""
    answer: Accept | Decline | Cancel | None = None
    """Elicitation: the person's answer, handed back to the server."""

    def as_metadata(self) -> dict[str, Any]:
        """The metadata mapping pydantic-ai hands the tool as `ctx.tool_call_metadata`."""
        return {META_KEY: self}


def deferral_of(metadata: Mapping[str, Any] | None) -> Deferral | None:
    """The deferral sayso attached to a deferred call's metadata, if sayso deferred it."""
    value = (metadata or {}).get(META_KEY)
    return value if isinstance(value, Deferral) else None


def approved_call_of(metadata: Mapping[str, Any] | None) -> ApprovedCall | None:
    """The record sayso attached to an approved call in a tool's `ctx.tool_call_metadata`."""
    value = (metadata or {}).get(META_KEY)
    return value if isinstance(value, ApprovedCall) else None
