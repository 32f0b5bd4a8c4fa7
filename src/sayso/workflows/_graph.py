"""`Workflow`: a graph of function and agent nodes joined by edges from `START`, checked when built.

Edges are written as in Google ADK 2.x (seed 004):

```python
Workflow(
    name="concierge",
    edges=[
        ("START", ask_preferences, AgentNode("planner"), get_feedback),  # a chain
        (get_feedback, {"revise": AgentNode("planner"), "done": write_plan}),  # routes
    ],
)
```

A tuple of more than two elements is a chain; a dict as the last element maps route values
to nodes. A node is a function (sync or `async`, or a generator of either kind that yields
`RequestInput`), an `AgentNode` (a configured agent by name, or a pydantic-ai agent), a
`FunctionNode` (a function under another name), or a string naming a node defined elsewhere
in the workflow.

**Terminal nodes.** When some edge or route leads to `END`, the terminal nodes are exactly the
ones that lead to `END`, and every other node must have a way out. When no edge names `END`,
every node without an outgoing edge is terminal. A terminal node's output is the workflow's
output.

Everything that can be checked without running is checked here and raised as `ConfigError`:
unknown node names, two nodes with one name, parameters sayso cannot fill, a node unreachable
from `START`, a node with no way out that is not terminal, and a loop with no exit route.
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeGuard

from pydantic import TypeAdapter

from .._core.steps import StepScope
from ..exceptions import ConfigError, UsageError

if TYPE_CHECKING:
    from pydantic_ai.agent import AbstractAgent

START: Final = "START"
"""Where every workflow begins: the first element of the first edge."""
END: Final = "END"
"""An edge or route to `END` makes its source terminal (the Edges section of docs/guides/workflows.md)."""
DEFAULT: Final = "__DEFAULT__"
"""A route key taken when a node's route value matches no other key."""

RouteKey: TypeAlias = str | int | bool
"""What a route is named by, as in ADK: usually a string."""

INPUT_PARAMETER: Final = "node_input"
"""The parameter that receives the previous node's output (the workflow's input for the first node)."""
CONTEXT_PARAMETER: Final = "ctx"
"""The parameter that receives the [`WorkflowContext`][sayso.workflows.WorkflowContext]."""


@dataclass(frozen=True)
class Route:
    """Returned (or yielded) by a node to choose its successor.

    `route` is a key of the node's route dict, or the name of one of its successors. The
    successor receives `output` as its `node_input`.
    """

    route: RouteKey
    _: KW_ONLY
    output: Any = None
    """What the chosen successor receives."""


@dataclass(frozen=True, kw_only=True)
class WorkflowContext:
    """What a node taking a `ctx` parameter gets: where it runs, and state shared across nodes."""

    run_id: str
    """The workflow's run."""
    workflow: str
    """The workflow's name."""
    node: str
    """The running node's name."""
    visit: int
    """How many times this node has started in this run, this time included (a loop's second pass: 2)."""
    principal: str | None
    """Who the run acts for, when known."""
    state: dict[str, Any]
    """Data shared by the nodes of a run: must stay JSON-serialisable. Changes are kept when the
    node finishes; a node that pauses and resumes starts again from the state it first saw."""
    outputs: Mapping[str, Any]
    """The latest output of each finished node, as stored (JSON)."""
    steps: StepScope | None = field(default=None, repr=False, compare=False)
    """The steps this pass of the node takes (`step`), recorded with the run by the engine's journal."""

    async def step(
        self, name: str, fn: Callable[..., Any], /, *args: Any, idempotent: bool = False, **kwargs: Any
    ) -> Any:
        """Run `fn(*args, **kwargs)` once for the run, as the step `name`; a replay of the node gets its result back.

        A node that asked for input (`RequestInput`) runs again from the top with each answer, and
        a node whose process died runs again in the process that carries the run on; what it wraps
        in a step is done once, and its result (as recorded, JSON) comes back on every later run.
        The same as `sayso.step(ctx, name, fn, *args)`; see it for the rules (names, order,
        `idempotent`, `StepOutcomeUnknown`). In an `async def` node.
        """
        if self.steps is None:
            raise UsageError("this WorkflowContext was built without a step journal; the engine builds the nodes' own")
        return await self.steps.run(name, fn, args, kwargs, idempotent=idempotent)


