"""kagent's HITL JSON as sayso writes it (v1 payloads and 0.x DataParts), as `TypedDict`s.

Plain dicts at run time (they go into protobuf `Struct`s as they are); one shape per message for
the type checker, so a key kagent's strict models do not know cannot slip into what is sent.
What comes in from the wire is read as untrusted JSON and checked where it is read.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypeAlias

from pydantic.json_schema import JsonSchemaValue
from typing_extensions import TypedDict

from ...._core.requests import RequestKind, Scope
from ...._runtime import ApproversJson, QuorumJson


class QuestionJson(TypedDict):
    """One question of an `ask_user` call, as kagent writes it."""

    question: str
    choices: list[str]
    multiple: bool


class ToolCallJson(TypedDict):
    """A tool call a pause shows: kagent's `{id, call_id, name, args}`."""

    id: str
    call_id: str
    name: str | None
    args: dict[str, Any]


class NestedJson(TypedDict):
    """A subagent's pause inside its parent's (docs/guides/a2a.md): which child task, and the child's own calls."""

    subagent_name: str | None
    task_id: str
    context_id: str
    tools: list[ToolCallJson]


class AskUserRequestJson(TypedDict):
    type: Literal["ask_user_request"]
    id: str
    questions: list[QuestionJson]
    nested: NotRequired[NestedJson]


class ToolApprovalRequestJson(TypedDict):
    type: Literal["tool_approval_request"]
    hint: str
    tools: list[ToolCallJson]
    nested: NotRequired[NestedJson]


HitlRequestJson: TypeAlias = AskUserRequestJson | ToolApprovalRequestJson
"""The v1 payload of a pause message."""


class AnswerJson(TypedDict):
    answer: list[str]


class AskUserResponseJson(TypedDict):
    type: Literal["ask_user_response"]
    id: str
    answers: list[AnswerJson]


class ApprovalJson(TypedDict):
    id: str
    approved: bool
    rejection_reason: NotRequired[str]


class ToolApprovalResponseJson(TypedDict):
    type: Literal["tool_approval_response"]
    approvals: list[ApprovalJson]


HitlResponseJson: TypeAlias = AskUserResponseJson | ToolApprovalResponseJson
"""The v1 payload of a decision message (what a client sends, or sayso sends a remote agent)."""


class SubjectJson(TypedDict):
    key: str
    label: str


class ToolInfoJson(TypedDict):
    """What a tool's source says about it (`ToolInfo`)."""

    source: str | None
    title: str | None
    description: str | None
    read_only: bool
    destructive: bool | None


class SaysoRequestJson(TypedDict):
    """What sayso says about one shown request under its own key, beside kagent's payload."""

    id: str
    request_id: str
    kind: RequestKind
    agent_path: str
    run_id: str
    expires_at: float | None
    subject: NotRequired[SubjectJson | None]
    scopes: NotRequired[list[Scope]]
    hint: NotRequired[str]
    why: NotRequired[str]
    """Why the policy asked: `asked because amount 250 > 100 (rule refunds-large)`."""
    rule: NotRequired[str | None]
    """The policy rule that asked, by name."""
    args_schema: NotRequired[JsonSchemaValue | None]
    tool: NotRequired[ToolInfoJson | None]
    response_schema: NotRequired[JsonSchemaValue | None]
    mode: NotRequired[str]
    message: NotRequired[str]
    server: NotRequired[str | None]
    requested_schema: NotRequired[JsonSchemaValue | None]
    url: NotRequired[str | None]
    durable: NotRequired[bool]
    respond_with: NotRequired[str]
    node: NotRequired[str]
    payload: NotRequired[Any]
    approvers: NotRequired[ApproversJson]
    """A routed request: who may decide it (docs/guides/routing.md)."""
    quorum: NotRequired[QuorumJson]
    """A routed request that needs several approvals: where the vote stands."""


class SaysoPayloadJson(TypedDict):
    requests: list[SaysoRequestJson]


class LegacyCallJson(TypedDict):
    """A call in kagent 0.x's confirmation: `originalFunctionCall`."""

    name: str | None
    args: dict[str, Any]
    id: str


class LegacyHitlPart(TypedDict):
    name: str
    id: str
    originalFunctionCall: LegacyCallJson


class LegacyNestedJson(TypedDict):
    """A subagent's pause in 0.x terms: the child task and its own confirmations."""

    task_id: str
    context_id: str
    subagent_name: str | None
    hitl_parts: list[LegacyHitlPart]


class LegacyConfirmationJson(TypedDict):
    hint: str
    confirmed: bool
    payload: LegacyNestedJson | None
    """Always written (`null` when empty): kagent 0.x clients read it without a default."""


class LegacyConfirmationArgs(TypedDict):
    originalFunctionCall: LegacyCallJson
    toolConfirmation: LegacyConfirmationJson


class LegacyConfirmationPart(TypedDict):
    """One `adk_request_confirmation` DataPart's data."""

    name: str
    id: str
    args: LegacyConfirmationArgs


class LegacyDecisionJson(TypedDict):
    """kagent 0.x's decision DataPart: uniform, or a batch by call id."""

    decision_type: Literal["approve", "reject", "batch"]
    ask_user_answers: NotRequired[list[AnswerJson]]
    rejection_reason: NotRequired[str]
    decisions: NotRequired[dict[str, Literal["approve", "reject"]]]
    rejection_reasons: NotRequired[dict[str, str]]


class SaysoDecisionJson(TypedDict):
    """A decision as sayso's key shows it in a task's history: its kind and what a kagent response cannot say."""

    kind: str
    scope: NotRequired[Scope]
    edited_args: NotRequired[dict[str, Any]]
    payload: NotRequired[Any]
    value: NotRequired[Any]
    content: NotRequired[Any]
    reason: NotRequired[str]


class SaysoRecordJson(TypedDict):
    """Who decided one shown request, how and when, under sayso's key of a decision message."""

    id: str
    request_id: str
    decision: SaysoDecisionJson
    by: str
    principal: str | None
    decided_at: float
