"""The anchored audit log (docs/guides/operations.md#the-audit-log): every way of tampering with it is detected by
`sayso audit verify` and REST.

The file-manager example runs with an audit key (`SAYSO_AUDIT_KEY`) and a head file. Each case
tampers with the SQLite store in one way an attacker with the database (but not the key) could:
edit a record, edit it and recompute every later hash, append a forged record with a valid hash,
cut the last record, the last ten or all of them, cut them and roll the checkpointed head back,
strip every signature. The CLI exits 1 and REST says `intact: false`, both naming the first bad
record. Without a key, `verify` says plainly that the chain is unanchored.
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from sayso import Reject, Sayso, load_config
from sayso._core.audit import chain_hash
from sayso._core.audit_events import AUDIT_EVENT_ADAPTER
from sayso.cli import app
from sayso.server import create_app

from .conftest import EXAMPLE, InProcess

runner = CliRunner()

KEY = "k" * 8 + "an-audit-key-for-tests"
CYCLES = 12
"""Runs whose request is rejected: one `decision` record each (twelve, so ten can be cut)."""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example copied next to the test's store, exporting its audit head, with the audit key set."""
    for name in ("sayso.yaml", "script.yaml", "files_tools.py", "files_subjects.py"):
        shutil.copy(EXAMPLE.parent / name, tmp_path / name)
    path = tmp_path / "sayso.yaml"
    path.write_text(path.read_text() + "audit: {head_file: audit-head.json}\n")
    (tmp_path / "sandbox").mkdir()
    (tmp_path / "sandbox" / "notes.txt").write_text("Buy milk.\n")
    monkeypatch.setenv("SAYSO_AUDIT_KEY", KEY)
    return path


async def _fill(config: Path, saved: dict[str, Any]) -> None:
    """Reject `CYCLES` delete requests, keeping a copy of the head row as it was two records before the cut."""
    async with Sayso.from_yaml(config) as sayso:
        for n in range(CYCLES):
            paused = await sayso.run("delete notes")
            await sayso.decide(paused.requests[0].request_id, Reject(reason=f"not now ({n})"))
            if n == CYCLES - 11:
                with sqlite3.connect(config.parent / "sayso.db") as db:
                    saved["head"] = db.execute("SELECT seq, hash, mac FROM audit_head").fetchone()


Tamper = Callable[[sqlite3.Connection, dict[str, Any]], None]


def edit(db: sqlite3.Connection, saved: dict[str, Any]) -> None:
    db.execute("UPDATE audit SET body = replace(body, 'not now', 'go ahead') WHERE seq = 5")


def edit_and_rehash(db: sqlite3.Connection, saved: dict[str, Any]) -> None:
    """Edit record 5 and recompute every hash from there on, head included: only the key tells."""
    rows = db.execute("SELECT seq, body FROM audit WHERE seq >= 5 ORDER BY seq").fetchall()
    prev = db.execute("SELECT hash FROM audit WHERE seq = 4").fetchone()[0]
    for seq, body in rows:
        parsed = json.loads(body)
        if seq == 5:
            parsed["reason"] = "go ahead"
        digest = chain_hash(prev, seq, parsed)
        db.execute(
            "UPDATE audit SET body = ?, prev_hash = ?, hash = ? WHERE seq = ?",
            (json.dumps(parsed, sort_keys=True, separators=(",", ":")), prev, digest, seq),
        )
        prev = digest
    db.execute("UPDATE audit_head SET hash = ?", (prev,))


def forged_append(db: sqlite3.Connection, saved: dict[str, Any]) -> None:
    """A record with a valid hash and a signature copied from another record, the head moved onto it."""
    seq, last_hash = db.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    body = {"event": "decision", "decision": "approve", "principal": "local", "tool_name": "delete_file"}
    digest = chain_hash(last_hash, seq + 1, body)
    borrowed = db.execute("SELECT mac FROM audit WHERE seq = 1").fetchone()[0]
    db.execute(
        "INSERT INTO audit (seq, body, prev_hash, hash, mac) VALUES (?, ?, ?, ?, ?)",
        (seq + 1, json.dumps(body, sort_keys=True, separators=(",", ":")), last_hash, digest, borrowed),
    )
    db.execute("UPDATE audit_head SET seq = ?, hash = ?", (seq + 1, digest))


