"""The REST wire format, outbound: pydantic models of the JSON the server sends, the one source of truth.

The JSON is built by `sayso.request_json` / `sayso.run_json` (and `entry_json` here), so every
interface shows the same shapes; each REST route declares its model as FastAPI's `response_model`,
which checks and serializes what it answers (only the fields the JSON has: kind-specific fields
appear only on their kind). A field the JSON has and its model does not document is refused
(`extra="forbid"`), so the OpenAPI document cannot fall behind what is sent.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, WithJsonSchema
from pydantic.json_schema import JsonSchemaValue

from .._core.decisions import ArgEdit
from .._core.requests import InterruptMode, RequestKind, Scope
from .._runtime import TranscriptEntry, rfc3339


class _Out(BaseModel):
    """An outbound shape: every field it sends is documented here."""

    model_config = ConfigDict(extra="forbid")


def _rfc3339_text(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


Rfc3339 = Annotated[
    datetime,
    PlainSerializer(_rfc3339_text, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""A time as sayso's JSON writes it: RFC 3339 in UTC with milliseconds (`2026-01-02T03:04:05.678Z`)."""

EPOCH_NOTE = "Seconds since the epoch. Deprecated: read `{}` (RFC 3339) instead; kept for existing clients."


def _epoch(rfc3339_field: str) -> Any:
    """A deprecated epoch-seconds field, documented as such in the OpenAPI document."""
    return Field(description=EPOCH_NOTE.format(rfc3339_field), json_schema_extra={"deprecated": True})


class SubjectOut(_Out):
    """What a remembered approval would cover."""

    key: str
    label: str


class QuestionOut(_Out):
    """One question of a question request."""

    question: str
    choices: list[str]
    multiple: bool


class ToolInfoOut(_Out):
    """What a tool's source (an MCP server) says about the tool."""

    source: str | None = None
    """Where the tool comes from, such as `mcp:files`."""
    title: str | None = None
    description: str | None = None
    read_only: bool = False
    destructive: bool | None = None
    """The source's `destructiveHint`; `null` when it gave none (MCP then means: may destroy)."""


class ApproverOut(_Out):
    name: str
    groups: list[str]
    """The rule's groups it was named through; empty when named directly."""


class ApproversOut(_Out):
    """Who may decide a routed request (docs/guides/routing.md)."""

    named: list[str]
    """The rule's `approvers` as written: principals and groups."""
    principals: list[ApproverOut]
    """Everyone who may decide it: the run's starter is left out unless `self_approval`."""
    approvals_required: int
    self_approval: bool


class VoteOut(_Out):
    principal: str
    decision: Literal["approve", "reject"]
    round: int
    """0 on the proposed arguments; each edit starts the next round."""
    voted: Rfc3339 | None
    via: str | None
    reason: str | None
    edited: bool


class QuorumOut(_Out):
    """Where a request that needs several approvals stands (docs/guides/routing.md#quorum)."""

    text: str
    """What a person reads: `1 of 2, waiting for sre`."""
    required: int
    approved_by: list[str]
    """Who approved the arguments as they stand."""
    waiting_for: list[str]
    """Approvers (or their groups) who may still approve."""
    round: int
    args: Any
    """The arguments an edit changed them to, which the next approvers approve; `null`: the proposed ones."""
    votes: list[VoteOut]


class RequestOut(_Out):
    """A request a paused run waits on; kind-specific fields appear only on their kind."""

    id: str
    kind: RequestKind
    mode: InterruptMode
    """What the person is asked for, in hastekit's words: a verdict on a call (`approval`), data to give
    (`form`: answers, a workflow's input, a client tool's result, an MCP form) or a page to visit (`url`)."""
    is_nested: bool
    """Whether an agent below the top-level run asked (hastekit's `is_nested`); `agent_path` says which."""
    run_id: str
    thread_id: str
    """The thread of the run that asked (a delegate's own thread when a delegate asked)."""
    chat_thread_id: str
    """The person's chat the request belongs to: `thread_id`, or the top-level thread above a delegate."""
    agent_path: str
    parent_call_id: str | None
    """The delegate call this request was raised below (`null` at the top level)."""
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    created: Rfc3339
    """When the request was opened (RFC 3339)."""
    expires: Rfc3339 | None
    """When it stops taking decisions (RFC 3339); `null` waits forever."""
    created_at: float = _epoch("created")
    expires_at: float | None = _epoch("expires")
    hint: str | None = None
    """approval: why approval is needed."""
    subject: SubjectOut | None = None
    """approval: the resource a remembered approval would cover."""
    scopes: list[Scope] | None = None
    """approval: the scopes the person may choose."""
    editable: bool | None = None
    """approval: whether it takes edited arguments (`false`: a remote agent's call; kagent's HITL carries none)."""
    payload: Any = None
    """approval: data the tool attached; input: data shown with the message (an itinerary to review, say)."""
    response_schema: JsonSchemaValue | None = None
    """input: the JSON Schema the answer must fit (`{}`: any JSON value); approval: the schema of the
    feedback sent with an approval, when the tool asked for one."""
    tool: ToolInfoOut | None = None
    """approval: what the tool's source (an MCP server) says about the tool."""
    on_reject: Literal["deny", "call"] | None = None
    """approval: `call` when a rejection runs the tool's body again to decide the result."""
    asked_because: str | None = None
    """approval, input: why the policy asked (`amount 250 > 100`); `null` when a tool's body, a hook or a service
    asked, or no rule said why."""
    rule: str | None = None
    """approval, input: the name of the policy rule that asked (`refunds-large`, `workflow:NAME`)."""
    why: str | None = None
    """approval, input: the two as people read them: `asked because amount 250 > 100 (rule refunds-large)`."""
    node: str | None = None
    """input: the workflow node that asks."""
    message: str | None = None
    """input: what the person reads; elicitation: what the server asks for."""
    questions: list[QuestionOut] | None = None
    """question: the questions."""
    description: str | None = None
    """client_tool: the tool's description."""
    args_schema: JsonSchemaValue | None = None
    """client_tool: the declared JSON schema."""
    server: str | None = None
    """elicitation: the MCP server that asked (`null`: the agent's before-call hook)."""
    requested_schema: JsonSchemaValue | None = None
    """elicitation (form): the JSON schema the content must fit."""
    url: str | None = None
    """elicitation (url): the page to visit; then answer `accept` ("done"), `decline` or `cancel`."""
    elicitation_id: str | None = None
    """elicitation (url): the server's id for it."""
    durable: bool | None = None
    """elicitation: whether the answer reaches the server from any process (false: a form on a live call)."""
    approvers: ApproversOut | None = None
    """A routed request: who may decide it."""
    quorum: QuorumOut | None = None
    """A routed request that needs several approvals: where the vote stands."""


