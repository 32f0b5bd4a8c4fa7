"""The configuration file (`sayso.yaml`) as pydantic models, and its loading.

These models are the wire schema of `sayso.yaml`; the runtime turns them into the pure
policy dataclasses of `_core` and into pydantic-ai agents, so nothing past this module
reads raw YAML.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from .._core.channels import TARGET_PATTERN
from .._core.model_text import REJECTION_PRESETS, RejectionText
from .._core.policy import InterruptPolicy, ToolRule
from .._core.requests import Scope
from ..exceptions import ConfigError
from ..workflows import Workflow, WorkflowEntry, check_workflow_names
from .channels import ChannelsConfig
from .delegates import DelegateConfig, OrchestrationConfig, join_teams
from .edges import (
    AUDIT_KEY_ENV as AUDIT_KEY_ENV,
)
from .edges import (  # re-exported: the whole config is read from here
    A2AConfig as A2AConfig,
)
from .edges import (
    AgUiConfig as AgUiConfig,
)
from .edges import (
    AuditConfig as AuditConfig,
)
from .edges import (
    LimitsConfig as LimitsConfig,
)
from .edges import (
    McpServeConfig as McpServeConfig,
)
from .edges import (
    RuntimeConfig as RuntimeConfig,
)
from .edges import (
    WebhookConfig as WebhookConfig,
)
from .edges import (
    WebhookEvent as WebhookEvent,
)
from .engine import EngineConfig
from .lines import PlacedError, line_of, read_yaml_file, validation_lines
from .mcp import McpBinding, McpServerConfig, bad_server_names, unknown_servers
from .routing import RoutingConfig, RoutingFields, routed
from .rules import PolicyFields

STORE_ENV = "SAYSO_STORE"
"""Environment variable that overrides the configured store URL."""


class _Strict(BaseModel):
    # Field docstrings are read by docs/hooks/config_reference.py, not at load (that cost every command ~0.1 s).
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class ToolRuleConfig(PolicyFields, _Strict, RoutingFields):
    """An object entry of `interrupt.tools`: `{name: delete_store, remember: thread, subject: "my.mod:fn"}`."""

    name: str
    """The tool's name, or an fnmatch pattern such as `merchant___*`; a name must be one of the agent's tools."""
    remember: Scope | None = None
    """The widest scope a person may choose for this tool; unset: the block's `remember`."""
    subject: str | None = None
    """Import spec of a subject function `(tool_name, args) -> {key, label} | str | None` that narrows what a
    remembered approval covers (one folder, one store); `None` from it lets the call run without asking."""
    ttl_seconds: float | None = Field(default=None, gt=0)
    """How long a request for this tool waits before it expires; unset: the block's `ttl_seconds`."""
    notify: list[Annotated[str, Field(pattern=TARGET_PATTERN)]] = []
    """Where each request for this tool is announced, once per request and target: `email:ADDRESS`,
    `slack:#CHANNEL` or `webhook:NAME` (a `webhooks:` entry's `name`), reached as `channels:` says."""


def _string_or_mapping(value: Any) -> str:
    """Which member of a `name | {...}` union an entry is, so an error names only that one's problem."""
    return "Name" if isinstance(value, str) else "Entry"


ToolRuleEntry: TypeAlias = Annotated[
    Annotated[str, Tag("Name")] | Annotated[ToolRuleConfig, Tag("Entry")], Discriminator(_string_or_mapping)
]


class RejectionTextConfig(_Strict):
    """A wording of its own for what the model reads when a person rejects a call."""

    text: str = Field(min_length=1)
    """What the model reads when the person gave no reason."""
    with_reason: str | None = Field(default=None, pattern=r"\{reason\}")
    """What it reads when they gave one, `{reason}` standing for it; unset: `text`, then ` Reason: {reason}`."""

    def to_core(self) -> RejectionText:
        return RejectionText(plain=self.text, with_reason=self.with_reason or f"{self.text} Reason: {{reason}}")


