"""The things a paused run waits on, as plain data.

A request is created by the runtime when the engine defers a tool call, persisted before
it is reported, and its answer lives in a separate decision. It never changes afterwards but for
one thing: an escalation step's `add_approvers` widen its `routing` (docs/guides/routing.md#escalation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, ClassVar, Literal, Self, TypeAlias

from pydantic import ConfigDict, Discriminator, TypeAdapter, ValidationError
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticSerializationError

from ..exceptions import InvalidInput
from .escalation import EscalationStep, OnTimeout, next_step_at
from .finite import storable
from .routing import Routing

RequestKind: TypeAlias = Literal["approval", "question", "client_tool", "input", "elicitation"]
"""Every kind of request sayso knows; `input` and `elicitation` come with workflows and MCP."""

Scope: TypeAlias = Literal["once", "thread", "always"]
"""How far an approval reaches: this call, this thread, or every later call on the same subject."""

SCOPES_BY_WIDTH: tuple[Scope, ...] = ("once", "thread", "always")

DEFERRED = ConfigDict(defer_build=True)
"""The config of sayso's module-level type adapters: each builds its validator on first use, so a
command pays only for the types it reads (`sayso inbox` never decodes a decision, for one). A
dataclass carries it with `pydantic.with_config` instead, as pydantic takes no config for one."""

InterruptMode: TypeAlias = Literal["approval", "form", "url"]
"""The kind of pause a request is, in hastekit's words: a verdict on a call (`approval`), data to
give (`form`: answers, a workflow's input, a client tool's result, an MCP form), or a page to visit
(`url`)."""

RejectMode: TypeAlias = Literal["deny", "call"]
"""What a rejection of a tool's in-body approval does: deny the call, or run the body again to decide."""


@dataclass(frozen=True, kw_only=True)
class Subject:
    """What a remembered decision covers: a stable `key` and the `label` the person saw."""

    key: str
    """Stable identity of the resource, compared when a grant is looked up."""
    label: str
    """Words shown to the person, such as `folder reports/`."""

    @property
    def rememberable(self) -> bool:
        """Whether a grant can be kept for it, so a wider scope than `once` may be offered.

        No store keeps a key or label holding a NUL or a lone surrogate (a subject function may read them
        from a model's arguments): such a call is approved once at a time.
        """
        return storable(self.key) and storable(self.label)


@dataclass(frozen=True, kw_only=True)
class Question:
    """One question of an `ask_user` call."""

    question: str
    """The text shown to the person."""
    choices: tuple[str, ...] = ()
    """Suggested answers; the person may always give their own words instead of them, or beside one."""
    multiple: bool = False
    """Whether several choices may be picked (without it: one choice, one answer in the person's own words, or
    one of each)."""


@dataclass(frozen=True, kw_only=True)
class ToolInfo:
    """What a tool's source says about the tool, shown with a request for it (an MCP server's annotations)."""

    source: str | None = None
    """Where the tool comes from, such as `mcp:files` for the MCP server configured as `files`."""
    title: str | None = None
    """The tool's human-readable title."""
    description: str | None = None
    """The tool's description, as the model reads it."""
    read_only: bool = False
    """The source says the tool changes nothing (`readOnlyHint: true`)."""
    destructive: bool | None = None
    """The source's `destructiveHint`; `None` when it gave none (MCP then means: may destroy)."""


@dataclass(frozen=True, kw_only=True)
class RequestBase:
    """What every kind of request has; built alone where a request is gathered before its kind is known (`of`)."""

    request_id: str
    """Unguessable id (at least 128 random bits) that decisions are addressed to."""
    run_id: str
    """The run that waits on this request (for a delegate, the delegate's own run)."""
    thread_id: str
    """The thread the run belongs to."""
    agent_path: str
    """Which agent asked, as a path from the top-level agent: `coordinator/analyst`."""
    tool_call_id: str
    """The model's id for the call this request is about."""
    tool_name: str
    """The tool the model called."""
    args: dict[str, Any] = field(default_factory=dict)
    """The arguments the model proposed, exactly as it sent them."""
    created_at: float
    """Seconds since the epoch when the request was created."""
    expires_at: float | None = None
    """After this time a decision is refused as expired; `None` waits forever."""
    principal: str | None = None
    """The principal the run acts for (the thread's owner), bound at creation."""
    parent_call_id: str | None = None
    """For a delegate's request: the parent's tool call that handed the work down."""
    redact: tuple[str, ...] = ()
    """Argument fields hidden wherever the request is shown."""
    chat_thread_id: str | None = None
    """The person's chat (the top-level run's thread) when the request was raised below it, by a delegate or a
    workflow's agent node, whose own `thread_id` is the delegate's; `None` when it is the request's own thread.
    A `thread` grant is bound to the chat, and interfaces link the request to it."""
    routing: Routing | None = None
    """Who decides it and how many must agree, when its rule names `approvers` (docs/guides/routing.md);
    `None`: the thread's owner or an approver for its agent decides alone."""

    @property
    def is_nested(self) -> bool:
        """Whether an agent below the top-level run asked: hastekit's `IsNested`.

        A delegate (local or remote) or a workflow's agent node raised it, and it bubbled up to the
        run the person started.
        """
        return "/" in self.agent_path

    @classmethod
    def of(cls, head: RequestBase, **own: Any) -> Self:
        """This kind of request with `head`'s fields (gathered before the kind was known) and its `own` ones."""
        return cls(**{f.name: getattr(head, f.name) for f in fields(RequestBase)}, **own)


