"""The concierge example: its YAML builds the graph of its Python module, and the whole loop runs on the engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic_ai import Agent

from sayso import InputRequest, InvalidDecision, Provide, Sayso, ScriptedModel, load_config
from sayso._config.file import ScriptedModelConfig
from sayso._engine.imports import import_spec
from sayso.workflows import (
    AgentFinished,
    AgentNodeCall,
    AgentOutcome,
    MemoryWorkflowPersistence,
    Workflow,
    WorkflowConfig,
    WorkflowEngine,
    WorkflowFinished,
    WorkflowOutcome,
    WorkflowPaused,
    build_workflow,
    check_workflow_names,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "concierge"


def load_example() -> tuple[dict[str, Any], Workflow]:
    raw = yaml.safe_load((EXAMPLE / "sayso.yaml").read_text())
    workflows = {name: WorkflowConfig.model_validate(entry) for name, entry in raw["workflows"].items()}
    check_workflow_names(workflows, raw["agents"])
    return raw, build_workflow("concierge", workflows["concierge"], import_spec=import_spec, base_dir=EXAMPLE)


class ScriptedAgents:
    """Runs each agent node on a pydantic-ai agent with the example's scripted model (it never pauses)."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def start(self, call: AgentNodeCall) -> AgentOutcome:
        assert call.agent == "planner"
        self.prompts.append(call.prompt)
        agent = Agent(ScriptedModel.from_file(EXAMPLE / "planner.script.yaml"))
        return AgentFinished(output=(await agent.run(call.prompt)).output)

    async def resume(self, call: AgentNodeCall, handle: str) -> AgentOutcome:
        raise AssertionError("the scripted planner never pauses")


def waiting(outcome: WorkflowOutcome) -> WorkflowPaused:
    assert isinstance(outcome, WorkflowPaused), outcome
    assert outcome.input is not None
    return outcome


def test_the_yaml_and_the_python_module_describe_the_same_graph() -> None:
    """The `workflows:` entry builds the graph that `concierge_nodes.workflow` declares in Python."""
    _, from_yaml = load_example()
    from_python = import_spec("concierge_nodes:workflow", base_dir=EXAMPLE)
    assert isinstance(from_python, Workflow)
    assert from_yaml.first == from_python.first == "ask_preferences"
    assert from_yaml.successors == from_python.successors
    assert from_yaml.terminal == from_python.terminal == frozenset({"write_plan"})
    assert from_yaml.agent_nodes == ("propose",)


async def test_the_itinerary_loop_runs_until_the_person_is_done() -> None:
    """Ask (city required), propose, refine once with feedback, then write the plan; each step on a fresh engine."""
    _, workflow = load_example()
    persistence = MemoryWorkflowPersistence()
    agents = ScriptedAgents()

    def fresh() -> WorkflowEngine:
        return WorkflowEngine(workflow, persistence=persistence, agents=agents)

    ask = waiting(await fresh().start("run_1", "Plan my day"))
    assert ask.input is not None and ask.input.response_schema["required"] == ["city"]
    with pytest.raises(InvalidDecision, match="city: field required"):
        await fresh().resume(await persistence.load("run_1"), Provide(value={"hobby": "photography"}))

    state = await persistence.load("run_1")
    review = waiting(await fresh().resume(state, Provide(value={"city": "Lisbon", "hobby": "photography"})))
    assert review.node == "get_user_feedback"
    assert review.input is not None
    assert [a["name"] for a in review.input.payload["itinerary"]] == [
        "Morning in the old town",
        "An afternoon of photography",
        "Dinner with a view",
    ]
    assert review.input.response_schema["properties"]["done"]["type"] == "boolean"

    state = await persistence.load("run_1")
    again = waiting(await fresh().resume(state, Provide(value={"user_response": "add a fado show"})))
    assert again.input is not None
    assert again.input.payload["itinerary"][1] == {"name": "Your request", "description": "add a fado show"}
    assert again.input.key == "get_user_feedback:2:1"

    state = await persistence.load("run_1")
    done = await fresh().resume(state, Provide(value={"user_response": "lovely", "done": True}))
    assert isinstance(done, WorkflowFinished)
    assert done.output == (
        "Your day in Lisbon\n\n"
        "1. Morning in the old town: Walk the oldest streets of Lisbon before the crowds.\n"
        "2. Your request: add a fado show\n"
        "3. Dinner with a view: A table at sunset over Lisbon.\n\n"
        "Your notes: lovely"
    )
    assert len(agents.prompts) == 2
    assert [f.node for f in done.state.finished] == [
        "ask_preferences",
        "propose",
        "get_user_feedback",
        "propose",
        "get_user_feedback",
        "write_plan",
    ]