class InterruptConfig(_Strict):
    """An agent's `interrupt` block: which calls wait for a person, and on what terms."""

    tools: list[ToolRuleEntry] = []
    """The calls that wait for approval: tool names, fnmatch patterns, or rule objects; the first match wins."""
    skip_read_only: bool = False
    """Let tools declared read-only (`readOnlyHint: true`) run without asking, even when a rule matches."""
    remember: Scope = "once"
    """The widest scope a person may choose when approving: `once`, `thread` or `always`."""
    ttl_seconds: float | None = Field(default=None, gt=0)
    """How long requests wait before they expire; unset: they wait until decided."""
    tool_approvals: bool = False
    """Let a tool's service ask for approval through its reply (`{"sayso_approval": {...}}`)."""
    on_decision: str | None = None
    """Import spec of a callable told each decision on a service's own approval request."""
    decision_webhook: str | None = None
    """URL that receives each such decision as a signed POST."""
    decision_webhook_secret_env: str | None = None
    """Environment variable holding the webhook's signing secret."""
    rejection_text: Literal["sayso", "kagent", "hastekit"] | RejectionTextConfig = "sayso"
    """What the model reads when the person rejects a call: sayso's `Declined: <reason>` (or `Declined by
    the person.`), kagent's `Tool call was rejected by user.` (` Reason: <reason>`), hastekit's `Request to
    call this tool has been declined`, or `{text, with_reason}` of your own."""

    def to_policy(self, groups: Mapping[str, Sequence[str]] | None = None) -> InterruptPolicy:
        """The pure policy this block describes; `groups` resolve the rules' approvers (docs/guides/routing.md)."""
        rules = tuple(ToolRule(name=t) if isinstance(t, str) else routed(t.to_rule(), t, groups) for t in self.tools)
        return InterruptPolicy(
            tools=rules,
            skip_read_only=self.skip_read_only,
            remember=self.remember,
            ttl_seconds=self.ttl_seconds,
            tool_approvals=self.tool_approvals,
            rejection=REJECTION_PRESETS[self.rejection_text]
            if isinstance(self.rejection_text, str)
            else self.rejection_text.to_core(),
        )


class AgentConfig(_Strict):
    """One agent: a model, instructions, tools and a pause policy."""

    model: Any = None
    """A name from `models`, a pydantic-ai model string, or (from Python) a pydantic-ai `Model`."""
    instructions: str = ""
    """What the agent is told to do (its system instructions)."""
    system_prompt: str | None = None
    """Another name for `instructions`, as some AG-UI hosts write it; accepted with `ag_ui.kaboo_compat: true`
    (use one or the other)."""
    description: str | None = None
    """What the agent is for, as other agents and A2A agent cards show it."""
    internal: bool = False
    """An agent that works only for other agents or workflows (a delegate, a workflow's agent node): the web UI
    does not offer it for a new chat; its requests are still in the inbox, and the API still runs it."""
    tools: list[Any] = []
    """Import specs (`pkg.mod:fn`), or functions and pydantic-ai `Tool`s from Python."""
    client_tools: list[str] = []
    """Names of client-declared tools this agent may call."""
    ask_user: bool = True
    """Give the agent the built-in `ask_user` tool, to ask the person questions."""
    interrupt: InterruptConfig = InterruptConfig()
    """Which calls wait for a person."""
    redact: list[str] = []
    """Argument fields (such as `password`) hidden wherever a request is shown."""
    delegates: list[DelegateConfig] = []
    """Agents this one may hand work to; each is a tool named after the delegate."""
    mcp: list[McpBinding] = []
    """Tools from MCP servers: which server, which tools, whether calls wait for approval.

    See docs/guides/mcp.md#servers-as-tool-sources.
    """
    before_tool_call: Any = None
    """A hook run before every tool call that may pause it (ask for approval, or send the person to a
    URL such as a login page): an import spec (`pkg.mod:fn`), or (from Python) the function itself."""

    @field_validator("before_tool_call")
    @classmethod
    def _hook_is_usable(cls, hook: Any) -> Any:
        if hook is not None and not (isinstance(hook, str) or callable(hook)):
            raise ValueError(f"before_tool_call must be an import spec or a function, not {hook!r}")
        return hook

    @field_validator("tools")
    @classmethod
    def _tools_are_usable(cls, tools: list[Any]) -> list[Any]:
        for entry in tools:
            if not (isinstance(entry, str) or _is_tool(entry) or callable(entry)):
                raise ValueError(f"a tool must be an import spec, a function or a pydantic-ai Tool, not {entry!r}")
        return tools


