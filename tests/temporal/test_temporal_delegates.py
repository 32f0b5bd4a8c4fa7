"""Delegates on Temporal: the team example's two specialists run as child workflows of the coordinator's.

Each delegate's run is a child workflow `sayso-<agent>-<run id>` under its parent's; its pause is in
the parent's request list as without Temporal, and its decisions go through the top-level
workflow's `decide` Update (docs/guides/temporal.md#what-runs-where).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from sayso import Answer, Approve, InvalidDecision, Sayso

from .conftest import Workers, temporal_config, workflows_on

TEAM = Path(__file__).resolve().parents[2] / "examples" / "team"


async def test_the_team_examples_delegates_pause_and_finish_the_report_on_temporal(
    tmp_path: Path,
    temporal_address: str,
    task_queue: str,
    workers_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two delegates ask (a question, an approval) from child workflows; a wrong answer is refused; the worker
    is killed with the children paused; the answers finish the report on another worker."""
    folder = tmp_path / "team"
    shutil.copytree(TEAM, folder, ignore=shutil.ignore_patterns("*.db*", "__pycache__"))
    config = temporal_config(
        folder, address=temporal_address, task_queue=task_queue, body=(TEAM / "sayso.yaml").read_text()
    )
    monkeypatch.syspath_prepend(str(folder))
    pool = Workers(config, {**workers_env, "PYTHONPATH": f"{folder}:{workers_env['PYTHONPATH']}"})
    first = pool.start()
    client = await Client.connect(temporal_address)
    try:
        async with Sayso.from_yaml(config) as front:
            paused = await front.run("report")
            kinds = {r.agent_path: r for r in paused.requests}
            assert {p: r.kind for p, r in kinds.items()} == {
                "coordinator/analyst": "question",
                "coordinator/ops": "approval",
            }
            children = {r.agent_path: f"sayso-{r.agent_path.split('/')[1]}-{r.run_id}" for r in paused.requests}
            for child in children.values():
                described = await client.get_workflow_handle(child).describe()
                assert described.status == WorkflowExecutionStatus.RUNNING
                assert described.parent_id == f"sayso-coordinator-{paused.run_id}"
            pool.kill(first)  # the children's workflows (and their parent's) move to the next worker
            pool.start()
            with pytest.raises(InvalidDecision):
                await front.decide(kinds["coordinator/ops"].request_id, Answer(answers=(("Q2",),)))
            await front.decide(kinds["coordinator/analyst"].request_id, Answer(answers=(("Q2",),)))
            done = (await front.decide(kinds["coordinator/ops"].request_id, Approve())).run
            for workflow_id in (f"sayso-coordinator-{paused.run_id}", *children.values()):
                with anyio.fail_after(30):  # each workflow ends once its run has
                    assert await client.get_workflow_handle(workflow_id).result() == "completed"
    finally:
        pool.stop_all()
    assert done.status == "completed" and done.output is not None
    assert "Revenue in Q2 grew 5%." in done.output and "Archived the logs of 2026-10." in done.output
    assert await workflows_on(temporal_address, task_queue) == {
        f"sayso-coordinator-{paused.run_id}": "COMPLETED",
        **{child: "COMPLETED" for child in children.values()},
    }
