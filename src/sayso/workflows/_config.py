"""The `workflows:` section of `sayso.yaml` as pydantic models, and building a `Workflow` from it.

```yaml
workflows:
  concierge:
    description: Plans a day out in a city, with you.
    nodes:
      ask_preferences: concierge:ask_preferences            # a function, by import spec
      propose: {agent: planner, output_type: concierge:ActivitiesList}
      feedback: {function: concierge:get_feedback}           # the long form of the first line
      write_plan: concierge:write_plan
    edges:
      - [START, ask_preferences, propose, feedback]          # a chain
      - [feedback, {revise: propose, done: write_plan}]      # routes, chosen by the node
entry: concierge
```

Nodes are declared once under `nodes` and named in `edges`, which follow the Python form
(`START`, `END`, chains, a route map as the last element; see `sayso.workflows`). Quote route
keys such as `"yes"`/`"no"`: YAML reads them unquoted as booleans, so loading refuses them
unquoted. The graph checks of
`Workflow` run when the workflow is built, so a wrong graph fails at load time, naming the
workflow and the node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from .._config.lines import PlacedError
from .._config.routing import RoutingFields, routed
from .._config.rules import PolicyFields
from .._core.channels import TARGET_PATTERN
from .._core.policy import ToolRule
from ..exceptions import ConfigError
from ._graph import END, START, AgentNode, FunctionNode, RouteKey, Workflow


class _Strict(BaseModel):
    # Field docstrings are read by docs/hooks/config_reference.py, not at load (that cost every command ~0.1 s).
    model_config = ConfigDict(extra="forbid")


class FunctionNodeConfig(_Strict):
    """A function node: `{function: pkg.mod:fn}` (or just the import spec as a string)."""

    function: str
    """Import spec of the function (`pkg.mod:fn`), looked for in the config file's folder first."""


class AgentNodeConfig(_Strict):
    """An agent node: `{agent: NAME}`, a configured agent that gets the previous output as its prompt."""

    agent: str
    """A name from the config's `agents`."""
    output_type: str | None = None
    """Import spec of a type (a pydantic model, say) the agent's answer is parsed into, as JSON."""


def _node_form(value: Any) -> str | None:
    """Which form a node entry is, so an error names that form's problem alone (not one per form)."""
    if isinstance(value, str):
        return "Spec"
    if isinstance(value, AgentNodeConfig) or (isinstance(value, dict) and "agent" in value):
        return "Agent"
    return "Function" if isinstance(value, FunctionNodeConfig | dict) else None


NodeConfig: TypeAlias = Annotated[
    Annotated[str, Tag("Spec")]
    | Annotated[FunctionNodeConfig, Tag("Function")]
    | Annotated[AgentNodeConfig, Tag("Agent")],
    Discriminator(
        _node_form,
        custom_error_type="node_form",
        custom_error_message="a node is an import spec ('pkg.mod:fn'), {function: 'pkg.mod:fn'} or {agent: NAME}",
    ),
]
"""A node of a workflow: an import spec, or one of the node objects."""


def _edge_item(value: Any) -> str | None:
    return "Node" if isinstance(value, str) else "Routes" if isinstance(value, dict) else None


EdgeItem: TypeAlias = Annotated[
    Annotated[str, Tag("Node")] | Annotated[dict[RouteKey, str], Tag("Routes")],
    Discriminator(
        _edge_item,
        custom_error_type="edge_item",
        custom_error_message="an edge lists node names (START, END or one under 'nodes'), and may end with a route map",
    ),
]
"""An element of an edge: a node's name, or (last) a route map."""


