"""The `workflows:` section of `sayso.yaml`: its shape, and the mistakes it reports at load time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from sayso import ConfigError
from sayso._engine.tools import import_spec
from sayso.workflows import AgentNodeConfig, FunctionNodeConfig, WorkflowConfig, build_workflow, check_workflow_names

NODES = """\
from pydantic import BaseModel
from sayso.workflows import RequestInput


class Answer(BaseModel):
    text: str


def ask():
    yield RequestInput("Say something", response_schema=str)


def echo(node_input):
    return node_input

NOT_A_FUNCTION = 42
"""


def config(text: str) -> WorkflowConfig:
    return WorkflowConfig.model_validate(yaml.safe_load(text))


@pytest.fixture
def nodes_dir(tmp_path: Path) -> Path:
    (tmp_path / "wf_nodes_for_config_tests.py").write_text(NODES)
    return tmp_path


def build(text: str, base_dir: Path) -> Any:
    return build_workflow("wf", config(text), import_spec=import_spec, base_dir=base_dir)


def test_nodes_by_import_spec_and_by_agent_build_a_workflow(nodes_dir: Path) -> None:
    """Short and long node forms, agent nodes with an output type, chains and route maps all build."""
    workflow = build(
        """
        nodes:
          ask: wf_nodes_for_config_tests:ask
          think: {agent: helper, output_type: "wf_nodes_for_config_tests:Answer"}
          echo: {function: "wf_nodes_for_config_tests:echo"}
        edges:
          - [START, ask, think, echo]
          - [echo, {again: ask, done: END}]
        """,
        nodes_dir,
    )
    assert workflow.first == "ask"
    assert workflow.agent_nodes == ("think",)
    assert workflow.nodes["think"].output_adapter is not None
    assert dict(workflow.successors["echo"].routes) == {"again": "ask", "done": "END"}


def test_node_forms_parse_into_their_models() -> None:
    """A string is an import spec; an `agent` or `function` key picks the node kind."""
    parsed = config("nodes: {a: 'm:f', b: {agent: x}, c: {function: 'm:g'}}\nedges: [[START, a]]")
    assert parsed.nodes == {"a": "m:f", "b": AgentNodeConfig(agent="x"), "c": FunctionNodeConfig(function="m:g")}
    assert parsed.agent_names() == {"x"}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param("nodes: {START: 'm:f'}\nedges: [[START, a]]", "reserved", id="reserved-name"),
        pytest.param("nodes: {a: 'm:f'}\nedges: [[START]]", "at least two elements", id="short-edge"),
        pytest.param("nodes: {a: 'm:f'}\nedges: [[START, {x: a}, a]]", "may only come last", id="routes-not-last"),
        pytest.param("nodes: {a: {agent: x, model: y}}\nedges: [[START, a]]", "Extra inputs", id="unknown-key"),
    ],
)
def test_shape_mistakes_are_refused_when_the_file_is_read(text: str, problem: str) -> None:
    """A malformed entry fails validation with a message saying what is wrong."""
    with pytest.raises(ValidationError, match=problem):
        config(text)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param(
            "nodes: {a: 'wf_nodes_for_config_tests:NOT_A_FUNCTION'}\nedges: [[START, a]]",
            "node 'a': 'wf_nodes_for_config_tests:NOT_A_FUNCTION' is not a function",
            id="not-a-function",
        ),
        pytest.param(
            "nodes: {a: {agent: x, output_type: 'wf_nodes_for_config_tests:echo'}}\nedges: [[START, a]]",
            "output_type 'wf_nodes_for_config_tests:echo' of 'a' is not a type",
            id="output-type-not-a-type",
        ),
        pytest.param(
            "nodes: {a: 'wf_nodes_for_config_tests:echo'}\nedges: [[START, a, b]]",
            "workflow 'wf': an edge names node 'b', which is not defined",
            id="unknown-node",
        ),
        pytest.param(
            "nodes: {a: 'wf_nodes_for_config_tests:echo', b: 'wf_nodes_for_config_tests:echo'}\n"
            "edges: [[START, a, b, a]]",
            "the loop a → b → a has no exit route",
            id="loop-without-exit",
        ),
        pytest.param(
            "nodes: {a: 'nowhere_module:f'}\nedges: [[START, a]]", "cannot import 'nowhere_module'", id="bad-spec"
        ),
    ],
)
def test_meaning_mistakes_are_config_errors_naming_the_workflow_and_node(
    text: str, problem: str, nodes_dir: Path
) -> None:
    """Specs that do not resolve and graphs that do not hold fail when the workflow is built."""
    with pytest.raises(ConfigError, match=problem):
        build(text, nodes_dir)


def test_workflow_names_are_checked_against_the_agents() -> None:
    """An agent node must name a configured agent, and a workflow may not share an agent's name."""
    workflow = config("nodes: {a: {agent: planner}}\nedges: [[START, a]]")
    check_workflow_names({"trip": workflow}, ["planner"])
    with pytest.raises(ConfigError, match="runs agent 'planner', which is not configured \\(agents: writer\\)"):
        check_workflow_names({"trip": workflow}, ["writer"])
    with pytest.raises(ConfigError, match="workflow 'planner' has the name of an agent"):
        check_workflow_names({"planner": workflow}, ["planner"])