@dataclass(frozen=True)
class FunctionNode:
    """A function as a node, under a name of its choosing (the function's `__name__` by default).

    Use it to run one function at two places of a graph, or to name a lambda.
    """

    fn: Callable[..., Any]
    _: KW_ONLY
    name: str = ""
    """The node's name; empty means the function's `__name__`."""


@dataclass(frozen=True)
class AgentNode:
    """An agent as a node: it receives the previous output as its prompt and answers with its output.

    The runtime runs it (see [`AgentNodeRunner`][sayso.workflows.AgentNodeRunner]); its approvals,
    questions and client tools pause the workflow, labelled with the node.
    """

    agent: str | AbstractAgent[Any, Any]
    """A configured agent's name, or a pydantic-ai agent."""
    _: KW_ONLY
    name: str = ""
    """The node's name; empty means the agent's name."""
    output_type: Any = None
    """Parse the agent's answer into this type (text answers are read as JSON); `None` keeps it as is."""


NodeLike: TypeAlias = "Callable[..., Any] | FunctionNode | AgentNode | AbstractAgent[Any, Any] | str"
"""Anything an edge may name: a function, a node object, a pydantic-ai agent, or a node's name."""
EdgeSpec: TypeAlias = "Sequence[NodeLike | Mapping[RouteKey, NodeLike]]"
"""One edge tuple: `(a, b)`, a chain `(a, b, c)`, or routes `(a, {"x": b, "y": c})`."""


@dataclass(frozen=True, kw_only=True)
class CompiledNode:
    """A node as the engine runs it: its name, what it is, and how to call it."""

    name: str
    kind: Literal["function", "agent"]
    fn: Callable[..., Any] | None = None
    agent: AgentNode | None = None
    takes_input: bool = False
    takes_ctx: bool = False
    input_adapter: TypeAdapter[Any] | None = None
    """Validates the stored (JSON) input into the node's `node_input` annotation, if it has one."""
    output_adapter: TypeAdapter[Any] | None = None
    """For an agent node with `output_type`."""


@dataclass(frozen=True, kw_only=True)
class Successors:
    """Where a node may go next."""

    plain: tuple[str, ...] = ()
    """Targets of plain edges (at most one, or `END`)."""
    routes: Mapping[RouteKey, str] = field(default_factory=dict[RouteKey, str])
    """Targets by route key."""

    def targets(self) -> tuple[str, ...]:
        """Every node this one may lead to, `END` included."""
        return tuple(dict.fromkeys([*self.plain, *self.routes.values()]))


