"""Workflow graphs (docs/guides/workflows.md) on Temporal: the concierge example's loop, each run a workflow worked on
by a worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from sayso import InputRequest, InvalidDecision, Provide, Sayso

from .conftest import Project, workflows_on

CONCIERGE = Path(__file__).resolve().parents[2] / "examples" / "concierge"


async def test_the_concierge_graph_pauses_refuses_and_finishes_on_temporal(tmp_path: Path, temporal: Project) -> None:
    """A graph's form refuses a wrong answer (the pause stays), then the loop runs to the plan, all on a worker."""
    config = temporal.example(CONCIERGE, tmp_path / "concierge")
    temporal.workers(config).start()
    async with Sayso.from_yaml(config) as front:
        ask = await front.run("Plan my day")
        [form] = ask.requests
        assert isinstance(form, InputRequest) and form.node == "ask_preferences"
        with pytest.raises(InvalidDecision, match="city: field required"):
            await front.decide(form.request_id, Provide(value={"hobby": "fado"}))
        review = (await front.decide(form.request_id, Provide(value={"city": "Lisbon", "hobby": "fado"}))).run
        [feedback] = review.requests
        assert isinstance(feedback, InputRequest) and feedback.node == "get_user_feedback"
        done = (await front.decide(feedback.request_id, Provide(value={"user_response": "perfect", "done": True}))).run
    assert done.status == "completed"
    assert done.output is not None and done.output.startswith("Your day in Lisbon")
    assert await workflows_on(temporal.address, temporal.task_queue) == {f"sayso-concierge-{ask.run_id}": "COMPLETED"}