@dataclass(frozen=True, kw_only=True)
class RuleTerms:
    """What a request a rule raised carries from the rule: why it asked, its name, its escalation and timeout.

    An approval (an `interrupt.tools` rule, an MCP binding) and a workflow's input (its workflow's rule) have it.
    """

    asked_because: str | None = None
    """Why the policy asked (`amount 250 > 100`), recorded when the request was raised; `None` when a tool's
    body, a hook or a service asked, or no rule said why."""
    rule: str | None = None
    """The name of the policy rule that asked (`refunds-large`); `None` when no rule did."""
    escalation: tuple[EscalationStep, ...] = ()
    """The rule's escalation steps, due from `created_at` while the request waits."""
    on_timeout: OnTimeout | None = None
    """What the request's expiry decides (the rule's `on_timeout`); `None`: it expires."""

    @property
    def why(self) -> str | None:
        """Why the request asked, as every interface shows it: `asked because amount 250 > 100 (rule refunds-large)`."""
        if self.asked_because is None:
            return None
        return f"asked because {self.asked_because}" + (f" (rule {self.rule})" if self.rule else "")


@dataclass(frozen=True, kw_only=True)
class ApprovalRequest(RequestBase, RuleTerms):
    """A tool call that runs only if a person approves it."""

    kind: Literal["approval"] = "approval"
    mode: ClassVar[InterruptMode] = "approval"
    hint: str
    """Why approval is needed, in the tool's own words or the default wording."""
    args_schema: JsonSchemaValue | None = None
    """The tool's JSON schema, used to validate edited arguments."""
    subject: Subject | None = None
    """The resource a remembered approval would cover."""
    scopes: tuple[Scope, ...] = ("once",)
    """The scopes the person may choose from, always including `once`."""
    payload: Any = None
    """Data the tool attached when it asked for approval from inside its body."""
    from_body: bool = False
    """True when the tool asked from inside its body; on approval the body runs again."""
    binding: str | None = None
    """Hash of tool, canonical arguments and subject; the executed call must match it."""
    service_request: str | None = None
    """The id a service gave when it asked for approval through its reply (`interrupt.tool_approvals`)."""
    tool_info: ToolInfo | None = None
    """What the tool's source (an MCP server) says about it: title, description, destructive or read-only."""
    response_schema: JsonSchemaValue | None = None
    """The JSON Schema of the feedback the person sends with an approval (`Approve(payload=...)`), when the
    tool asked for one from its body; `None`: an approval carries no payload."""
    response_type: str | None = None
    """The Python type the tool gave as its `response_schema`, by name (`tools:Feedback`), when its JSON Schema
    may not carry all it checks (a validator, an aware datetime): the process deciding the approval loads it and
    checks the feedback by it before recording anything. `None`: the JSON Schema says it all."""
    on_reject: RejectMode = "deny"
    """`deny`: a rejection denies the call and the model reads why. `call`: the body runs again and
    decides what to return (it reads `Approval.approved` as false), as ADK's `Confirmed=false`."""


@dataclass(frozen=True, kw_only=True)
class QuestionRequest(RequestBase):
    """An `ask_user` call: one or more questions for the person."""

    kind: Literal["question"] = "question"
    mode: ClassVar[InterruptMode] = "form"
    questions: tuple[Question, ...]


@dataclass(frozen=True, kw_only=True)
class ClientToolRequest(RequestBase):
    """A call to a tool the client runs itself (in the person's browser, say)."""

    kind: Literal["client_tool"] = "client_tool"
    mode: ClassVar[InterruptMode] = "form"
    description: str | None = None
    """The tool's description as the client declared it."""
    args_schema: JsonSchemaValue | None = None
    """The JSON schema the client declared for the tool's arguments."""