def _is_tool(entry: object) -> bool:
    """Whether `entry` is a pydantic-ai `Tool`, without importing pydantic-ai when none was ever made."""
    tools = sys.modules.get("pydantic_ai.tools")
    return tools is not None and isinstance(entry, tools.Tool)


class ScriptedModelConfig(_Strict):
    """A scripted model: `{scripted: path/to/script.yaml}`."""

    scripted: str
    """The script's path, relative to the config file."""


ModelProvider: TypeAlias = Literal["openai", "anthropic", "google"]
"""Providers a `models:` entry may name; `openai` also covers every server that speaks its chat API."""


class ProviderModelConfig(_Strict):
    """A model served over a provider's API: `{provider: openai, name: llama3, base_url: ..., api_key_env: ...}`.

    With `provider: openai` and a `base_url`, any server that speaks OpenAI's chat completions API
    works: Ollama (`http://127.0.0.1:11434/v1`), llama.cpp's `llama-server`, vLLM, LM Studio.
    """

    provider: ModelProvider
    """Whose API the model is served over; install its extra (`pip install 'sayso[openai]'`)."""
    name: str = Field(min_length=1)
    """The model's name as the server knows it (`gpt-4o-mini`, `llama3`, `claude-sonnet-4-5`)."""
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    """Where the API is served; the provider's own endpoint when unset."""
    api_key_env: str | None = None
    """Environment variable holding the API key; unset: the provider's usual variable (`OPENAI_API_KEY`...),
    or no key at all for a local server at `base_url`."""


def _model_kind(value: Any) -> str:
    """Which member of the `models:` union an entry is, so an error names only that one's problem."""
    if isinstance(value, str):
        return "Name"
    if isinstance(value, ScriptedModelConfig) or (isinstance(value, dict) and "scripted" in value):
        return "Script"
    return "Provider"


ModelEntry: TypeAlias = Annotated[
    Annotated[str, Tag("Name")]
    | Annotated[ScriptedModelConfig, Tag("Script")]
    | Annotated[ProviderModelConfig, Tag("Provider")],
    Discriminator(_model_kind),
]
"""One entry of `models:`: a pydantic-ai model string, a script or a provider entry."""


class PrincipalConfig(_Strict):
    """A person or service that may call the API, with its bearer token and approver roles."""

    name: str
    """Who this is: the name its messages, decisions, grants and audit records carry."""
    token: str | None = None
    """The bearer token; prefer `token_env` so the secret stays out of the file."""
    token_env: str | None = None
    """Name of an environment variable holding the bearer token."""
    approver_for: list[str] = []
    """Agents (names or globs) whose requests this principal may decide on any thread."""

    def bearer_token(self) -> str | None:
        """The token, read from the environment when `token_env` is set."""
        return os.environ.get(self.token_env) if self.token_env else self.token


def shared_tokens(principals: Sequence[PrincipalConfig]) -> list[tuple[int, str, str]]:
    """Each principal whose bearer token an earlier one already has: (its index, its name, the earlier one's name).

    A token names one principal; one that two share would sign in as whichever comes first, so this is
    refused wherever tokens are read (at load and `sayso check`, and when an authenticator reads them).
    """
    first: dict[str, str] = {}
    found: list[tuple[int, str, str]] = []
    for index, principal in enumerate(principals):
        token = principal.bearer_token()
        if not token:
            continue
        if token in first:
            found.append((index, principal.name, first[token]))
        else:
            first[token] = principal.name
    return found


def shared_token_message(name: str, earlier: str) -> str:
    """What is said of a principal whose token `earlier` has too; never the token itself."""
    return f"{name!r} has the same bearer token as {earlier!r}, so it would sign in as {earlier!r}"


