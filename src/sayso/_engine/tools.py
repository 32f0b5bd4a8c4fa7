"""Tools as sayso sees them: per-tool options, `ask_user`, client tools and in-body approvals."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NoReturn, TypeVar, assert_never, overload

from pydantic import BaseModel, Field
from pydantic_ai import RunContext, Tool
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import PydanticSerializationError, SchemaValidator, core_schema, to_json

from .._core.decisions import QuestionAnswer, schema_problem
from .._core.finite import json_storable
from .._core.inputs import input_schema, validate_input
from .._core.policy import ToolRule
from .._core.requests import ClientTool, Question, RejectMode, ToolInfo, questions_problem
from ..exceptions import ConfigError
from .answer_types import type_ref
from .calls import (
    META_KEY,
    ApprovalDeferral,
    CallApproved,
    CallRejected,
    ClientToolDeferral,
    ElicitationAnswered,
    QuestionDeferral,
    approved_call_of,
)

F = TypeVar("F", bound=Callable[..., Any])

UNSTORABLE = (
    "which cannot be stored as JSON (return text, a number, a list or a dict of them, a pydantic model or a dataclass)"
)


def storable_result(name: str, result: Any) -> Any:
    """`result`, when the thread's history can hold it as JSON; else the call fails, naming the tool and the type.

    The model reads that failure as the call's result and the run goes on; before, pydantic's
    serialization error failed the whole run with its traceback text (a `datetime`-bearing class, an
    object without a serializer, a dict keyed by a frozenset). Text holding a lone surrogate (a
    tool's badly decoded bytes) is kept with U+FFFD in its place, as the history keeps such text
    (`_core.finite`); before, that failed the run too.
    """
    if isinstance(result, str):
        return result
    unknown: list[type] = []
    try:
        to_json(result, bytes_mode="base64", fallback=lambda value: unknown.append(type(value)))
    except PydanticSerializationError:
        try:
            return json_storable(result)
        except (TypeError, ValueError) as exc:
            raise ToolFailed(
                f"Error: the tool {name} returned a {type(result).__name__}, {UNSTORABLE}: {exc}"
            ) from None
    if not unknown:
        return result
    held = "" if unknown[0] is type(result) else f"{type(result).__name__} holding a "
    raise ToolFailed(f"Error: the tool {name} returned a {held}{unknown[0].__name__}, {UNSTORABLE}")


@dataclass(frozen=True, kw_only=True)
class ToolOptions:
    """How sayso treats a tool, declared with the [`tool`][sayso.tool] decorator."""

    requires_approval: bool = False
    """Every call waits for a person, whatever the policy says."""
    read_only: bool = False
    """The tool changes nothing (`readOnlyHint: true`); `interrupt.skip_read_only` lets it run freely."""
    idempotent: bool = False
    """Running it twice is harmless, so after a crash mid-call it runs again instead of reporting an unknown outcome."""
    hint: str | None = None
    """Why a person should look at a call, shown on the approval request."""


@overload
def tool(func: F, /) -> F: ...


@overload
def tool(
    *, requires_approval: bool = False, read_only: bool = False, idempotent: bool = False, hint: str | None = None
) -> Callable[[F], F]: ...


def tool(
    func: F | None = None,
    /,
    *,
    requires_approval: bool = False,
    read_only: bool = False,
    idempotent: bool = False,
    hint: str | None = None,
) -> F | Callable[[F], F]:
    """Declare how sayso treats a tool function; the function itself is unchanged.

    Use it bare (`@sayso.tool`) for the defaults, or with options:

    ```python
    @sayso.tool(requires_approval=True, hint="Refunds move money.")
    def refund(order_id: str) -> str: ...
    ```

    Args:
        func: the tool function, when the decorator is used without parentheses.
        requires_approval: every call waits for a person.
        read_only: the tool changes nothing.
        idempotent: running it twice is harmless.
        hint: why a person should look at a call.
    """
    options = ToolOptions(requires_approval=requires_approval, read_only=read_only, idempotent=idempotent, hint=hint)

    def mark(target: F) -> F:
        if not callable(target):
            raise TypeError(f"@sayso.tool decorates a function, not {target!r}")
        target.__sayso_tool__ = options  # type: ignore[attr-defined]  # options ride on the function itself
        return target

    return mark if func is None else mark(func)


TOOL_INFO_KEY = "sayso_tool_info"
"""Tool-definition metadata key for what a tool's source says about it (a `ToolInfo` as a dict)."""


def tool_info_of(tool_def: ToolDefinition) -> ToolInfo | None:
    """What the tool's source (an MCP server) says about it, as stamped on its definition, if anything."""
    info = (tool_def.metadata or {}).get(TOOL_INFO_KEY)
    return ToolInfo(**info) if isinstance(info, dict) and info else None


RULES_KEY = "sayso_rules"
"""Tool-definition metadata key for the names of the policy rules a tool's source adds (an MCP binding's `when`,
`approvers`, `escalate`..., docs/guides/policies.md#mcp-bindings), tried after the agent's own.

Only the names travel with the definition (plain data: on Temporal a definition crosses between
workers as JSON, and a compiled condition cannot); the rules themselves are rebuilt from the
config of the process that calls the tool (`RuleSource`), and a call whose named rules it cannot
rebuild is refused (`rules_of`).
"""

RuleSource = Callable[[ToolDefinition], tuple[ToolRule, ...] | None]
"""What rebuilds the rules a tool's source adds from this process's own config (`None`: not a tool it knows)."""


def rule_names(rules: Sequence[ToolRule]) -> list[str]:
    """The names a definition carries for `rules` (`RULES_KEY`)."""
    return [r.rule or "" for r in rules]


def rules_of(tool_def: ToolDefinition, source: RuleSource | None) -> tuple[ToolRule, ...]:
    """The policy rules the tool's source adds (an MCP binding's), rebuilt by `source`; empty when it adds none.

    Fails closed: rules the definition names that this process cannot rebuild (no source knows the
    tool, or its config binds it under other rules) refuse the call rather than let it run ungated.

    Raises:
        ConfigError: the definition names rules `source` does not rebuild.
    """
    named = (tool_def.metadata or {}).get(RULES_KEY)
    found = source(tool_def) if source is not None else None
    rules = found or ()
    if named and named != rule_names(rules):
        raise ConfigError(
            f"tool {tool_def.name!r} is bound under rules {', '.join(map(str, named))}, which this process's "
            f"config does not give it ({', '.join(rule_names(rules)) or 'none'}); the call is refused"
        )
    return rules


def options_of(tool_def: ToolDefinition) -> ToolOptions:
    """The sayso options a tool definition carries (defaults when it carries none)."""
    raw = (tool_def.metadata or {}).get(META_KEY)
    return ToolOptions(**raw) if isinstance(raw, dict) else ToolOptions()


def as_tool(obj: object, *, name: str | None = None) -> Tool[Any]:
    """Wrap a function (or pass through a pydantic-ai `Tool`) with its sayso options in the metadata."""
    if isinstance(obj, Tool):
        return obj
    if not callable(obj):
        raise ConfigError(f"{obj!r} is not a function or a pydantic-ai Tool")
    options = getattr(obj, "__sayso_tool__", ToolOptions())
    assert isinstance(options, ToolOptions)
    return Tool(obj, name=name, metadata={META_KEY: asdict(options)})


# ask_user


class AskUserQuestion(BaseModel):
    """One question for the person."""

    question: str = Field(min_length=1, description="The question, in plain words.")
    choices: list[str] = Field(default_factory=list, description="Suggested answers; the person may write their own.")
    multiple: bool = Field(default=False, description="Whether the person may pick several answers.")


async def ask_user(questions: list[AskUserQuestion]) -> list[QuestionAnswer]:
    """Ask the person one or more questions and wait for the answers.

    Use it only when you cannot go on without the person's input. Each answer is a list of
    strings: one of the choices or the person's own words.

    Args:
        questions: the questions, each with optional choices.
    """
    asked = tuple(Question(question=q.question, choices=tuple(q.choices), multiple=q.multiple) for q in questions)
    if problem := questions_problem(asked):
        raise ModelRetry(f"ask_user: {problem}")
    raise CallDeferred(metadata=QuestionDeferral(questions=asked).as_metadata(), kind="question")


ASK_USER_TOOL: Tool[Any] = Tool(ask_user, name="ask_user")

BUILTIN_TOOLS = frozenset({ASK_USER_TOOL.name})
"""Tool names sayso itself provides; a client tool of that name stands for the built-in."""


# client tools


_ANY_ARGS = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))