class Workflow:
    """A graph of nodes joined by edges from `START`, checked when it is built.

    Args:
        name: the workflow's name (what `entry` and the interfaces call it).
        edges: edge tuples: `(START, a, b)` chains, `(a, {route: b, ...})` routes; a route or edge to `END`
            makes its source terminal (the Edges section of docs/guides/workflows.md).
        nodes: extra nodes that edges refer to by name only (the YAML loader passes every node here).
        description: what the workflow does, for people and for agent cards.
        ttl_seconds: how long a node's question waits before it expires (the node then sees a
            skip, `InputSkipped`); `None` waits until answered.

    Raises:
        ConfigError: the graph is wrong; the message names the node and what to change.
    """

    def __init__(
        self,
        name: str,
        *,
        edges: Sequence[EdgeSpec],
        nodes: Sequence[FunctionNode | AgentNode | Callable[..., Any]] = (),
        description: str = "",
        ttl_seconds: float | None = None,
    ) -> None:
        if ttl_seconds is not None and ttl_seconds <= 0:
            raise ConfigError(f"workflow {name!r}: ttl_seconds must be more than 0, not {ttl_seconds!r}")
        self.name = name
        self.description = description
        self.ttl_seconds = ttl_seconds
        self._defined: dict[str, FunctionNode | AgentNode] = {}
        for node in nodes:
            self._define(node)
        raw: list[tuple[NodeLike, NodeLike | Mapping[RouteKey, NodeLike]]] = []
        for number, edge in enumerate(edges, 1):
            raw.extend(self._pairs(number, edge))
        self.successors: dict[str, Successors] = {}
        self.first = self._connect(raw)
        self.nodes: dict[str, CompiledNode] = {n: _compile(node, name) for n, node in self._defined.items()}
        self.terminal = self._check_shape()

    def __repr__(self) -> str:
        return f"Workflow({self.name!r}, nodes={list(self.nodes)})"

    @property
    def agent_nodes(self) -> tuple[str, ...]:
        """The names of the nodes that run an agent."""
        return tuple(n for n, node in self.nodes.items() if node.kind == "agent")

    # building

    def _pairs(self, number: int, edge: EdgeSpec) -> list[tuple[NodeLike, NodeLike | Mapping[RouteKey, NodeLike]]]:
        if isinstance(edge, str | Mapping) or not isinstance(edge, Sequence) or len(edge) < 2:
            raise ConfigError(f"workflow {self.name!r}: edge {number} must be a tuple of two or more nodes")
        pairs: list[tuple[NodeLike, NodeLike | Mapping[RouteKey, NodeLike]]] = []
        for i in range(len(edge) - 1):
            source, target = edge[i], edge[i + 1]
            if isinstance(source, Mapping):
                raise ConfigError(f"workflow {self.name!r}: edge {number}: a route dict may only come last")
            pairs.append((source, target))
        return pairs

    def _connect(self, raw: list[tuple[NodeLike, NodeLike | Mapping[RouteKey, NodeLike]]]) -> str:
        # Define every node first so names may be used before the object that defines them.
        for source, target in raw:
            for item in (source, *(target.values() if isinstance(target, Mapping) else (target,))):
                if not isinstance(item, str):
                    self._define(item)
        plain: dict[str, list[str]] = {}
        routes: dict[str, dict[RouteKey, str]] = {}
        for source, target in raw:
            src = self._name_of(source, as_source=True)
            if isinstance(target, Mapping):
                self._add_routes(src, target, routes.setdefault(src, {}))
            else:
                dst = self._name_of(target, as_source=False)
                targets = plain.setdefault(src, [])
                if dst not in targets:
                    targets.append(dst)
        for src, targets in plain.items():
            if len(targets) > 1 and src == START:
                raise ConfigError(f"workflow {self.name!r}: START leads to one node, not to {', '.join(targets)}")
            if len(targets) > 1:
                raise ConfigError(
                    f"workflow {self.name!r}: node {src!r} has several plain successors ({', '.join(targets)}); "
                    "sayso runs one node at a time: give it routes, e.g. "
                    f"({src!r}, {{{', '.join(f'{t!r}: {t!r}' for t in targets)}}}), and return Route(...)"
                )
        if START not in plain:
            raise ConfigError(f"workflow {self.name!r} has no edge from START")
        first = plain.pop(START)[0]
        if first == END:
            raise ConfigError(f"workflow {self.name!r}: START must lead to a node, not to END")
        for src in dict.fromkeys([*plain, *routes]):
            self.successors[src] = Successors(plain=tuple(plain.get(src, ())), routes=routes.get(src, {}))
        return first

    def _add_routes(self, src: str, target: Mapping[RouteKey, NodeLike], table: dict[RouteKey, str]) -> None:
        if src == START:
            raise ConfigError(f"workflow {self.name!r}: START leads to one node, not to routes")
        if not target:
            raise ConfigError(f"workflow {self.name!r}: node {src!r} has an empty route dict")
        for key, node in target.items():
            if not isinstance(key, str | int | bool):
                raise ConfigError(f"workflow {self.name!r}: route {key!r} of {src!r} must be a str, int or bool")
            dst = self._name_of(node, as_source=False)
            if table.get(key, dst) != dst:
                raise ConfigError(
                    f"workflow {self.name!r}: route {key!r} of {src!r} leads to both {table[key]!r} and {dst!r}"
                )
            table[key] = dst

    def _define(self, item: NodeLike) -> str:
        node = _as_node(item, self.name)
        assert not isinstance(node, str)
        known = self._defined.get(node.name)
        if known is None:
            self._defined[node.name] = node
        elif known != node:
            raise ConfigError(
                f"workflow {self.name!r}: two different nodes are named {node.name!r}; "
                "wrap one in FunctionNode(fn, name=...) or AgentNode(agent, name=...)"
            )
        return node.name

    def _name_of(self, item: NodeLike, *, as_source: bool) -> str:
        if isinstance(item, str):
            if item == START:
                if not as_source:
                    raise ConfigError(f"workflow {self.name!r}: no edge may lead back to START")
                return START
            if item == END:
                if as_source:
                    raise ConfigError(f"workflow {self.name!r}: END has no way out; it can only end an edge")
                return END
            if item not in self._defined:
                known = ", ".join(sorted(self._defined)) or "none"
                raise ConfigError(
                    f"workflow {self.name!r}: an edge names node {item!r}, which is not defined (known: {known})"
                )
            return item
        return self._define(item)

    def _check_shape(self) -> frozenset[str]:
        reachable = _reachable(self.first, self.successors)
        unreachable = [n for n in self._defined if n not in reachable]
        if unreachable:
            raise ConfigError(
                f"workflow {self.name!r}: node(s) {', '.join(map(repr, unreachable))} cannot be reached from START"
            )
        explicit = any(END in s.targets() for s in self.successors.values())
        if explicit:
            terminal = frozenset(n for n, s in self.successors.items() if END in s.targets())
            for name in self.nodes:
                if name not in self.successors:
                    raise ConfigError(
                        f"workflow {self.name!r}: node {name!r} has no way out and is not terminal; "
                        "add an edge from it, or an edge to END to make it terminal"
                    )
        else:
            terminal = frozenset(n for n in self.nodes if n not in self.successors)
        stuck = _cannot_reach(terminal, self.nodes, self.successors)
        if stuck:
            cycle = _a_cycle(stuck, self.successors)
            raise ConfigError(
                f"workflow {self.name!r}: the loop {' → '.join(cycle)} has no exit route: "
                "no node of it leads to a terminal node; add a route out of the loop"
            )
        return terminal