class Config(_Strict, RoutingConfig):
    """A whole `sayso.yaml`."""

    store: str = "sqlite:///sayso.db"
    """Where runs are kept: `sqlite:///file.db` (relative to the config), `sqlite:////abs/file.db` or
    `postgresql://user@host/db` (`_core/store_urls.py`); the `SAYSO_STORE` variable overrides it."""
    models: dict[str, ModelEntry] = {}
    """Named models: a pydantic-ai model string (`openai:gpt-4o-mini`), a script, or a provider entry."""
    agents: dict[str, AgentConfig]
    """The agents, by name."""
    entry: str | None = None
    """The agent a new thread talks to by default, or an orchestration's name (its lead agent answers);
    unset: the first agent."""
    principals: list[PrincipalConfig] = []
    """Who may call the API; with none, servers run in local development mode."""
    webhooks: list[WebhookConfig] = []
    """Where `sayso serve` sends signed events when a request opens, is decided or expires."""
    webhooks_retention_days: float = Field(default=7.0, gt=0, le=3_650)
    """How long `sayso serve` keeps webhook events and their deliveries once each is delivered, skipped or
    given up on (and events no server with webhooks took); older ones are deleted by its periodic sweep, so
    the store does not grow with every event ever sent. Deliveries still pending are kept whatever their age."""
    channels: ChannelsConfig = ChannelsConfig()
    """How requests reach approvers where they are (rules' `notify`): email over SMTP, Slack, public links."""
    a2a: A2AConfig = A2AConfig()
    """How agents speak A2A."""
    ag_ui: AgUiConfig = AgUiConfig()
    """How agents speak AG-UI."""
    runtime: RuntimeConfig = RuntimeConfig()
    """What a run tells the host beside its events (kaboo's session state)."""
    audit: AuditConfig = AuditConfig()
    """What anchors the audit log: a key from the environment, and optionally a head file."""
    limits: LimitsConfig = LimitsConfig()
    """How much one call may send: request bodies, messages, edited arguments and answers."""
    mcp: McpServeConfig = McpServeConfig()
    """How `/mcp` serves the agents: the key that seals a paused call's request state for every replica."""
    engine: EngineConfig = EngineConfig()
    """Where runs do their work: here, or as Temporal workflows on `sayso worker` processes."""
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    """Folder that relative paths (store, scripts, tool modules) are resolved from."""

    orchestrations: dict[str, OrchestrationConfig] = {}
    """Named teams (`mode: delegate`): the entry agent gets the connections as delegates."""
    mcp_servers: dict[str, McpServerConfig] = {}
    """MCP servers agents may bind, by name: a stdio command or a streamable HTTP URL.

    See docs/guides/mcp.md#servers-as-tool-sources.
    """
    workflows: dict[str, WorkflowEntry] = {}
    """Graphs of function and agent nodes that stop for a person's input, by name; a workflow may be
    the `entry`, and is run like an agent (`Sayso.run(message, agent=NAME)`). From Python, a `Workflow`.

    See docs/guides/workflows.md.
    """

    @model_validator(mode="after")
    def _mcp_servers_exist(self) -> Config:
        problems = bad_server_names(self.mcp_servers) + unknown_servers(
            self.mcp_servers, {name: spec.mcp for name, spec in self.agents.items()}
        )
        if problems:
            raise PlacedError(*problems)
        return self

    _source: Path | None = PrivateAttr(default=None)
    _lines: dict[tuple[str | int, ...], int] = PrivateAttr(default_factory=dict)

    @property
    def source(self) -> Path | None:
        """The file this config was read from; `None` for a config built in Python."""
        return self._source

    def line_of(self, path: Sequence[str | int], *, exact: bool = False) -> int | None:
        """The line of the file where the entry at `path` (such as `agents.files.tools.0`) is written.

        Steps of `path` that the file does not hold (pydantic's union branch names, defaults) are
        passed over, so the nearest written entry answers; with `exact`, none but `path`'s own.
        """
        return self._lines.get(tuple(path)) if exact else line_of(self._lines, path)

    @model_validator(mode="after")
    def _kaboo_system_prompts(self) -> Config:
        """Kaboo's `system_prompt` is `instructions` under kaboo's switch, and a mistake without it."""
        for name, spec in self.agents.items():
            if spec.system_prompt is None:
                continue
            at = ("agents", name, "system_prompt")
            if not self.ag_ui.kaboo_compat:
                raise PlacedError(
                    (
                        at,
                        f"agent {name!r}: 'system_prompt' is another name for 'instructions'; "
                        "rename it, or set 'ag_ui: {kaboo_compat: true}'",
                    )
                )
            if spec.instructions:
                raise PlacedError((at, f"agent {name!r} sets both 'instructions' and 'system_prompt'; keep one"))
            spec.instructions, spec.system_prompt = spec.system_prompt, None
        return self

    @model_validator(mode="after")
    def _entry_exists(self) -> Config:
        if not self.agents:
            raise PlacedError((("agents",), "at least one agent is needed under 'agents'"))
        join_teams({name: spec.delegates for name, spec in self.agents.items()}, self.orchestrations)
        for name, workflow in self.workflows.items():
            if isinstance(workflow, Workflow) and workflow.name != name:
                raise ValueError(f"workflow {workflow.name!r} is listed under the name {name!r}; use one name")
        check_workflow_names(self.workflows, self.agents)
        if clash := sorted(set(self.workflows) & set(self.orchestrations)):
            message = f"workflow {clash[0]!r} has an orchestration's name; A2A and AG-UI serve both by name"
            raise PlacedError((("workflows", clash[0]), message))
        if self.entry is None:
            self.entry = next(iter(self.agents))
        if self.entry not in self.entries():
            others = "".join(f" or {kind}: {', '.join(names)}" for kind, names in self._other_entries() if names)
            message = f"entry {self.entry!r} is not one of the agents: {', '.join(self.agents)}{others}"
            raise PlacedError((("entry",), message))
        return self

    def _other_entries(self) -> list[tuple[str, list[str]]]:
        """The entries besides agents, by kind, for an error that lists what may be named."""
        return [("orchestrations", list(self.orchestrations)), ("workflows", list(self.workflows))]

    @property
    def entry_agent(self) -> str:
        """What a new thread talks to by default: an agent (an orchestration's lead), or a workflow."""
        return self.entries()[self.entry_name]

    @property
    def entry_name(self) -> str:
        """The configured entry: an agent's, an orchestration's or a workflow's name."""
        assert self.entry is not None
        return self.entry

    def entries(self) -> dict[str, str]:
        """Every name an interface serves and what answers under it: an agent, an orchestration's lead, a workflow."""
        return {
            **{name: name for name in self.agents},
            **{n: t.entry_name for n, t in self.orchestrations.items()},
            **{name: name for name in self.workflows},
        }

    def store_url(self) -> str:
        """The store URL, with `SAYSO_STORE` taking precedence over the file."""
        return os.environ.get(STORE_ENV) or self.store


def load_config(path: str | Path) -> Config:
    """Read and validate a config file; every problem is a `ConfigError` naming the file and line.

    This checks the file's shape. What needs the agents' code (do the approval rules name real
    tools, can each model be reached) is checked when the agents are built, and by `sayso check`.
    """
    file = Path(path)
    raw, lines = read_yaml_file(file, "config")
    if not isinstance(raw, dict):
        raise ConfigError(f"config {str(file)!r} must be a mapping with 'agents'")
    try:
        config = Config.model_validate({**raw, "base_dir": file.resolve().parent})
    except ValidationError as exc:
        found = (line for error in exc.errors() for line in validation_lines(file, lines, error, root=Config))
        problems = sorted(found, key=lambda p: p[0])
        shown = "\n".join(text for _, text in problems)
        raise ConfigError(f"config {str(file)!r} is invalid:\n{shown}") from exc
    config._source = file
    config._lines = lines
    return config
