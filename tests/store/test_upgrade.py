"""A store an older sayso left paused carries on under this one: the first command migrates it, nothing to run.

`upgrade_0018/rows.sql` holds the rows sayso 96d4383 (1-3 Dec 2026, schema revision 0018) wrote for its config
beside it: a refund two of finance approve with one vote in (bob's, editing the amount to 8), a question and a
workflow's input. The store is built as that sayso left it (the migrations up to 0018, then those rows).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from sayso.cli import app

FIXTURE = Path(__file__).parent / "upgrade_0018"
MIGRATIONS = Path(__file__).resolve().parents[2] / "src" / "sayso" / "_store" / "migrations"

runner = CliRunner()


@pytest.fixture
def old_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project and its SQLite store as sayso 96d4383 left them; the config's path."""
    from alembic import command
    from alembic.config import Config

    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project)
    engine = sa.create_engine(f"sqlite:///{project / 'sayso.db'}")
    with engine.begin() as conn:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = conn
        command.upgrade(config, "0018_grant_agent_path")
    engine.dispose()
    with sqlite3.connect(project / "sayso.db") as db:
        db.executescript((project / "rows.sql").read_text())
    monkeypatch.delenv("SAYSO_STORE", raising=False)
    monkeypatch.delenv("SAYSO_AUDIT_KEY", raising=False)
    monkeypatch.setenv("ALICE_TOKEN", "a")
    monkeypatch.setenv("BOB_TOKEN", "b")
    monkeypatch.syspath_prepend(str(project))
    return project / "sayso.yaml"


def cli(*args: str) -> dict[str, Any]:
    """A command's JSON answer; it must succeed."""
    done = runner.invoke(app, [*args, "--json"])
    assert done.exit_code == 0, done.output
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_every_old_pause_is_listed_and_carried_on_to_its_result_once(old_store: Path) -> None:
    """Listed with its vote, the quorum finished by the second approver and run once with the edited arguments,
    the question and the input answered, and the audit chain verified across both versions."""
    config = str(old_store)
    inbox = cli("inbox", config, "--principal", "alice")["requests"]
    assert isinstance(inbox, list)
    by_kind = {r["kind"] + (r.get("node") or ""): r for r in inbox}
    assert sorted(by_kind) == ["approval", "inputask", "question"]
    refund = by_kind["approval"]
    assert refund["quorum"]["text"] == "1 of 2 (edited arguments), waiting for finance"
    decided = cli("decide", config, refund["id"], "approve", "--principal", "alice")
    assert decided["output"] == "Done: Refunded 8.0 on A-1."
    answered = cli("decide", config, by_kind["question"]["id"], "answer", "Q3", "--principal", "alice")
    assert answered["output"] == 'Answered: [{"question": "Which quarter?", "answer": ["Q3"]}]'
    trip = {"city": "Lisbon", "days": 3}
    provided = cli("decide", config, by_kind["inputask"]["id"], "answer", json.dumps(trip), "--principal", "alice")
    [confirm] = provided["requests"]
    assert confirm["message"] == "Book it?" and confirm["payload"] == "Lisbon for 3 days"
    booked = cli("decide", config, confirm["id"], "answer", "true", "--principal", "alice")
    assert booked["output"] == "booked Lisbon for 3 days"
    assert cli("inbox", config, "--principal", "alice")["requests"] == []
    records = cli("audit", "list", config)["records"]
    assert isinstance(records, list)
    executed = [r["body"] for r in records if r["body"]["event"] == "executed"]
    assert [(e["tool_name"], e["executed_args"]) for e in executed] == [("refund", {"order_id": "A-1", "amount": 8})]
    verified = runner.invoke(app, ["audit", "verify", config])
    assert verified.exit_code == 0 and "audit log intact" in verified.output