class WorkflowConfig(_Strict, PolicyFields, RoutingFields):
    """One workflow: its nodes by name and the edges between them; its inputs' rule (docs/guides/routing.md).

    With `approvers` (principals and `groups:`), only they answer the workflow's inputs, and not the
    principal who started the run unless `self_approval: true`. Its inputs escalate (`escalate:`), time out
    (`on_timeout:`) and are announced (`notify:`) as a tool rule's approvals do; a `when:` over `args.node`
    and `args.payload` picks the inputs the rule applies to (the others wait for the run's owner, unrouted).
    """

    description: str = ""
    """What the workflow does, for people and agent cards."""
    nodes: dict[str, NodeConfig]
    """Every node, by the name edges use."""
    edges: list[list[EdgeItem]]
    """Edge lists: `[START, a, b]` chains, `[a, {route: b, ...}]` routes (a map only last), `[a, END]` ends
    there; `__DEFAULT__` as a route key is taken when no other matches. docs/guides/workflows.md#edges has it all."""
    ttl_seconds: float | None = Field(default=None, gt=0)
    """How long a node's question waits for an answer before it expires (the node then sees a skip);
    unset: it waits until answered."""

    notify: list[Annotated[str, Field(pattern=TARGET_PATTERN)]] = []
    """Where each input the rule applies to is announced, once per request and target: `webhook:NAME` (an email
    or a Slack message decides approvals, not inputs)."""

    @model_validator(mode="after")
    def _one_answer(self) -> WorkflowConfig:
        if self.approvals_required > 1:
            raise ValueError("a workflow's input takes one answer: approvals_required applies to approvals only")
        if self.action != "ask":
            raise ValueError(f"a workflow's input waits for its answer: 'action: {self.action}' applies to tool calls")
        if self.on_timeout is not None and self.on_timeout.action != "expire":
            raise ValueError(
                f"an input has nothing to {self.on_timeout.action}: its 'on_timeout' may only expire it (the node "
                "then sees a skip)"
            )
        return self

    @property
    def has_rule(self) -> bool:
        """Whether the workflow's inputs go through its rule (it routes, escalates, times out, notifies or picks)."""
        return bool(self.approvers or self.escalate or self.on_timeout or self.notify or self.when)

    def input_rule(self, name: str, groups: Mapping[str, Sequence[str]]) -> ToolRule | None:
        """The rule the workflow's inputs are judged by (`name`: the workflow's), groups resolved; `None`: none."""
        if not self.has_rule:
            return None
        rule = self.to_rule(name="*", ttl_seconds=self.ttl_seconds, notify=tuple(self.notify))
        return routed(dataclasses.replace(rule, rule=self.rule or f"workflow:{name}"), self, groups)

    @field_validator("nodes")
    @classmethod
    def _names_are_free(cls, nodes: dict[str, NodeConfig]) -> dict[str, NodeConfig]:
        for name in nodes:
            if name in (START, END):
                raise ValueError(f"{name!r} is reserved for the start and end of the graph; pick another node name")
        return nodes

    @field_validator("edges")
    @classmethod
    def _edges_have_shape(cls, edges: list[list[EdgeItem]]) -> list[list[EdgeItem]]:
        for number, edge in enumerate(edges, 1):
            if len(edge) < 2:
                raise ValueError(f"edge {number} needs at least two elements")
            if any(isinstance(e, dict) for e in edge[:-1]):
                raise ValueError(f"edge {number}: a route map may only come last")
        return edges

    def agent_names(self) -> set[str]:
        """The configured agents this workflow's agent nodes run."""
        return {n.agent for n in self.nodes.values() if isinstance(n, AgentNodeConfig)}


def _workflow_form(value: Any) -> str:
    return "Python" if isinstance(value, Workflow) else "Config"


WorkflowEntry: TypeAlias = Annotated[
    Annotated[WorkflowConfig, Tag("Config")] | Annotated[Workflow, Tag("Python")], Discriminator(_workflow_form)
]
"""A `workflows:` entry: a config entry, or (from Python) a `Workflow`; an error names only the entry's own problems."""


def check_workflow_names(workflows: Mapping[str, WorkflowConfig | Workflow], agents: Collection[str]) -> None:
    """Check a config's workflows against its agents: names that cannot be told apart, agents that do not exist.

    Raises:
        ConfigError: a workflow shares its name with an agent, or an agent node names no configured agent.
    """
    for name, workflow in workflows.items():
        if name in agents:
            message = f"workflow {name!r} has the name of an agent; `entry` could not tell them apart"
            raise PlacedError((("workflows", name), message))
        for node, agent in _agent_names(workflow):
            if agent not in agents:
                known = ", ".join(sorted(agents)) or "none"
                raise PlacedError(
                    (
                        ("workflows", name, "nodes", node, "agent"),
                        f"workflow {name!r}: node {node!r} runs agent {agent!r}, which is not configured "
                        f"(agents: {known})",
                    )
                )


def _agent_names(workflow: WorkflowConfig | Workflow) -> list[tuple[str, str]]:
    """`(node, agent)` for each node that runs a configured agent by name."""
    if isinstance(workflow, Workflow):
        return [
            (name, node.agent.agent)
            for name, node in workflow.nodes.items()
            if node.agent is not None and isinstance(node.agent.agent, str)
        ]
    return [(name, spec.agent) for name, spec in workflow.nodes.items() if isinstance(spec, AgentNodeConfig)]


def build_workflow(
    name: str,
    config: WorkflowConfig,
    *,
    import_spec: Callable[..., Any],
    base_dir: Path | None = None,
) -> Workflow:
    """The `Workflow` a config entry describes, with every graph check of `Workflow` applied.

    Args:
        name: the workflow's name (its key under `workflows:`).
        config: the entry.
        import_spec: resolves `pkg.mod:attr` (the runtime's resolver, which looks in `base_dir` first).
        base_dir: the config file's folder.

    Raises:
        ConfigError: an import spec does not resolve to a function or type, or the graph is wrong.
    """
    nodes: list[FunctionNode | AgentNode] = []
    for node_name, spec in config.nodes.items():
        if isinstance(spec, AgentNodeConfig):
            output_type = None
            if spec.output_type is not None:
                output_type = import_spec(spec.output_type, base_dir=base_dir)
                if not isinstance(output_type, type):
                    raise ConfigError(
                        f"workflow {name!r}: output_type {spec.output_type!r} of {node_name!r} is not a type"
                    )
            nodes.append(AgentNode(spec.agent, name=node_name, output_type=output_type))
            continue
        target = spec if isinstance(spec, str) else spec.function
        fn = import_spec(target, base_dir=base_dir)
        if not callable(fn) or isinstance(fn, type):
            raise ConfigError(f"workflow {name!r}: node {node_name!r}: {target!r} is not a function")
        nodes.append(FunctionNode(fn, name=node_name))
    edges = [tuple(edge) for edge in config.edges]
    return Workflow(name, edges=edges, nodes=nodes, description=config.description, ttl_seconds=config.ttl_seconds)