WISH = 'a "tram" ride, there\\back'
"""A wish the script's JSON must carry as written: quotes and a backslash."""


async def test_the_example_runs_in_the_runtime_from_its_yaml() -> None:
    """`sayso.yaml` as shipped: its workflow entry refuses a wrong form, runs the loop and writes the plan; a wish
    with quotes and a backslash reaches the plan as written (the script once cut it short and broke the run)."""
    async with Sayso.from_yaml(EXAMPLE / "sayso.yaml") as app:
        ask = await app.run("Plan my day")
        [form] = ask.requests
        assert isinstance(form, InputRequest) and form.node == "ask_preferences" and ask.agent == "concierge"
        with pytest.raises(InvalidDecision, match="city: field required"):
            await app.decide(form.request_id, Provide(value={"hobby": "fado"}))
        review = (await app.decide(form.request_id, Provide(value={"city": "Lisbon", "hobby": "fado"}))).run
        [feedback] = review.requests
        assert isinstance(feedback, InputRequest) and feedback.node == "get_user_feedback"
        assert feedback.payload["itinerary"][1]["name"] == "An afternoon of fado"
        again = (await app.decide(feedback.request_id, Provide(value={"user_response": WISH}))).run
        [second] = again.requests
        assert isinstance(second, InputRequest) and second.payload["itinerary"][1]["description"] == WISH
        done = (await app.decide(second.request_id, Provide(value={"user_response": "perfect", "done": True}))).run
        left = (await app.inbox()).requests
    assert done.status == "completed"
    assert done.output is not None and done.output.startswith("Your day in Lisbon\n\n1. Morning in the old town")
    assert f"2. Your request: {WISH}" in done.output and left == []


def test_the_demo_config_serves_both_examples_as_their_own_configs_do() -> None:
    """`examples/demo.yaml` (what `make demo` serves) repeats the files agent, the planner and the concierge
    workflow exactly as their own configs write them, reaching their modules from the examples folder."""
    examples = EXAMPLE.parent
    demo = load_config(examples / "demo.yaml")
    files = load_config(examples / "files" / "sayso.yaml")
    concierge = load_config(EXAMPLE / "sayso.yaml")

    def local(value: Any) -> Any:
        """Import specs as the example's own config writes them: `files.files_tools:x` is `files_tools:x`."""
        if isinstance(value, str):
            return value.removeprefix("files.").removeprefix("concierge.")
        if isinstance(value, dict):
            return {k: local(v) for k, v in value.items()}
        if isinstance(value, list):
            return [local(v) for v in value]
        return value

    assert local(demo.agents["files"].model_dump()) == files.agents["files"].model_dump()
    assert local(demo.agents["planner"].model_dump()) == concierge.agents["planner"].model_dump()
    [demo_flow, concierge_flow] = [demo.workflows["concierge"], concierge.workflows["concierge"]]
    assert isinstance(demo_flow, WorkflowConfig) and isinstance(concierge_flow, WorkflowConfig)
    assert local(demo_flow.model_dump()) == concierge_flow.model_dump()
    for config, name in ((files, "demo"), (concierge, "planner")):
        ours, theirs = demo.models[name], config.models[name]
        assert isinstance(ours, ScriptedModelConfig) and isinstance(theirs, ScriptedModelConfig)
        assert (demo.base_dir / ours.scripted).resolve() == (config.base_dir / theirs.scripted).resolve()