def _is_agent(item: object) -> TypeGuard[AbstractAgent[Any, Any]]:
    """Whether `item` is a pydantic-ai agent, without importing pydantic-ai when none was ever made."""
    agents = sys.modules.get("pydantic_ai.agent")
    return agents is not None and isinstance(item, agents.AbstractAgent)


def _as_node(item: NodeLike, workflow: str) -> FunctionNode | AgentNode:
    if isinstance(item, AgentNode):
        if not isinstance(item.agent, str) and not _is_agent(item.agent):
            raise ConfigError(
                f"workflow {workflow!r}: AgentNode({item.agent!r}): give it a configured agent's name "
                "or a pydantic-ai agent"
            )
        if item.name:
            return item
        if isinstance(item.agent, str):
            return replace(item, name=item.agent)
        if item.agent.name:
            return replace(item, name=item.agent.name)
        raise ConfigError(f"workflow {workflow!r}: a pydantic-ai agent without a name needs AgentNode(agent, name=...)")
    if _is_agent(item):
        return _as_node(AgentNode(item), workflow)
    if isinstance(item, FunctionNode):
        name = item.name or getattr(item.fn, "__name__", "")
        if not name or name == "<lambda>":
            raise ConfigError(f"workflow {workflow!r}: {item.fn!r} has no usable name; use FunctionNode(fn, name=...)")
        return replace(item, name=name)
    if callable(item):
        return _as_node(FunctionNode(item), workflow)
    raise ConfigError(
        f"workflow {workflow!r}: {item!r} is not a node (a function, an AgentNode, a pydantic-ai agent or a node name)"
    )