def client_tool(toolset: AbstractToolset[Any], declared: ClientTool) -> ToolsetTool[Any]:
    """A client's tool as the engine offers it to the model; `toolset` answers its calls."""
    return ToolsetTool(
        toolset=toolset,
        tool_def=ToolDefinition(
            name=declared.name, description=declared.description, parameters_json_schema=declared.parameters
        ),
        max_retries=3,
        args_validator=_ANY_ARGS,
    )


def defer_client_call(declared: ClientTool, tool_args: dict[str, Any]) -> NoReturn:
    """A call of a client's tool: checked against the tool's schema, then deferred until the client answers.

    Raises:
        ModelRetry: the arguments do not match the schema (the model is told and tries again).
        CallDeferred: always otherwise; the run pauses with a client-tool request.
    """
    problem = schema_problem(tool_args, declared.parameters)
    if problem is not None:
        raise ModelRetry(f"arguments for {declared.name!r} do not match its schema: {problem}")
    raise CallDeferred(
        metadata=ClientToolDeferral(description=declared.description, args_schema=declared.parameters).as_metadata()
    )


class ClientToolset(AbstractToolset[Any]):
    """The client's tools that an agent may call, on their own; a call pauses the run until the client answers.

    sayso's agents take their client tools through their gate (`GateToolset`), so that an agent
    has one toolset; this stands alone for other engines.
    """

    def __init__(self, tools: Sequence[ClientTool]) -> None:
        self.tools = {t.name: t for t in tools}

    @property
    def id(self) -> str:
        return "sayso-client-tools"

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {t.name: client_tool(self, t) for t in self.tools.values()}

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        defer_client_call(self.tools[name], tool_args)  # raises: the call waits for the client