@dataclass(frozen=True, kw_only=True)
class DelegateRequest(RequestBase):
    """A parent's call to a delegate that paused; it is answered by the delegate's own requests, never directly."""

    kind: Literal["delegate"] = "delegate"
    mode: ClassVar[InterruptMode] = "approval"
    """A delegate's pause stands for the requests below it, each with a mode of its own."""
    child_run_id: str
    """The delegate's run, which holds the requests a person answers."""


ElicitationMode: TypeAlias = Literal["form", "url"]
"""How an MCP server asks: a form with a requested schema, or a page for the person to visit."""

ElicitationDelivery: TypeAlias = Literal["live", "round_trip", "task", "retry"]
"""How the person's answer reaches whoever asked (docs/guides/mcp.md#which-answers-survive-a-restart):

- `live`: the server asked mid-call on a handshake-era session; the answer goes back on that call
  while the process holding it lives, else the call is issued again with the stored answer
  (read-only or idempotent tools, or `replay_elicitation`), else the call did not complete;
- `round_trip`: a stateless server asked through its result (SEP-2322); the call is issued again
  with the answer, which is how that protocol works, so it is durable;
- `task`: a server task parked on input-required; any process answers it by the task's id;
- `retry`: the call was refused until the person visits a URL (the server's URL-elicitation-required
  error, or a before-call hook); once they say done, the call is issued again.
"""


@dataclass(frozen=True, kw_only=True)
class ElicitationRequest(RequestBase):
    """An MCP server asked the person for something while serving a tool call.

    See docs/guides/mcp.md#when-a-server-asks-the-person.

    A form (`message` + `requested_schema`) is answered with content that fits the schema; a
    URL is visited out of band and answered "done" (accept without content). Either can be
    declined or cancelled. `tool_name` and `args` are the call the server was serving.
    """

    kind: Literal["elicitation"] = "elicitation"
    mode: ElicitationMode
    message: str
    """What the server says it needs, shown to the person."""
    server: str | None = None
    """The MCP server that asked, by its name under `mcp_servers`; `None` when a before-call hook asked."""
    requested_schema: JsonSchemaValue | None = None
    """Form mode: the JSON schema (flat object of primitive fields) the content must fit."""
    url: str | None = None
    """URL mode: the page the person visits."""
    elicitation_id: str | None = None
    """URL mode: the server's id for this elicitation (it may announce completion by it)."""
    delivery: ElicitationDelivery = "live"
    """How the answer reaches the server, and so whether it survives a restart (see `ElicitationDelivery`)."""
    task: dict[str, Any] | None = None
    """`task` delivery: the server's create-task result (its task id), so any process can answer the task."""
    replay: bool = False
    """`live` delivery: the call may be issued again with the answer (a read-only or idempotent tool, or a
    binding's `replay_elicitation`), so a process other than the one holding the call can deliver it."""
    holder: str | None = None
    """`live` delivery: the runtime whose MCP host holds the call (its lease-holder id), which alone can hand the
    answer back on it; on Temporal the resumed call is run on that worker (docs/guides/temporal.md)."""

    @property
    def needs_holder(self) -> bool:
        """Whether only the process holding the live call that asked can deliver the answer.

        Such a request is open only while that process lives: it holds the paused run (a lease it
        renews), answers from elsewhere are handed to it, and when it stops the request closes as
        cancelled (docs/guides/mcp.md#which-answers-survive-a-restart).
        """
        return self.delivery == "live" and not self.replay


@dataclass(frozen=True, kw_only=True)
class InputRequest(RequestBase, RuleTerms):
    """A workflow node's `RequestInput`: a message, data to show, and the schema the answer must fit.

    `tool_name` is the node's name and `tool_call_id` the engine's key for this very question
    (node, visit and question number), so a repeated pause of a loop is a new request.
    """

    kind: Literal["input"] = "input"
    mode: ClassVar[InterruptMode] = "form"
    node: str
    """The workflow node that asked."""
    message: str
    """What the person reads."""
    payload: Any = None
    """Data shown with the message, as JSON."""
    response_schema: JsonSchemaValue = field(default_factory=dict)
    """The JSON Schema the answer must fit; `{}` takes any JSON value."""


@dataclass(frozen=True, kw_only=True)
class ClientTool:
    """A tool the client runs itself (in the person's browser, say), declared with each run."""

    name: str
    description: str = ""
    parameters: JsonSchemaValue = field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON schema of the arguments; calls that break it go back to the model to correct."""
    context: str | None = None
    """What the client knows that goes with the tool (say, the data sources it can offer); it reaches
    only the agents allowed to call the tool, as part of their instructions."""


CLIENT_TOOLS_ADAPTER: TypeAdapter[tuple[ClientTool, ...]] = TypeAdapter(tuple[ClientTool, ...], config=DEFERRED)
"""A run's client tools as stored (built on first use, like every adapter here: `DEFERRED`)."""


