"""sayso: agents that pause for a person and carry on exactly where they stopped.

The public surface is re-exported here; modules starting with `_` are private.
"""

from ._config.file import (
    AgentConfig,
    Config,
    InterruptConfig,
    PrincipalConfig,
    RejectionTextConfig,
    ToolRuleConfig,
    load_config,
)
from ._config.mcp import McpBinding, McpHttpServer, McpStdioServer, mcp_bindings
from ._core.decisions import (
    Accept,
    Answer,
    Approve,
    Cancel,
    ClientError,
    ClientResult,
    Decision,
    DecisionRecord,
    Decline,
    Provide,
    Reject,
    Skip,
)
from ._core.grants import Grant
from ._core.policy import InterruptPolicy, ToolRule
from ._core.requests import (
    ApprovalRequest,
    ClientTool,
    ClientToolRequest,
    ElicitationRequest,
    InputRequest,
    Question,
    QuestionRequest,
    Request,
    RequestKind,
    Scope,
    Subject,
    ToolInfo,
)
from ._engine.deps import RunDeps
from ._engine.hooks import AskApproval, BeforeToolCall, HookCall, VisitUrl, before_tool_call
from ._engine.scripted import ScriptedModel
from ._engine.tools import Approval, require_approval, tool
from ._runtime import DEFAULT_REMOTE_AGENTS, DecideResult, RemoteAgents, RunResult, Sayso, request_json, run_json
from .exceptions import (
    AgentNotFound,
    AlreadyDecided,
    CallerError,
    ConfigError,
    DecisionRefused,
    GrantNotFound,
    InvalidDecision,
    InvalidInput,
    NotAllowed,
    NotFound,
    NotReady,
    PauseConsumed,
    RequestExpired,
    RequestNotFound,
    RunConflict,
    RunNotFound,
    SaysoError,
    SchemaMismatch,
    StoreError,
    ThreadBusy,
    ThreadNotFound,
    TooLarge,
    Unauthenticated,
    UsageError,
)
from .workflows import RequestInput, Workflow


def _a2a_remote_agents() -> RemoteAgents:
    """The A2A client remote delegates go through, imported only when a config names one.

    The package root is where the runtime meets its adapters: the runtime defines the port,
    the A2A protocol package implements it, and this default joins them.
    """
    from .protocols.a2a._client import A2ARemoteAgents

    return A2ARemoteAgents()


DEFAULT_REMOTE_AGENTS.append(_a2a_remote_agents)

__all__ = [
    "Accept",
    "AgentConfig",
    "AgentNotFound",
    "AlreadyDecided",
    "Answer",
    "Approval",
    "ApprovalRequest",
    "Approve",
    "AskApproval",
    "BeforeToolCall",
    "CallerError",
    "Cancel",
    "ClientError",
    "ClientResult",
    "ClientTool",
    "ClientToolRequest",
    "Config",
    "ConfigError",
    "DecideResult",
    "Decision",
    "DecisionRecord",
    "DecisionRefused",
    "Decline",
    "ElicitationRequest",
    "Grant",
    "GrantNotFound",
    "HookCall",
    "InputRequest",
    "InterruptConfig",
    "InterruptPolicy",
    "InvalidDecision",
    "InvalidInput",
    "McpBinding",
    "McpHttpServer",
    "McpStdioServer",
    "NotAllowed",
    "NotFound",
    "NotReady",
    "PauseConsumed",
    "PrincipalConfig",
    "Provide",
    "Question",
    "QuestionRequest",
    "Reject",
    "RejectionTextConfig",
    "Request",
    "RequestExpired",
    "RequestInput",
    "RequestKind",
    "RequestNotFound",
    "RunConflict",
    "RunDeps",
    "RunNotFound",
    "RunResult",
    "Sayso",
    "SaysoError",
    "SchemaMismatch",
    "Scope",
    "ScriptedModel",
    "Skip",
    "StoreError",
    "Subject",
    "ThreadBusy",
    "ThreadNotFound",
    "TooLarge",
    "ToolInfo",
    "ToolRule",
    "ToolRuleConfig",
    "Unauthenticated",
    "UsageError",
    "VisitUrl",
    "Workflow",
    "before_tool_call",
    "load_config",
    "mcp_bindings",
    "request_json",
    "require_approval",
    "run_json",
    "tool",
]
