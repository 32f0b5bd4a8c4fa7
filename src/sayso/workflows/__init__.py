"""Workflows: graphs of function and agent nodes that stop for a person's input (docs/guides/workflows.md).

```python
from sayso.workflows import RequestInput, Workflow


def ask():
    yield RequestInput("Enter a number:", response_schema=int)


def double(node_input: int) -> int:
    return node_input * 2


workflow = Workflow("doubler", edges=[("START", ask, double)])
```

`Workflow` checks the graph when it is built; `WorkflowEngine` runs it durably from a state
that is plain JSON (see its module for how a paused node resumes). The runtime plugs in a
`WorkflowPersistence` (its store) and an `AgentNodeRunner` (its agents).
"""

from __future__ import annotations

from .._core.inputs import InputSchema, RequestInput, input_schema, validate_input
from ._config import AgentNodeConfig, FunctionNodeConfig, WorkflowConfig, build_workflow, check_workflow_names
from ._engine import WorkflowEngine, agent_prompt
from ._graph import DEFAULT, END, START, AgentNode, FunctionNode, Route, RouteKey, Workflow, WorkflowContext
from ._state import (
    AgentFinished,
    AgentNodeCall,
    AgentNodeRunner,
    AgentOutcome,
    AgentPaused,
    FinishedNode,
    GivenAnswer,
    InputSkipped,
    MemoryWorkflowPersistence,
    PendingInput,
    RecordedAnswer,
    SkippedAnswer,
    WorkflowFailed,
    WorkflowFinished,
    WorkflowOutcome,
    WorkflowPaused,
    WorkflowPersistence,
    WorkflowState,
    WorkflowStatus,
)

__all__ = [
    "AgentFinished",
    "AgentNode",
    "AgentNodeCall",
    "AgentNodeConfig",
    "AgentNodeRunner",
    "AgentOutcome",
    "AgentPaused",
    "DEFAULT",
    "END",
    "FinishedNode",
    "FunctionNode",
    "FunctionNodeConfig",
    "GivenAnswer",
    "InputSchema",
    "InputSkipped",
    "MemoryWorkflowPersistence",
    "PendingInput",
    "RecordedAnswer",
    "RequestInput",
    "Route",
    "RouteKey",
    "START",
    "SkippedAnswer",
    "Workflow",
    "WorkflowConfig",
    "WorkflowContext",
    "WorkflowEngine",
    "WorkflowFailed",
    "WorkflowFinished",
    "WorkflowOutcome",
    "WorkflowPaused",
    "WorkflowPersistence",
    "WorkflowState",
    "WorkflowStatus",
    "agent_prompt",
    "build_workflow",
    "check_workflow_names",
    "input_schema",
    "validate_input",
]