def cut(last: int) -> Tamper:
    def tamper(db: sqlite3.Connection, saved: dict[str, Any]) -> None:
        db.execute("DELETE FROM audit WHERE seq > ?", (CYCLES - last,))

    return tamper


def cut_and_rewind_head(db: sqlite3.Connection, saved: dict[str, Any]) -> None:
    """Cut ten records and roll the checkpointed head back to what it was then (a copy saved at the time)."""
    cut(10)(db, saved)
    db.execute("UPDATE audit_head SET seq = ?, hash = ?, mac = ?", saved["head"])


def cut_rewind_head_and_delete_its_file(db: sqlite3.Connection, saved: dict[str, Any]) -> None:
    """Cut ten records, roll the checkpointed head back and delete the head file that would show the cut."""
    cut_and_rewind_head(db, saved)
    Path(saved["dir"], "audit-head.json").unlink()


def cut_and_forge_head(db: sqlite3.Connection, saved: dict[str, Any]) -> None:
    """Cut the last record and point the head at the one before, reusing that record's own signature."""
    db.execute("DELETE FROM audit WHERE seq = ?", (CYCLES,))
    seq, digest, mac = db.execute("SELECT seq, hash, mac FROM audit WHERE seq = ?", (CYCLES - 1,)).fetchone()
    db.execute("UPDATE audit_head SET seq = ?, hash = ?, mac = ?", (seq, digest, mac))
    Path(saved["dir"], "audit-head.json").unlink()


def strip_signatures(db: sqlite3.Connection, saved: dict[str, Any]) -> None:
    db.execute("UPDATE audit SET mac = NULL")
    db.execute("UPDATE audit_head SET mac = NULL")


@dataclass(frozen=True, kw_only=True)
class Case:
    """One way of tampering, and the first record `verify` must name."""

    id: str
    tamper: Tamper
    first_bad: int


CASES = [
    Case(id="edit", tamper=edit, first_bad=5),
    Case(id="edit-and-rehash", tamper=edit_and_rehash, first_bad=5),
    Case(id="forged-append", tamper=forged_append, first_bad=CYCLES + 1),
    Case(id="cut-last-1", tamper=cut(1), first_bad=CYCLES),
    Case(id="cut-last-10", tamper=cut(10), first_bad=CYCLES - 9),
    Case(id="cut-all", tamper=cut(CYCLES), first_bad=1),
    Case(id="cut-and-rewind-head", tamper=cut_and_rewind_head, first_bad=CYCLES - 9),
    Case(id="cut-rewind-head-and-delete-its-file", tamper=cut_rewind_head_and_delete_its_file, first_bad=CYCLES - 9),
    Case(id="cut-and-forge-head", tamper=cut_and_forge_head, first_bad=CYCLES - 1),
    Case(id="strip-signatures", tamper=strip_signatures, first_bad=1),
]


async def _rest_verify(config: Path) -> dict[str, Any]:
    sayso = Sayso(load_config(config))
    server = await InProcess(app=create_app(sayso, expire_every_seconds=None), sayso=sayso).start()
    try:
        async with server.client() as client:
            response = await client.get("/v1/audit/verify")
            assert response.status_code == 200
            body: dict[str, Any] = response.json()
            return body
    finally:
        await server.stop()


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_every_kind_of_tampering_is_detected_by_the_cli_and_rest(config: Path, case: Case) -> None:
    """Each tampering makes `sayso audit verify` exit 1 and REST say not intact, naming the first bad record."""
    saved: dict[str, Any] = {"dir": str(config.parent)}
    anyio.run(_fill, config, saved)
    intact = runner.invoke(app, ["audit", "verify", str(config)])
    assert intact.exit_code == 0, intact.output
    assert f"audit log intact: {CYCLES} record(s)" in intact.stdout and "anchored by audit key" in intact.stdout
    with sqlite3.connect(config.parent / "sayso.db") as db:
        case.tamper(db, saved)
    tampered = runner.invoke(app, ["audit", "verify", str(config), "--json"])
    assert tampered.exit_code == 1
    cli = json.loads(tampered.stdout)
    assert (cli["ok"], cli["anchored"], cli["problem"]["seq"]) == (False, True, case.first_bad), cli
    rest = anyio.run(_rest_verify, config)
    assert (rest["intact"], rest["anchored"], rest["problem"]) == (False, True, cli["problem"])