Request: TypeAlias = Annotated[
    ApprovalRequest | QuestionRequest | ClientToolRequest | DelegateRequest | ElicitationRequest | InputRequest,
    Discriminator("kind"),
]
"""Any request a pause can hold."""

REQUEST_ADAPTER: TypeAdapter[Request] = TypeAdapter(Request, config=DEFERRED)
"""The one adapter used to persist and load requests."""


def questions_problem(questions: Sequence[Question]) -> str | None:
    """Why `questions` cannot be put to a person (there are none, or one has no text); `None` when they can.

    One rule for a model's `ask_user` and a remote agent's question, which a person could otherwise
    only answer with nothing.
    """
    if not questions:
        return "at least one question is needed"
    blank = next((n for n, q in enumerate(questions, 1) if not q.question.strip()), None)
    return None if blank is None else f"question {blank} has no text"


def readable_pause(requests: Sequence[Request]) -> list[Request]:
    """`requests`, built from what another system sent (a remote agent's pause), as the store will read them back.

    The store's own adapter judges each one, so no second rule says what a request may hold: a pause
    once saved a remote agent's numeric hint, and no inbox could be read again. The requests must also
    make a pause a person can answer: each question asks something, and no two requests stand for one
    call, as each answer goes back by its call's id.

    Raises:
        InvalidInput: a request would not read back, or the pause could not be answered; the problem says which
            request and why.
    """
    read: list[Request] = []
    for number, request in enumerate(requests, 1):
        where = f"request {number} of {len(requests)}"
        try:
            again = REQUEST_ADAPTER.validate_json(REQUEST_ADAPTER.dump_json(request, warnings=False))
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(part) for part in first["loc"][1:])  # the first is the kind's tag
            shown = repr(first["input"])
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise InvalidInput(f"{where}: {at + ': ' if at else ''}{first['msg']}, not {shown}") from None
        except PydanticSerializationError as exc:
            raise InvalidInput(f"{where} cannot be written as JSON: {exc}") from None
        if isinstance(again, QuestionRequest) and (problem := questions_problem(again.questions)):
            raise InvalidInput(f"{where}: {problem}")
        if any(r.tool_call_id == again.tool_call_id for r in read):
            raise InvalidInput(f"{where}: its call id {again.tool_call_id!r} is another request's too")
        read.append(again)
    return read


REDACTED = "«redacted»"


def shown_args(request: RequestBase) -> dict[str, Any]:
    """The arguments as they may be shown: configured secret fields replaced at any depth."""
    return _redact(request.args, frozenset(request.redact)) if request.redact else request.args


def unredacted(edited: Any, original: Any, fields: Sequence[str]) -> Any:
    """`edited` with each field of `fields` a person saw as `REDACTED`, and left so, given back `original`'s value.

    Every interface shows redacted fields as the placeholder, and an edit (or an approval naming the arguments
    it saw) sends it back: the secret the person never saw is kept, never replaced by the placeholder.
    """
    if not fields:
        return edited
    if isinstance(edited, dict) and isinstance(original, dict):
        return {
            key: original[key]
            if key in fields and value == REDACTED and key in original
            else unredacted(value, original.get(key), fields)
            for key, value in edited.items()
        }
    if isinstance(edited, list) and isinstance(original, list):
        return [unredacted(v, original[i] if i < len(original) else None, fields) for i, v in enumerate(edited)]
    return edited


def redacted(value: Any, fields: Sequence[str]) -> Any:
    """`value` as it may be shown: every object field named in `fields` replaced, at any depth."""
    return _redact(value, frozenset(fields)) if fields else value


def _redact(value: Any, fields: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: REDACTED if k in fields else _redact(v, fields) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, fields) for v in value]
    return value


def default_hint(tool_name: str) -> str:
    """The hint shown when a gated tool gives none of its own."""
    return f"Approval is required for tool(s): {tool_name}"


def offered_scopes(widest: Scope) -> tuple[Scope, ...]:
    """Every scope up to `widest`, narrowest first; `once` is always offered."""
    return SCOPES_BY_WIDTH[: SCOPES_BY_WIDTH.index(widest) + 1]


def escalation_due(request: Request, done: int) -> float | None:
    """When the request's next escalation step is due once `done` steps fired; `None` when no step is left."""
    if not isinstance(request, RuleTerms) or not request.escalation:
        return None
    return next_step_at(request.created_at, request.escalation, done, request.expires_at)


def is_remote_call(request: Request) -> bool:
    """Whether a request mirrors a remote agent's call (kagent's HITL carries no edited arguments)."""
    return (
        isinstance(request, ApprovalRequest) and isinstance(request.payload, dict) and "remote_agent" in request.payload
    )
