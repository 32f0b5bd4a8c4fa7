"""Building a `Workflow`: edges as in ADK, and every graph mistake reported when it is built."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent

from sayso import ConfigError, RequestInput, Workflow
from sayso.workflows import DEFAULT, END, START, AgentNode, FunctionNode


def step1() -> Any:
    yield RequestInput("Enter a number:", response_schema=int)


def step2(node_input: int) -> int:
    return node_input * 2


def a(node_input: Any) -> Any:
    return node_input


def b(node_input: Any) -> Any:
    return node_input


def c(node_input: Any) -> Any:
    return node_input


def needs_more(node_input: Any, extra: str) -> Any:
    return node_input


def uses_defaults(node_input: Any, ctx: Any, extra: str = "x", *args: Any, **kwargs: Any) -> Any:
    return node_input


def test_the_seed_workflow_builds_with_its_chain() -> None:
    """`("START", step1, step2)` is a chain: START leads to step1, step1 to step2, and step2 ends the run."""
    workflow = Workflow("root_agent", edges=[("START", step1, step2)])
    assert workflow.first == "step1"
    assert workflow.successors["step1"].plain == ("step2",)
    assert workflow.terminal == frozenset({"step2"})
    assert list(workflow.nodes) == ["step1", "step2"]


def test_route_dicts_and_loops_build() -> None:
    """A route dict may lead back to an earlier node (a loop) as long as some route leads out."""
    workflow = Workflow("loop", edges=[(START, a, b), (b, {"again": a, "done": c})])
    assert dict(workflow.successors["b"].routes) == {"again": "a", "done": "c"}
    assert workflow.terminal == frozenset({"c"})


def test_nodes_may_be_named_in_edges_and_defined_once() -> None:
    """A string in an edge refers to a node defined by an object elsewhere in the workflow."""
    workflow = Workflow("named", edges=[(START, "a", "b"), (a, b)], nodes=[FunctionNode(b)])
    assert workflow.successors["a"].plain == ("b",)


def test_agent_nodes_are_named_after_their_agent() -> None:
    """A configured agent by name, or a pydantic-ai agent with a name, is a node of that name."""
    planner = Agent("test", name="planner")
    workflow = Workflow("agents", edges=[(START, AgentNode("writer"), planner)])
    assert workflow.agent_nodes == ("writer", "planner")
    assert workflow.nodes["planner"].agent == AgentNode(planner, name="planner")


def test_parameters_with_defaults_and_ctx_are_accepted() -> None:
    """Only `node_input` and `ctx` are filled; other parameters need defaults."""
    workflow = Workflow("params", edges=[(START, uses_defaults)])
    node = workflow.nodes["uses_defaults"]
    assert (node.takes_input, node.takes_ctx) == (True, True)


@pytest.mark.parametrize(
    ("edges", "nodes", "problem"),
    [
        pytest.param([(a, b)], (), "has no edge from START", id="no-start"),
        pytest.param([(START, a, "ghost")], (), "names node 'ghost', which is not defined", id="unknown-node"),
        pytest.param([(START, a), (b, c)], (), "'b', 'c' cannot be reached from START", id="unreachable"),
        pytest.param(
            [(START, a, b), (b, {"done": END}), (a, c)],
            (),
            "several plain successors",
            id="fan-out",
        ),
        pytest.param(
            [(START, a, {"x": b}), (b, END), (a, c)],
            (),
            "node 'c' has no way out and is not terminal",
            id="no-way-out",
        ),
        pytest.param([(START, a, b, a)], (), "the loop a → b → a has no exit route", id="loop-without-exit"),
        pytest.param(
            [(START, a, b), (b, {"again": c}), (c, b)],
            (),
            "the loop b → c → b has no exit route",
            id="routed-loop-without-exit",
        ),
        pytest.param([(START, needs_more)], (), "parameter 'extra' has no default", id="unfillable-parameter"),
        pytest.param([(START, a), (a, START)], (), "no edge may lead back to START", id="back-to-start"),
        pytest.param([(START, a), (END, a)], (), "END has no way out", id="from-end"),
        pytest.param([(START, {"x": a})], (), "START leads to one node, not to routes", id="start-routes"),
        pytest.param([(START, a), (START, b)], (), "START leads to one node, not to a, b", id="two-starts"),
        pytest.param(
            [(START, a), (a, {"x": b, DEFAULT: b}), (a, {"x": c})], (), "leads to both 'b' and 'c'", id="route-clash"
        ),
        pytest.param([(START,)], (), "edge 1 must be a tuple of two or more nodes", id="short-edge"),
        pytest.param([(START, a), (a, {}), (a, b)], (), "empty route dict", id="empty-routes"),
        pytest.param([(START, lambda: 1)], (), "has no usable name", id="lambda"),
        pytest.param([(START, 42)], (), "42 is not a node", id="not-a-node"),
        pytest.param([(START, Agent("test"))], (), "without a name needs AgentNode", id="nameless-agent"),
        pytest.param(
            [(START, AgentNode(42))],  # type: ignore[arg-type]  # the mistake under test
            (),
            "^workflow 'wf': AgentNode\\(42\\): give it a configured agent's name or a pydantic-ai agent$",
            id="agent-node-of-no-agent",
        ),
        pytest.param(
            [(START, AgentNode("planner", output_type=3))],
            (),
            "^workflow 'wf': node 'planner': output_type: 3 is not a type pydantic can validate: "
            "Unable to generate pydantic-core schema for 3$",
            id="output-type-pydantic-cannot-use",
        ),
    ],
)
def test_graph_mistakes_are_config_errors_when_built(edges: list[Any], nodes: tuple[Any, ...], problem: str) -> None:
    """Each mistake in a graph is reported when the workflow is built, naming what to fix."""
    with pytest.raises(ConfigError, match=problem):
        Workflow("wf", edges=edges, nodes=nodes)


def test_two_functions_with_one_name_must_be_told_apart() -> None:
    """Two different functions both named `a` are refused until one is renamed with FunctionNode."""

    def a(node_input: Any) -> Any:  # shadows the module's `a` on purpose
        return node_input

    with pytest.raises(ConfigError, match="two different nodes are named 'a'"):
        Workflow("wf", edges=[(START, a, globals()["a"])])
    workflow = Workflow("wf", edges=[(START, a, FunctionNode(globals()["a"], name="a2"))])
    assert list(workflow.nodes) == ["a", "a2"]


def test_an_unresolvable_input_annotation_is_a_config_error() -> None:
    """A `node_input` annotation that names a type sayso cannot find is refused at build time."""

    def local(node_input: Missing) -> Any:  # type: ignore[name-defined]  # noqa: F821
        return node_input

    with pytest.raises(ConfigError, match="cannot resolve the annotation of 'node_input'"):
        Workflow("wf", edges=[(START, local)])


def test_explicit_end_makes_only_nodes_leading_to_end_terminal() -> None:
    """Once any edge leads to END, a node ends the run only through an edge or route to END."""
    workflow = Workflow("explicit", edges=[(START, a, b), (b, {"again": a, "done": END})])
    assert workflow.terminal == frozenset({"b"})
