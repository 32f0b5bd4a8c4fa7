"""Delegates on Temporal: the team example's two specialists pause below the coordinator's run, in its workflow.

Runs below a run are worked on inside their top-level run's workflow (in its segments), not as
child workflows of their own (docs/guides/temporal.md#what-runs-where).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

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
    """Two delegates ask (a question, an approval); a wrong answer is refused; the answers finish the report."""
    folder = tmp_path / "team"
    shutil.copytree(TEAM, folder, ignore=shutil.ignore_patterns("*.db*", "__pycache__"))
    config = temporal_config(
        folder, address=temporal_address, task_queue=task_queue, body=(TEAM / "sayso.yaml").read_text()
    )
    monkeypatch.syspath_prepend(str(folder))
    pool = Workers(config, {**workers_env, "PYTHONPATH": f"{folder}:{workers_env['PYTHONPATH']}"})
    pool.start()
    try:
        async with Sayso.from_yaml(config) as front:
            paused = await front.run("report")
            kinds = {r.agent_path: r for r in paused.requests}
            assert {p: r.kind for p, r in kinds.items()} == {
                "coordinator/analyst": "question",
                "coordinator/ops": "approval",
            }
            with pytest.raises(InvalidDecision):
                await front.decide(kinds["coordinator/ops"].request_id, Answer(answers=(("Q2",),)))
            await front.decide(kinds["coordinator/analyst"].request_id, Answer(answers=(("Q2",),)))
            done = (await front.decide(kinds["coordinator/ops"].request_id, Approve())).run
    finally:
        pool.stop_all()
    assert done.status == "completed" and done.output is not None
    assert "Revenue in Q2 grew 5%." in done.output and "Archived the logs of 2026-10." in done.output
    assert await workflows_on(temporal_address, task_queue) == {f"sayso-coordinator-{paused.run_id}": "COMPLETED"}