def _compile(node: FunctionNode | AgentNode, workflow: str) -> CompiledNode:
    where = f"workflow {workflow!r}: node {node.name!r}"
    if isinstance(node, AgentNode):
        adapter = None if node.output_type is None else _adapter(node.output_type, f"{where}: output_type")
        return CompiledNode(name=node.name, kind="agent", agent=node, output_adapter=adapter)
    try:
        signature = inspect.signature(node.fn)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: cannot read the signature of {node.fn!r}: {exc}") from None
    takes_input = takes_ctx = False
    for parameter in signature.parameters.values():
        if parameter.name == INPUT_PARAMETER:
            takes_input = True
        elif parameter.name == CONTEXT_PARAMETER:
            takes_ctx = True
        elif parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        elif parameter.default is parameter.empty:
            raise ConfigError(
                f"{where}: parameter {parameter.name!r} has no default and sayso fills only "
                f"{INPUT_PARAMETER!r} (the previous output) and {CONTEXT_PARAMETER!r} (the workflow context)"
            )
    input_adapter = None
    if takes_input:
        annotation = _input_annotation(node, where)
        if annotation is not None:
            input_adapter = _adapter(annotation, f"{where}: the annotation of {INPUT_PARAMETER}")
    return CompiledNode(
        name=node.name,
        kind="function",
        fn=node.fn,
        takes_input=takes_input,
        takes_ctx=takes_ctx,
        input_adapter=input_adapter,
    )


def _input_annotation(node: FunctionNode, where: str) -> Any:
    target = node.fn if inspect.isfunction(node.fn) or inspect.ismethod(node.fn) else type(node.fn).__call__
    try:
        hints = typing.get_type_hints(target)
    except Exception as exc:  # any failure to resolve an annotation becomes a ConfigError
        raise ConfigError(
            f"{where}: cannot resolve the annotation of {INPUT_PARAMETER!r} ({exc}); "
            "define the types it names at module level"
        ) from None
    annotation = hints.get(INPUT_PARAMETER)
    return None if annotation is Any else annotation


def _adapter(annotation: Any, what: str) -> TypeAdapter[Any]:
    try:
        return TypeAdapter(annotation)
    except Exception as exc:  # pydantic raises several unrelated types for an unusable type
        # Its first sentence says why; the rest is advice on writing pydantic schemas, and a link.
        why = str(exc).splitlines()[0].split(". ")[0]
        raise ConfigError(f"{what}: {annotation!r} is not a type pydantic can validate: {why}") from None


def _reachable(first: str, successors: Mapping[str, Successors]) -> set[str]:
    seen: set[str] = set()
    todo = [first]
    while todo:
        name = todo.pop()
        if name in seen or name == END:
            continue
        seen.add(name)
        todo.extend(successors.get(name, Successors()).targets())
    return seen


def _cannot_reach(
    terminal: frozenset[str], nodes: Mapping[str, CompiledNode], successors: Mapping[str, Successors]
) -> list[str]:
    """The nodes from which no path leads to a terminal node."""
    good = set(terminal)
    changed = True
    while changed:
        changed = False
        for name in nodes:
            if name not in good and any(t in good for t in successors.get(name, Successors()).targets()):
                good.add(name)
                changed = True
    return [n for n in nodes if n not in good]


def _a_cycle(stuck: list[str], successors: Mapping[str, Successors]) -> list[str]:
    """A cycle among `stuck` nodes, as a path that ends where it started."""
    inside = set(stuck)
    path: list[str] = []
    name = stuck[0]
    while name not in path:
        path.append(name)
        name = next(t for t in successors[name].targets() if t in inside)
    return [*path[path.index(name) :], name]
