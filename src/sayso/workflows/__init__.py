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

from typing import TYPE_CHECKING, Any

from .._core.lazy import load_lazily

if TYPE_CHECKING:
    from .._core.inputs import InputSchema, RequestInput, input_schema, validate_input
    from ._config import (
        AgentNodeConfig,
        FunctionNodeConfig,
        WorkflowConfig,
        WorkflowEntry,
        build_workflow,
        check_workflow_names,
    )
    from ._engine import NodeFailed, WorkflowEngine, agent_prompt
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
    "NodeFailed",
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
    "WorkflowEntry",
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

_LAZY: dict[str, str] = {
    "AgentFinished": "._state",
    "AgentNode": "._graph",
    "AgentNodeCall": "._state",
    "AgentNodeConfig": "._config",
    "AgentNodeRunner": "._state",
    "AgentOutcome": "._state",
    "AgentPaused": "._state",
    "DEFAULT": "._graph",
    "END": "._graph",
    "FinishedNode": "._state",
    "FunctionNode": "._graph",
    "FunctionNodeConfig": "._config",
    "GivenAnswer": "._state",
    "InputSchema": ".._core.inputs",
    "InputSkipped": "._state",
    "MemoryWorkflowPersistence": "._state",
    "NodeFailed": "._engine",
    "PendingInput": "._state",
    "RecordedAnswer": "._state",
    "RequestInput": ".._core.inputs",
    "Route": "._graph",
    "RouteKey": "._graph",
    "START": "._graph",
    "SkippedAnswer": "._state",
    "Workflow": "._graph",
    "WorkflowConfig": "._config",
    "WorkflowContext": "._graph",
    "WorkflowEngine": "._engine",
    "WorkflowEntry": "._config",
    "WorkflowFailed": "._state",
    "WorkflowFinished": "._state",
    "WorkflowOutcome": "._state",
    "WorkflowPaused": "._state",
    "WorkflowPersistence": "._state",
    "WorkflowState": "._state",
    "WorkflowStatus": "._state",
    "agent_prompt": "._engine",
    "build_workflow": "._config",
    "check_workflow_names": "._config",
    "input_schema": ".._core.inputs",
    "validate_input": ".._core.inputs",
}
"""Where each public name lives: resolved on first use (PEP 562), so importing a part loads only that part."""


def __getattr__(name: str) -> Any:
    return load_lazily(globals(), _LAZY, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