def test_without_a_key_verify_says_the_chain_is_unanchored(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no audit key the chain still verifies its links, and the CLI and REST say plainly it is unanchored."""
    monkeypatch.delenv("SAYSO_AUDIT_KEY")
    anyio.run(_fill, config, {})
    done = runner.invoke(app, ["audit", "verify", str(config)])
    assert done.exit_code == 0
    assert "audit log intact" in done.stdout and "UNANCHORED" in done.stderr
    rest = anyio.run(_rest_verify, config)
    assert (rest["intact"], rest["anchored"]) == (True, False) and rest["note"].startswith("UNANCHORED")


def test_a_signed_chain_refuses_unsigned_appends_and_a_key_adopts_an_old_chain(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chain kept without a key takes no signed records until `sayso audit anchor` vouches for it once; after that
    a process without the key may not append (its decision is refused) and verify without the key fails closed."""
    monkeypatch.delenv("SAYSO_AUDIT_KEY")
    paused = json.loads(runner.invoke(app, ["run", str(config), "delete notes", "--json"]).stdout)
    runner.invoke(app, ["decide", str(config), paused["requests"][0]["id"], "reject"])
    monkeypatch.setenv("SAYSO_AUDIT_KEY", KEY)
    unvouched = json.loads(runner.invoke(app, ["run", str(config), "delete notes", "--json"]).stdout)
    blocked = runner.invoke(app, ["decide", str(config), unvouched["requests"][0]["id"], "reject"])
    assert blocked.exit_code != 0 and "sayso audit anchor" in blocked.output
    anchored = runner.invoke(app, ["audit", "anchor", str(config)])
    assert anchored.exit_code == 0 and "vouched for 1 unsigned record(s)" in anchored.stdout
    adopted = runner.invoke(app, ["audit", "verify", str(config), "--json"])
    assert json.loads(adopted.stdout)["ok"] is True
    with sqlite3.connect(config.parent / "sayso.db") as db:
        bodies = [json.loads(b) for (b,) in db.execute("SELECT body FROM audit ORDER BY seq")]
    assert [b["event"] for b in bodies] == ["decision", "audit_anchored"]
    assert [AUDIT_EVENT_ADAPTER.validate_python(b) for b in bodies] == bodies
    again = json.loads(runner.invoke(app, ["run", str(config), "delete notes", "--json"]).stdout)
    monkeypatch.delenv("SAYSO_AUDIT_KEY")
    refused = runner.invoke(app, ["decide", str(config), again["requests"][0]["id"], "reject"])
    assert refused.exit_code != 0 and "SAYSO_AUDIT_KEY" in refused.output
    unverifiable = runner.invoke(app, ["audit", "verify", str(config)])
    assert unverifiable.exit_code == 1 and "no audit key is configured" in unverifiable.stderr
    monkeypatch.setenv("SAYSO_AUDIT_KEY", KEY)
    assert runner.invoke(app, ["audit", "verify", str(config)]).exit_code == 0


@pytest.mark.parametrize("head_file", [True, False], ids=["with-head-file", "without"])
def test_verify_says_a_log_written_before_the_key_needs_anchoring(
    config: Path, monkeypatch: pytest.MonkeyPatch, head_file: bool
) -> None:
    """Setting the key on a log kept without one is no tampering: verify says the log predates the key and to run
    `sayso audit anchor` (exit 1, as nothing vouches for the log yet), never that the key checked it."""
    if not head_file:
        config.write_text(config.read_text().replace("audit: {head_file: audit-head.json}\n", ""))
    monkeypatch.delenv("SAYSO_AUDIT_KEY")
    paused = json.loads(runner.invoke(app, ["run", str(config), "delete notes", "--json"]).stdout)
    runner.invoke(app, ["decide", str(config), paused["requests"][0]["id"], "reject"])
    monkeypatch.setenv("SAYSO_AUDIT_KEY", KEY)
    done = runner.invoke(app, ["audit", "verify", str(config)])
    assert done.exit_code == 1
    assert "tampered" not in done.output and "anchored by audit key" not in done.output, done.output
    assert "written before the audit key was set" in done.stderr and "sayso audit anchor" in done.stderr
    said = json.loads(runner.invoke(app, ["audit", "verify", str(config), "--json"]).stdout)
    assert (said["ok"], said["anchored"], said["predates_key"]) == (False, False, True)
    assert "sayso audit anchor" in said["problem"]["problem"]
    rest = anyio.run(_rest_verify, config)
    assert (rest["intact"], rest["anchored"], rest["predates_key"]) == (False, False, True)
    assert rest["note"].startswith("NOT YET ANCHORED")
    assert runner.invoke(app, ["audit", "anchor", str(config)]).exit_code == 0
    verified = runner.invoke(app, ["audit", "verify", str(config)])
    assert verified.exit_code == 0 and "anchored by audit key" in verified.stdout


def test_inbox_says_when_the_audit_log_cannot_be_appended_to(
    config: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`sayso inbox` opens only the store's inbox, yet says, as every command does, when the audit log cannot be
    appended to as configured: the chain is signed but the key is not set. With the key it lists quietly."""
    anyio.run(_fill, config, {})
    monkeypatch.delenv("SAYSO_AUDIT_KEY")
    with caplog.at_level(logging.WARNING, logger="sayso.audit"):
        keyless = runner.invoke(app, ["inbox", str(config)])
    assert keyless.exit_code == 0, keyless.output
    assert "anchored by a key but SAYSO_AUDIT_KEY is not set" in caplog.text
    caplog.clear()
    monkeypatch.setenv("SAYSO_AUDIT_KEY", KEY)
    with caplog.at_level(logging.WARNING, logger="sayso.audit"):
        keyed = runner.invoke(app, ["inbox", str(config)])
    assert keyed.exit_code == 0 and caplog.text == ""


def _one_decision(config: Path) -> None:
    """One rejected delete: one signed record, its head exported to the head file."""
    paused = json.loads(runner.invoke(app, ["run", str(config), "delete notes", "--json"]).stdout)
    assert runner.invoke(app, ["decide", str(config), paused["requests"][0]["id"], "reject"]).exit_code == 0


@pytest.mark.parametrize("written", [b"garbage", b"\xff\xfe", b"{}", b'{"seq": "1", "hash": 5}'])
def test_a_head_file_edited_into_anything_is_tampering(config: Path, written: bytes) -> None:
    """A head file edited into text that is no head: verify names it as tampering (exit 1, REST not intact). It was
    a config error (exit 2, a 422) carrying the JSON parser's or the codec's own words."""
    _one_decision(config)
    (config.parent / "audit-head.json").write_bytes(written)
    said = f"the head file {config.parent / 'audit-head.json'} holds no audit head: it was edited or corrupted"
    shown = runner.invoke(app, ["audit", "verify", str(config)])
    assert shown.exit_code == 1, shown.output
    assert f"audit log tampered at record 1: {said}" in shown.stderr
    as_json = json.loads(runner.invoke(app, ["audit", "verify", str(config), "--json"]).stdout)
    assert (as_json["ok"], as_json["problem"]) == (False, {"seq": 1, "problem": said})
    rest = anyio.run(_rest_verify, config)
    assert (rest["intact"], rest["problem"]) == (False, {"seq": 1, "problem": said})


def test_a_head_file_gone_after_a_head_was_exported_to_it_fails_verify(config: Path) -> None:
    """The chain's head is signed as exported: with the file gone, verify fails (exit 1, REST not intact) instead of
    passing with a note, since whoever cut the tail would delete it too. The next record writes it again."""
    _one_decision(config)
    (config.parent / "audit-head.json").unlink()
    shown = runner.invoke(app, ["audit", "verify", str(config)])
    assert shown.exit_code == 1, shown.output
    said = (
        f"the head file {config.parent / 'audit-head.json'} is missing, yet the chain's head (record 1) was exported "
        "to it: it was deleted, and records after 1 may have been cut, or it could not be written (the log says why)"
    )
    assert f"audit log tampered at record 2: {said}" in shown.stderr
    rest = anyio.run(_rest_verify, config)
    assert (rest["intact"], rest["problem"]) == (False, {"seq": 2, "problem": said})
    _one_decision(config)
    again = runner.invoke(app, ["audit", "verify", str(config)])
    assert again.exit_code == 0, again.output
    assert f"and the head exported to {config.parent / 'audit-head.json'}" in again.stdout


def test_a_head_file_configured_since_the_last_record_is_said_missing_not_failed(config: Path) -> None:
    """A keyed chain whose head was never exported (no head file was configured then): verify passes and says the
    file is missing and nothing was exported to it yet; the next record writes it, and from then on it is checked."""
    with_file = config.read_text()
    config.write_text(with_file.replace("audit: {head_file: audit-head.json}\n", ""))
    _one_decision(config)
    config.write_text(with_file)
    shown = runner.invoke(app, ["audit", "verify", str(config)])
    assert shown.exit_code == 0, shown.output
    assert f"the head file {config.parent / 'audit-head.json'} is missing and no head was exported" in shown.stdout
    assert "and the head exported to" not in shown.stdout
    _one_decision(config)
    again = runner.invoke(app, ["audit", "verify", str(config)])
    assert f"and the head exported to {config.parent / 'audit-head.json'}" in again.stdout
    (config.parent / "audit-head.json").unlink()
    assert runner.invoke(app, ["audit", "verify", str(config)]).exit_code == 1


def test_a_head_file_that_cannot_be_read_is_named_in_words(config: Path) -> None:
    """A folder where the head file should be: exit 2, the path and why in words, no `[Errno 21]`."""
    _one_decision(config)
    (config.parent / "audit-head.json").unlink()
    (config.parent / "audit-head.json").mkdir()
    shown = runner.invoke(app, ["audit", "verify", str(config)])
    assert shown.exit_code == 2, shown.output
    assert (
        shown.stderr
        == f"error: the audit head file '{config.parent / 'audit-head.json'}' cannot be read: Is a directory\n"
    )


@pytest.mark.parametrize("head_file", [True, False], ids=["with-head-file", "partly-stripped"])
def test_anchor_refuses_a_signed_log_whose_signatures_were_stripped(config: Path, head_file: bool) -> None:
    """A rewrite of a signed log with its signatures stripped looks like a log written before the key; `anchor`, told
    to vouch for such a log, refuses when anything shows it was signed (the exported head, a signature left), and
    verify still names the rewrite."""
    saved: dict[str, Any] = {"dir": str(config.parent)}
    anyio.run(_fill, config, saved)
    with sqlite3.connect(config.parent / "sayso.db") as db:
        edit_and_rehash(db, saved)
        strip_signatures(db, saved)
        if not head_file:
            db.execute("UPDATE audit SET mac = 'x' WHERE seq = 1")  # one signature left behind
    if not head_file:
        Path(config.parent, "audit-head.json").unlink()
        config.write_text(config.read_text().replace("audit: {head_file: audit-head.json}\n", ""))
    refused = runner.invoke(app, ["audit", "anchor", str(config)])
    assert refused.exit_code != 0 and "does not verify" in refused.output, refused.output
    verified = runner.invoke(app, ["audit", "verify", str(config)])
    assert verified.exit_code == 1
