"""sayso: agents that pause for a person and carry on exactly where they stopped.

The public surface is re-exported here; modules starting with `_` are private.
"""

from ._config import AgentConfig, Config, InterruptConfig, PrincipalConfig, ToolRuleConfig, load_config
from ._core.decisions import (
    Answer,
    Approve,
    ClientError,
    ClientResult,
    Decision,
    DecisionRecord,
    Provide,
    Reject,
    Skip,
)
from ._core.policy import InterruptPolicy, ToolRule
from ._core.requests import (
    ApprovalRequest,
    ClientTool,
    ClientToolRequest,
    InputRequest,
    Question,
    QuestionRequest,
    Request,
    RequestKind,
    Scope,
    Subject,
)
from ._gate import RunDeps
from ._results import DecideResult, RunResult, request_json, run_json
from ._runtime import Sayso
from ._scripted import ScriptedModel
from ._tools import Approval, require_approval, tool
from .exceptions import (
    AlreadyDecided,
    ConfigError,
    DecisionRefused,
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
    StoreError,
    ThreadBusy,
)
from .workflows import RequestInput, Workflow

__all__ = [
    "AgentConfig",
    "AlreadyDecided",
    "Answer",
    "Approval",
    "ApprovalRequest",
    "Approve",
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
    "InputRequest",
    "InterruptConfig",
    "InterruptPolicy",
    "InvalidDecision",
    "InvalidInput",
    "NotAllowed",
    "NotFound",
    "NotReady",
    "PauseConsumed",
    "PrincipalConfig",
    "Provide",
    "Question",
    "QuestionRequest",
    "Reject",
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
    "Scope",
    "ScriptedModel",
    "Skip",
    "StoreError",
    "Subject",
    "ThreadBusy",
    "ToolRule",
    "ToolRuleConfig",
    "Workflow",
    "load_config",
    "request_json",
    "require_approval",
    "run_json",
    "tool",
]
