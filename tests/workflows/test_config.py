"""The `workflows:` section of `sayso.yaml`: its shape, and the mistakes it reports at load time."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from typer.testing import CliRunner

from sayso import ConfigError, Provide, Sayso
from sayso._engine.imports import import_spec
from sayso.cli import app
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


ROUTED_NODES = """\
from sayso.workflows import RequestInput


def ask():
    return (yield RequestInput("Go on?", response_schema=str))


def confirm():
    return (yield RequestInput("Go on?", response_schema=bool))


def went_on(node_input):
    return "went on"


def stopped(node_input):
    return "stopped"
"""


def routed_config(tmp_path: Path, routes: str, *, asker: str = "ask") -> Path:
    """A config whose workflow `w` asks at node `ask` and goes by `routes` to `go` or `stop`."""
    (tmp_path / "wf_routed_nodes.py").write_text(ROUTED_NODES)
    config = tmp_path / "sayso.yaml"
    config.write_text(
        f"store: sqlite:///{tmp_path / 'sayso.db'}\n"
        "agents:\n  a: {model: test}\n"
        "workflows:\n"
        "  w:\n"
        f"    nodes: {{ask: 'wf_routed_nodes:{asker}', go: 'wf_routed_nodes:went_on',\n"
        "             stop: 'wf_routed_nodes:stopped'}\n"
        "    edges:\n"
        "      - [START, ask]\n"
        f"      - [ask, {routes}]\n"
        "entry: w\n"
    )
    return config


def test_unquoted_yes_and_no_route_keys_are_refused_at_load_naming_the_node(tmp_path: Path) -> None:
    """YAML reads `yes:`/`no:` as booleans that the node's `"yes"` never matches: `sayso check` and loading refuse
    them, each on its line, naming the node and saying to quote the key."""
    config = routed_config(tmp_path, "{yes: go, no: stop}")
    done = CliRunner().invoke(app, ["check", str(config)])
    assert done.exit_code == 2
    assert (
        f"{config}:10: error: workflows.w.edges[1][1].yes: route yes of node 'ask' is read by YAML as the boolean "
        "true, so the node's 'yes' never matches it. Fix: quote it, \"yes\": go, for a node that says 'yes'; or "
        "write true: go for one that returns a boolean"
    ) in done.stderr
    assert f"{config}:10: error: workflows.w.edges[1][1].no: route no of node 'ask'" in done.stderr
    with pytest.raises(ConfigError, match="route yes of node 'ask' is read by YAML as the boolean true"):
        Sayso.from_yaml(config)


@pytest.mark.parametrize(
    ("routes", "asker", "answer"),
    [
        pytest.param('{"yes": go, "no": stop}', "ask", "yes", id="quoted-words"),
        pytest.param("{true: go, false: stop}", "confirm", True, id="booleans-for-a-boolean-node"),
    ],
)
async def test_quoted_words_and_true_false_route_keys_load_and_route(
    tmp_path: Path, routes: str, asker: str, answer: object
) -> None:
    """Quoted `"yes"` is the text a node says; `true:` is the boolean a node returns: both load, and route."""
    async with Sayso.from_yaml(routed_config(tmp_path, routes, asker=asker)) as runtime:
        [request] = (await runtime.run("go", agent="w")).requests
        done = await runtime.decide(request.request_id, Provide(value=answer))
    assert (done.run.status, done.run.output) == ("completed", "went on")


@dataclass(frozen=True)
class BadWorkflow:
    id: str
    workflow: str
    errors: list[str]


BAD_WORKFLOWS = [
    BadWorkflow(
        "node-of-no-form",
        "nodes: {ask: 42}\n    edges: [[START, ask]]",
        ["workflows.w.nodes.ask: a node is an import spec ('pkg.mod:fn'), {function: 'pkg.mod:fn'} or {agent: NAME}"],
    ),
    BadWorkflow(
        "misspelt-node-field",
        "nodes: {ask: {funktion: 'wf_routed_nodes:ask'}}\n    edges: [[START, ask]]",
        [
            "workflows.w.nodes.ask.function: Field required. Fix: add it.",
            "workflows.w.nodes.ask.funktion: Extra inputs are not permitted. Fix: did you mean 'function'? "
            "Or remove it.",
        ],
    ),
    BadWorkflow(
        "missing-edges", "nodes: {ask: 'wf_routed_nodes:ask'}", ["workflows.w.edges: Field required. Fix: add it."]
    ),
    BadWorkflow(
        "edge-of-a-number",
        "nodes: {ask: 'wf_routed_nodes:ask'}\n    edges: [[START, ask, 5]]",
        [
            "workflows.w.edges[0][2]: an edge lists node names (START, END or one under 'nodes'), and may end with a "
            "route map"
        ],
    ),
    BadWorkflow(
        "unknown-route-target",
        "nodes: {ask: 'wf_routed_nodes:ask'}\n    edges: [[START, ask], [ask, {'y': nowhere}]]",
        ["workflows.w: an edge names node 'nowhere', which is not defined (known: ask)"],
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in BAD_WORKFLOWS])
def test_a_bad_workflow_is_one_line_per_problem_at_check(tmp_path: Path, case: BadWorkflow) -> None:
    """A wrong node, a missing field, a bad edge or an unknown route target is one `file:line: error:` line each,
    naming the field: no line per union member (`Input should be an instance of Workflow`), no repeated name."""
    (tmp_path / "wf_routed_nodes.py").write_text(ROUTED_NODES)
    config = tmp_path / "sayso.yaml"
    config.write_text(f"agents:\n  a: {{model: test}}\nworkflows:\n  w:\n    {case.workflow}\n")
    done = CliRunner().invoke(app, ["check", str(config)])
    assert done.exit_code == 2
    said = [line.split(": error: ", 1)[1] for line in done.stderr.splitlines() if ": error: " in line]
    assert said == case.errors
