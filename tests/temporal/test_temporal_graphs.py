"""Workflow graphs (docs/guides/workflows.md) on Temporal: the concierge example's loop, each run a workflow worked on
by a worker."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sayso import InputRequest, InvalidDecision, Provide, Sayso

from .conftest import Workers, temporal_config, workflows_on

CONCIERGE = Path(__file__).resolve().parents[2] / "examples" / "concierge"


async def test_the_concierge_graph_pauses_refuses_and_finishes_on_temporal(
    tmp_path: Path,
    temporal_address: str,
    task_queue: str,
    workers_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A graph's form refuses a wrong answer (the pause stays), then the loop runs to the plan, all on a worker."""
    folder = tmp_path / "concierge"
    shutil.copytree(CONCIERGE, folder, ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    body = (CONCIERGE / "sayso.yaml").read_text()
    config = temporal_config(folder, address=temporal_address, task_queue=task_queue, body=body)
    monkeypatch.syspath_prepend(str(folder))
    pool = Workers(config, {**workers_env, "PYTHONPATH": f"{folder}:{workers_env['PYTHONPATH']}"})
    pool.start()
    try:
        async with Sayso.from_yaml(config) as front:
            ask = await front.run("Plan my day")
            [form] = ask.requests
            assert isinstance(form, InputRequest) and form.node == "ask_preferences"
            with pytest.raises(InvalidDecision, match="city: field required"):
                await front.decide(form.request_id, Provide(value={"hobby": "fado"}))
            review = (await front.decide(form.request_id, Provide(value={"city": "Lisbon", "hobby": "fado"}))).run
            [feedback] = review.requests
            assert isinstance(feedback, InputRequest) and feedback.node == "get_user_feedback"
            done = (
                await front.decide(feedback.request_id, Provide(value={"user_response": "perfect", "done": True}))
            ).run
    finally:
        pool.stop_all()
    assert done.status == "completed"
    assert done.output is not None and done.output.startswith("Your day in Lisbon")
    assert await workflows_on(temporal_address, task_queue) == {f"sayso-concierge-{ask.run_id}": "COMPLETED"}
