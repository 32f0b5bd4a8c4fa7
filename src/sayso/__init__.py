"""sayso: agents that pause for a person and carry on exactly where they stopped.

The public surface is re-exported here; modules starting with `_` are private. Each name is
imported the first time it is used (PEP 562), so `import sayso` and `sayso --help` stay instant
and a command pays only for what it touches; type checkers read the same names from the
`TYPE_CHECKING` block.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._runtime._defaults import DEFAULT_REMOTE_AGENTS, ENGINES, WORKFLOW_RUNNERS

if TYPE_CHECKING:
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
    from ._engine.steps import step
    from ._engine.tools import Approval, require_approval, tool
    from ._runtime import DecideResult, RemoteAgents, RunResult, Sayso, request_json, run_json
    from ._runtime._kernel import Kernel
    from ._runtime._runner import Engine, Runs, WorkflowRuns
    from .exceptions import (
        AgentNotFound,
        AlreadyDecided,
        CallEnded,
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
        SchemaTooNew,
        StepOutcomeUnknown,
        StoreError,
        ThreadBusy,
        ThreadNotFound,
        TooLarge,
        Unauthenticated,
        UsageError,
    )
    from .workflows import RequestInput, Workflow


def _a2a_remote_agents(config: Config) -> RemoteAgents:
    """The A2A client remote delegates go through, imported only when a config names one.

    The package root is where the runtime meets its adapters: the runtime defines the port,
    the A2A protocol package implements it, and this default joins them.
    """
    from .protocols.a2a._client import A2ARemoteAgents

    return A2ARemoteAgents.of(config)


DEFAULT_REMOTE_AGENTS.append(_a2a_remote_agents)


def _temporal_engine(config: Config) -> Engine:
    """The Temporal front (docs/guides/temporal.md), imported only when a config names `engine: temporal`."""
    from .exceptions import ConfigError

    try:
        from ._temporal import front
    except ImportError as exc:
        raise ConfigError(f"engine: temporal needs the Temporal extra: pip install 'sayso[temporal]' ({exc})") from None
    return front(config)


ENGINES["temporal"] = _temporal_engine


def _workflow_runner(k: Kernel, runs: Runs) -> WorkflowRuns:
    """The runner of workflows' runs, imported only when a config has workflows.

    So `sayso decide` on an agent's run loads no workflow engine.
    """
    from ._runtime._workflows import workflow_runner

    return workflow_runner(k, runs)


WORKFLOW_RUNNERS.append(_workflow_runner)

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
    "CallEnded",
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
    "SchemaTooNew",
    "Scope",
    "ScriptedModel",
    "Skip",
    "StepOutcomeUnknown",
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
    "step",
    "tool",
]


_LAZY: dict[str, str] = {
    "Accept": "._core.decisions",
    "AgentConfig": "._config.file",
    "AgentNotFound": ".exceptions",
    "AlreadyDecided": ".exceptions",
    "CallEnded": ".exceptions",
    "Answer": "._core.decisions",
    "Approval": "._engine.tools",
    "ApprovalRequest": "._core.requests",
    "Approve": "._core.decisions",
    "AskApproval": "._engine.hooks",
    "BeforeToolCall": "._engine.hooks",
    "CallerError": ".exceptions",
    "Cancel": "._core.decisions",
    "ClientError": "._core.decisions",
    "ClientResult": "._core.decisions",
    "ClientTool": "._core.requests",
    "ClientToolRequest": "._core.requests",
    "Config": "._config.file",
    "ConfigError": ".exceptions",
    "DecideResult": "._runtime",
    "Decision": "._core.decisions",
    "DecisionRecord": "._core.decisions",
    "DecisionRefused": ".exceptions",
    "Decline": "._core.decisions",
    "ElicitationRequest": "._core.requests",
    "Grant": "._core.grants",
    "GrantNotFound": ".exceptions",
    "HookCall": "._engine.hooks",
    "InputRequest": "._core.requests",
    "InterruptConfig": "._config.file",
    "InterruptPolicy": "._core.policy",
    "InvalidDecision": ".exceptions",
    "InvalidInput": ".exceptions",
    "McpBinding": "._config.mcp",
    "McpHttpServer": "._config.mcp",
    "McpStdioServer": "._config.mcp",
    "NotAllowed": ".exceptions",
    "NotFound": ".exceptions",
    "NotReady": ".exceptions",
    "PauseConsumed": ".exceptions",
    "PrincipalConfig": "._config.file",
    "Provide": "._core.decisions",
    "Question": "._core.requests",
    "QuestionRequest": "._core.requests",
    "Reject": "._core.decisions",
    "RejectionTextConfig": "._config.file",
    "RemoteAgents": "._runtime",
    "Request": "._core.requests",
    "RequestExpired": ".exceptions",
    "RequestInput": ".workflows",
    "RequestKind": "._core.requests",
    "RequestNotFound": ".exceptions",
    "RunConflict": ".exceptions",
    "RunDeps": "._engine.deps",
    "RunNotFound": ".exceptions",
    "RunResult": "._runtime",
    "Sayso": "._runtime",
    "SaysoError": ".exceptions",
    "SchemaMismatch": ".exceptions",
    "SchemaTooNew": ".exceptions",
    "Scope": "._core.requests",
    "ScriptedModel": "._engine.scripted",
    "Skip": "._core.decisions",
    "StepOutcomeUnknown": ".exceptions",
    "StoreError": ".exceptions",
    "Subject": "._core.requests",
    "ThreadBusy": ".exceptions",
    "ThreadNotFound": ".exceptions",
    "TooLarge": ".exceptions",
    "ToolInfo": "._core.requests",
    "ToolRule": "._core.policy",
    "ToolRuleConfig": "._config.file",
    "Unauthenticated": ".exceptions",
    "UsageError": ".exceptions",
    "VisitUrl": "._engine.hooks",
    "Workflow": ".workflows",
    "before_tool_call": "._engine.hooks",
    "load_config": "._config.file",
    "mcp_bindings": "._config.mcp",
    "request_json": "._runtime",
    "require_approval": "._engine.tools",
    "run_json": "._runtime",
    "step": "._engine.steps",
    "tool": "._engine.tools",
}
"""Where each public name lives: `sayso.X` imports that module the first time X is asked for."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sayso' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
