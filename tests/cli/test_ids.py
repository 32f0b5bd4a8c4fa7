"""Ids on the command line are checked as REST checks them: one that no id looks like is refused before any store.

`--thread`, `REQUEST_ID`, `RUN_ID` and `GRANT_ID` took any text: an id holding a NUL or a space reached the
store (on PostgreSQL a NUL is a database error), and `run --thread 'my notes'` started a thread REST could
never name.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sayso.cli import app

from ..conftest import EXAMPLE

runner = CliRunner()

SHAPE = "an id is 1 to 64 letters, digits, '_', '.', ':' or '-'"


@dataclass(frozen=True)
class Case:
    id: str
    words: tuple[str, ...]
    """The command, with `{id}` where the id goes."""
    name: str
    what: str
    example: str
    as_json: bool = True


CASES = [
    Case("run --thread", ("run", "{config}", "list", "--thread", "{id}"), "--thread", "a thread id", "thr_"),
    Case("chat --thread", ("chat", "{config}", "--thread", "{id}"), "--thread", "a thread id", "thr_", as_json=False),
    Case("decide", ("decide", "{config}", "{id}", "approve"), "REQUEST_ID", "a request id", "req_"),
    Case("resume", ("resume", "{config}", "{id}"), "RUN_ID", "a run id", "run_"),
    Case("grants revoke", ("grants", "revoke", "{config}", "{id}"), "GRANT_ID", "a grant id", "grt_"),
]

ODD = ["r\x00x", "my notes", "x" * 65, "req_1\n", "", "café"]


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        return int(closed.getsockname()[1])


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_an_id_no_id_looks_like_is_refused_before_the_store_opens(
    case: Case, store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each odd id is one line naming the argument or option and what an id looks like, exit 2 (also with
    `--json`), and no store was opened: the SQLite file is not made, a PostgreSQL nothing listens on is not
    tried (that would be exit 1, `Connection refused`)."""
    db = tmp_path / "store.db"
    url = f"sqlite:///{db}" if store == "sqlite" else f"postgresql://nobody@127.0.0.1:{closed_port()}/x"
    monkeypatch.setenv("SAYSO_STORE", url)
    for odd in ODD:
        words = [w.replace("{config}", str(EXAMPLE)).replace("{id}", odd) for w in case.words]
        shown = odd if len(odd) <= 70 else f"{odd[:67]}…"
        said = f"{case.name} {shown!r} is not {case.what}: {SHAPE}, as in {case.example}…"
        refused = runner.invoke(app, words)
        assert refused.exit_code == 2, (odd, refused.output)
        assert refused.stderr == f"error: {said}\n"
        if case.as_json:
            as_json = runner.invoke(app, [*words, "--json"])
            assert as_json.exit_code == 2
            assert json.loads(as_json.stdout) == {"error": {"type": "BadParameter", "message": said}}
    assert not db.exists()


def test_a_new_thread_id_rest_would_take_is_taken() -> None:
    """An id of a new thread chosen by the person is kept as given when it fits, and `my notes` is refused."""
    started = runner.invoke(app, ["run", str(EXAMPLE), "list", "--thread", "my-notes.1:a_b", "--json"])
    assert started.exit_code == 0, started.output
    assert json.loads(started.stdout)["thread_id"] == "my-notes.1:a_b"
    refused = runner.invoke(app, ["run", str(EXAMPLE), "list", "--thread", "my notes", "--json"])
    assert refused.exit_code == 2
    assert json.loads(refused.stdout)["error"]["message"].startswith("--thread 'my notes' is not a thread id")