class RunOut(_Out):
    """Where a run stands."""

    run_id: str
    thread_id: str
    agent: str
    status: Literal["running", "paused", "completed", "failed", "cancelled"]
    output: str | None
    error: str | None
    requests: list[RequestOut]


class DecideOut(_Out):
    """The outcome of a decision."""

    request_id: str
    recorded: bool
    """False when the decision repeated the one already taken (a harmless no-op)."""
    run: RunOut
    quorum: QuorumOut | None = None
    """A request that needs several approvals: where it stands after this vote."""


class InboxOut(_Out):
    """A page of open requests, oldest first."""

    requests: list[RequestOut]
    next_cursor: str | None
    """Pass as `cursor` to get the next page; `null` on the last page."""
    total: int
    """How many open requests the filters list for the caller across every page (`limit=1` reads just the count)."""


class RequestStateOut(_Out):
    """A request and whether it is still waiting; once decided, who decided, through which interface, and when."""

    request: RequestOut
    status: Literal["open", "decided", "closed", "expired"]
    """`closed`: the run went on without a decision for it (a forced resume, a new message, a cancel); the skip
    that closed it is `decision`, and `decided_by` / `principal` say who moved the run on."""
    decision: dict[str, Any] | None
    decided_by: Literal["person", "permission", "service", "expiry", "system"] | None
    """Who took the decision: a person, a remembered approval, a service, the expiry sweep or sayso itself."""
    principal: str | None
    via: Literal["python", "cli", "rest", "web", "a2a", "ag-ui", "mcp", "email", "slack"] | None
    """The interface a person's decision came through; `null` for sayso's own decisions."""
    decided: Rfc3339 | None
    """When it was decided (RFC 3339)."""


class DecisionLineOut(_Out):
    """A decision as a transcript line shows it (the fields its kind has)."""

    decision: str
    """`approve`, `reject`, `skip`, `answer`, `client_result`, `client_error`, `expired`, ..."""
    by: str
    principal: str | None = None
    via: str | None = None
    decided: Rfc3339 | None = None
    """When it was decided (RFC 3339)."""
    scope: str | None = None
    reason: str | None = None
    edits: list[ArgEdit] | None = None
    """An edit's changes, field by field: `{field, before, after}` (redacted fields stay hidden)."""
    answers: Any = None
    """The answers given to questions (`[{question, answer}]`), redacted where configured."""
    value: Any = None
    message: str | None = None
    content: Any = None
    expires: Rfc3339 | None = None
    """For an expired request: when its time ran out (RFC 3339)."""
    grant_id: str | None = None
    """The remembered approval that allowed the call."""
    subject_label: str | None = None
    request_id: str | None = None
    quorum: str | None = None
    """A vote on a request that needs several approvals, a line before its decision's: `vote 1 of 2` (of the
    votes cast; the decision line stands for the last)."""


class TranscriptEntryOut(_Out):
    """One line of a thread's history: what was said, the calls, each decision, and failures."""

    seq: int
    run_id: str
    role: Literal["user", "assistant", "tool_call", "tool_result", "decision", "error"]
    text: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    args: Any = None
    decision: DecisionLineOut | None = None
    """For `decision` lines."""
    at: Rfc3339 | None = None
    """When it happened (RFC 3339), when known."""
    pending: bool = False
    """`true` (else absent) on the message of a run still working on it, not stored yet: a later read shows the
    stored message in its place."""