# approval from inside a tool body


@dataclass(frozen=True, kw_only=True)
class Approval:
    """What a tool that asked for approval from inside its body reads when it runs again."""

    payload: Any
    """The payload the person sent back with the approval (ADK's confirmation payload), or else the one the
    tool attached when it asked."""
    principal: str | None
    """Who decided."""
    edited: bool
    """Whether the person edited the arguments (the body receives the edited ones)."""
    approved: bool = True
    """`False` when the person rejected the call and the tool asked with `on_reject="call"`: the body
    decides what the rejection returns."""
    reason: str | None = None
    """The person's reason, when they rejected the call."""
    response: Any = None
    """The feedback the person sent with the approval (`Approve(payload=...)`, the same data as `payload`),
    validated against the tool's `response_schema` (a model instance where a model was given); `None` when
    nothing was sent, or on a rejection."""


def require_approval(
    ctx: RunContext[Any],
    *,
    hint: str,
    payload: Any = None,
    response_schema: object = None,
    on_reject: RejectMode = "deny",
) -> Approval:
    """Pause the run until a person approves this call; returns the approval when the body runs again.

    Call it near the top of a tool body (as ADK's `request_confirmation`): the first time it
    raises and the run pauses; once approved, the body runs again from the top and this
    returns the decision, so the tool can act on it.

    ```python
    def review_itinerary(ctx: RunContext[Any], itinerary: list[str]) -> str:
        approval = require_approval(
            ctx, hint="Which items appeal to you?", payload=itinerary, response_schema=Feedback, on_reject="call"
        )
        if not approval.approved:
            return f"Itinerary rejected: {approval.reason}"
        return f"Approved; the person said: {approval.response.comment}"
    ```

    Args:
        ctx: the tool's run context.
        hint: why the person should look at this call.
        payload: data the person sees with the request and the tool reads back.
        response_schema: what the person sends with an approval (`Approve(payload=...)`), checked
            like a workflow's `RequestInput`: a Python type, a pydantic model or a JSON Schema dict.
            An answer that does not fit is refused and the request stays open: a type is checked by
            itself when the approval is decided (its validators too), so the process deciding must
            load it (a class at a module's top level; docs/guides/workflows.md#confirmation-with-data).
        on_reject: `deny` (the default): a rejection denies the call and the model reads why.
            `call`: the body runs again on a rejection too, reads `approved` as false and decides
            what to return (ADK Go's `Confirmed=false`).

    Raises:
        ConfigError: `response_schema` is not a type, a model or a JSON Schema dict.
    """
    if ctx.tool_call_approved:
        match approved_call_of(ctx.tool_call_metadata):
            case None:
                return Approval(payload=None, principal=None, edited=False)
            case CallApproved() as approved:
                response = approved.response
                if response_schema is not None:
                    response = validate_input(response_schema, response)
                return Approval(
                    payload=approved.payload, principal=approved.principal, edited=approved.edited, response=response
                )
            case CallRejected() as rejected:
                return Approval(
                    payload=rejected.payload,
                    principal=rejected.principal,
                    edited=False,
                    approved=False,
                    reason=rejected.reason,
                )
            case ElicitationAnswered() as answered:
                # A before-call hook's page was visited: the call goes on as approved, with nothing sent back.
                response = validate_input(response_schema, None) if response_schema is not None else None
                return Approval(payload=None, principal=answered.principal, edited=False, response=response)
            case other:
                assert_never(other)
    schema = input_schema(response_schema).json_schema if response_schema is not None else None
    raise ApprovalRequired(
        metadata=ApprovalDeferral(
            hint=hint,
            payload=payload,
            from_body=True,
            response_schema=schema,
            response_type=type_ref(response_schema),
            on_reject=on_reject,
        ).as_metadata()
    )