class ThreadOut(_Out):
    """A thread: its agent, owner, title, the run in progress and its history."""

    thread_id: str
    agent: str
    owner: str | None
    """`null` for a thread with no run yet."""
    title: str | None
    """The thread's first message, shortened."""
    created: Rfc3339 | None
    """When the thread started (RFC 3339); `null` before its first run."""
    active_run: RunOut | None
    transcript: list[TranscriptEntryOut]
    next_cursor: str | None
    """Pass as `cursor` for the lines before this transcript's first; `null` when it starts at the thread's first."""


class ThreadSummaryOut(_Out):
    """A thread as listed."""

    thread_id: str
    agent: str
    owner: str
    active_run_id: str | None
    created: Rfc3339
    """When the thread started (RFC 3339)."""
    created_at: float = _epoch("created")
    title: str | None


class ThreadListOut(_Out):
    """A page of the caller's threads, newest first."""

    threads: list[ThreadSummaryOut]
    next_cursor: str | None
    """Pass as `cursor` to get the next (older) page; `null` on the last page."""


class AgentOut(_Out):
    """An agent (or a workflow) a thread may be opened with."""

    name: str
    description: str | None
    entry: bool
    kind: Literal["agent", "workflow"] = "agent"
    """`workflow`: a graph of nodes that stops for input (docs/guides/workflows.md), run like an agent."""
    internal: bool = False
    """Configured `internal: true`: it works for other agents or workflows, and is not offered for a new chat."""


class AgentListOut(_Out):
    """The configured agents."""

    agents: list[AgentOut]


class MeOut(_Out):
    """Who the caller is."""

    principal: str
    local_mode: bool
    approver_for: list[str]


class HealthOut(_Out):
    """The server is up and its store answers."""

    status: Literal["ok"]


class GrantOut(_Out):
    """A remembered approval: this principal lets this tool act on this subject without asking."""

    grant_id: str
    tool: str
    subject_key: str
    subject_label: str
    scope: Literal["thread", "always"]
    principal: str
    """Whose calls it lets through (the owner of the thread it was given on)."""
    agent: str | None
    """The agent path it covers calls of (`coordinator/analyst`: a delegate's); `null`: a migrated grant, none."""
    thread_id: str | None
    """The thread a `thread` grant is limited to; `null` for `always`."""
    created: Rfc3339
    """When the grant was given (RFC 3339)."""
    granted_by: str | None
    """Who gave it; `null` means its principal."""
    expires: Rfc3339 | None
    revoked: Rfc3339 | None
    created_at: float = _epoch("created")
    expires_at: float | None = _epoch("expires")
    revoked_at: float | None = _epoch("revoked")


class GrantListOut(_Out):
    """A page of the active grants the caller sees, newest first."""

    grants: list[GrantOut]
    next_cursor: str | None
    """Pass as `cursor` to get the next (older) page; `null` on the last page."""


class AuditRecordOut(_Out):
    """One line of the audit log, chained to the one before by its hash."""

    seq: int
    body: dict[str, Any]
    """What happened: event, request, tool, who, decision, scope, reason, arguments and times (as hashed:
    times in seconds since the epoch)."""
    prev_hash: str
    hash: str
    mac: str | None
    """The audit key's MAC of `seq` and `hash`; `null` for a record written without a key."""
    at: Rfc3339 | None
    """When it happened (RFC 3339), where its kind says it in the body (`decided_at`, `voted_at`, `at`)."""


class AuditPageOut(_Out):
    """A page of the audit log."""

    records: list[AuditRecordOut]
    next_cursor: int | None
    """Pass as `cursor` to get the next page; `null` on the last page."""
    total: int
    """How many records the whole log holds."""


class AuditProblemOut(_Out):
    """Where the audit chain first breaks."""

    seq: int
    problem: str


class AuditVerifyOut(_Out):
    """Whether the audit chain is intact; `predates_key`: the key is set but signed none of the log (anchor it once)."""

    intact: bool
    records: int
    problem: AuditProblemOut | None
    """The first bad record; `null` when intact."""
    anchored: bool
    """Whether an audit key anchors the chain; without one a rewrite with recomputed hashes cannot be detected."""
    note: str
    """What was checked, in a sentence (starts with `UNANCHORED` when no key anchors the chain)."""
    predates_key: bool = False


class ExpireOut(_Out):
    """The runs an expiry sweep closed, each as it stands after its agent answered."""

    runs: list[RunOut]


def entry_json(entry: TranscriptEntry) -> dict[str, Any]:
    """A transcript line as REST shows it, its times in RFC 3339."""
    body = asdict(entry) | {"at": rfc3339(entry.at)}
    if not entry.pending:
        del body["pending"]  # said only on a pending line: a stored line keeps the shape it always had
    if entry.decision is not None:
        decision = dict(entry.decision)
        for epoch, name in (("decided_at", "decided"), ("expires_at", "expires")):
            if epoch in decision:
                seconds = decision.pop(epoch)
                decision[name] = rfc3339(seconds) if isinstance(seconds, int | float) else None
        body["decision"] = decision
    return body
