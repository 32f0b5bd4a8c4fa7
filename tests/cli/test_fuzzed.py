"""What trying every command with wrong input and odd stores found: each a line or two and the table's exit code.

Before, these printed a traceback, a library's own message, or a success that was not one.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sayso.cli import app

from ..conftest import EXAMPLE, ROOT

runner = CliRunner()

REFUNDS = ROOT / "examples" / "refunds" / "sayso.yaml"


@pytest.fixture
def tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    """The refunds example's principals can sign in."""
    for name in ("alice", "bob", "carol", "dana"):
        monkeypatch.setenv(f"{name.upper()}_TOKEN", f"{name}-token")


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--port", "99999", "99999 is not a TCP port: use 1 to 65535 (0: any free one)"),
        ("--port", "-1", "-1 is not a TCP port: use 1 to 65535 (0: any free one)"),
        ("--grpc-port", "70000", "70000 is not a TCP port: use 1 to 65535 (0: any free one)"),
        ("--expire-every", "-5", "-5.0 is not a number of seconds: use 0 (off) or more"),
        ("--recover-every", "nan", "nan is not a number of seconds: use 0 (off) or more"),
    ],
)
def test_serve_refuses_a_port_or_interval_out_of_range(option: str, value: str, said: str) -> None:
    """A port past 65535 was a traceback (OverflowError); a negative or NaN sweep interval crashed the server's
    start with an exception group and left it serving without its sweeps. Both are refused before it starts
    (and before the port is looked at: a port in use is given, so nothing could start here anyway)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = [] if option == "--port" else ["--port", str(taken.getsockname()[1])]
        refused = runner.invoke(app, ["serve", str(EXAMPLE), *port, option, value])
    assert refused.exit_code == 2, refused.output
    assert f"Invalid value for '{option}': {said}" in refused.stderr
    assert "Traceback" not in refused.output and "sayso serves" not in refused.output


@pytest.mark.usefixtures("tokens")
def test_serve_on_an_address_of_no_interface_points_at_the_host_not_the_port() -> None:
    """An address no interface of this machine has (TEST-NET-1) is fixed with --host: it said to pick another port."""
    refused = runner.invoke(app, ["serve", str(REFUNDS), "--host", "192.0.2.1", "--port", "18123"])
    assert refused.exit_code == 5, refused.output
    assert "cannot listen on 192.0.2.1:18123: Cannot assign requested address; check the address --host names" in (
        refused.stderr
    )
    assert "--port" not in refused.stderr


def test_stats_with_a_window_that_is_no_duration_says_so_in_json_too() -> None:
    """`stats --window 1w --json` printed a text error on stderr (cut at 80 columns), not the JSON error object."""
    as_json = runner.invoke(app, ["stats", str(EXAMPLE), "--window", "1w", "--json"], env={"COLUMNS": "80"})
    assert as_json.exit_code == 2, as_json.output
    assert json.loads(as_json.stdout)["error"] == {
        "type": "BadParameter",
        "message": "--window: '1w' is not a duration: write seconds, or a number with s, m, h or d (15m, 1h)",
    }
    shown = runner.invoke(app, ["stats", str(EXAMPLE), "--window", "-5m"], env={"COLUMNS": "80"})
    assert shown.exit_code == 2
    assert (
        shown.stderr
        == "error: --window: '-5m' is not a duration: write seconds, or a number with s, m, h or d (15m, 1h)\n"
    )


@pytest.mark.usefixtures("tokens")
@pytest.mark.parametrize(
    "command",
    [
        ["run", str(REFUNDS), "refund 40 to acme"],
        ["inbox", str(REFUNDS)],
        ["decide", str(REFUNDS), "req_nope", "approve"],
        ["resume", str(REFUNDS), "run_nope"],
        ["grants", "revoke", str(REFUNDS), "grt_nope"],
    ],
    ids=lambda c: c[0] if c[0] != "grants" else "grants-revoke",
)
def test_a_principal_the_config_does_not_name_is_refused(command: list[str]) -> None:
    """`--principal bobb` (a typo for bob) on a config with principals: exit 2 naming the principals. It was taken
    for a stranger: an empty inbox, a run started for nobody who can sign in, a refusal that blamed the request."""
    refused = runner.invoke(app, [*command, "--principal", "bobb"])
    assert refused.exit_code == 2, refused.output
    said = "--principal 'bobb' is not a principal of the config; its principals: alice, bob, carol, dana"
    assert refused.stderr == f"error: {said}\n"
    as_json = runner.invoke(app, [*command, "--principal", "bobb", "--json"])
    assert json.loads(as_json.stdout)["error"] == {"type": "InvalidInput", "message": said}
    empty = runner.invoke(app, [*command, "--principal", " "])
    assert empty.exit_code == 2 and "--principal names nobody" in empty.stderr
    assert json.loads(runner.invoke(app, ["inbox", str(REFUNDS), "--json"]).stdout)["requests"] == []


@pytest.mark.usefixtures("tokens")
def test_policy_test_as_a_principal_the_config_does_not_name_is_refused() -> None:
    """`policy test --as` takes the config's principals alone, as `--principal` does."""
    refused = runner.invoke(app, ["policy", "test", str(REFUNDS), "--tool", "refund", "--as", "zed"])
    assert refused.exit_code == 2, refused.output
    assert "--as 'zed' is not a principal of the config; its principals: alice, bob, carol, dana" in refused.stderr


@pytest.mark.usefixtures("tokens")
def test_configured_principals_and_local_still_act() -> None:
    """The check lets the config's principals act, and `local` (the default) as before; without principals any name
    still does (local development)."""
    paused = runner.invoke(app, ["run", str(REFUNDS), "refund 40 to acme", "--principal", "dana", "--json"])
    assert paused.exit_code == 0, paused.output
    request_id = json.loads(paused.stdout)["requests"][0]["id"]
    voted = runner.invoke(app, ["decide", str(REFUNDS), request_id, "approve", "--principal", "bob"])
    assert voted.exit_code == 0 and "approvals: 1 of 2" in voted.stdout
    assert runner.invoke(app, ["inbox", str(REFUNDS)]).exit_code == 0
    assert runner.invoke(app, ["run", str(EXAMPLE), "list", "--principal", "zed"]).exit_code == 0


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", [["inbox", str(EXAMPLE), "--json"], ["check", str(EXAMPLE)], ["--help"]])
def test_output_to_a_full_disk_is_one_line_and_exit_1(command: list[str]) -> None:
    """Output that cannot be written (a full disk: /dev/full) says so in one line, exit 1. It was a traceback, or
    Python's `Exception ignored` and exit 120 when the output was still buffered at exit."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "sayso", *command], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    assert done.returncode == 1, done.stderr
    assert done.stderr == "error: cannot write the output: No space left on device\n"


def test_init_onto_a_file_says_it_is_not_a_folder(tmp_path: Path) -> None:
    """`sayso init` given a file: `Not a directory`, exit 2 (it said the starter was `already there`, `[Errno 17]`)."""
    (tmp_path / "afile").write_text("x")
    refused = runner.invoke(app, ["init", str(tmp_path / "afile")])
    assert refused.exit_code == 2, refused.output
    assert refused.stderr == f"error: cannot write the starter in {tmp_path / 'afile'}: Not a directory\n"
    assert (tmp_path / "afile").read_text() == "x"


def test_init_with_an_empty_folder_name_says_where_it_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sayso init ""` writes here, as `sayso init` does, and says `in .` (it said `in ;`)."""
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, ["init", ""])
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("wrote sayso.yaml, desk_tools.py and script.yaml in .; try:")
    assert (tmp_path / "sayso.yaml").is_file()


def test_a_sqlite_store_that_is_a_folder_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store URL naming a folder: SQLite's `unable to open database file` said nothing of why."""
    (tmp_path / "store.db").mkdir()
    monkeypatch.setenv("SAYSO_STORE", f"sqlite:///{tmp_path / 'store.db'}")
    for command in (["inbox", str(EXAMPLE)], ["run", str(EXAMPLE), "list"], ["audit", "verify", str(EXAMPLE)]):
        refused = runner.invoke(app, command)
        assert refused.exit_code == 5, refused.output  # the store is out of reach, as `sayso serve` says it
        assert refused.stderr == (
            f"error: could not open the store at 'sqlite:///{tmp_path / 'store.db'}': "
            f"'{tmp_path / 'store.db'}' is a folder; point the store at a file\n"
        )


def test_a_postgres_store_that_refuses_says_connection_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PostgreSQL nothing listens for: `Connection refused`, not `[Errno 111] Connect call failed (…)`."""
    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        dead = closed.getsockname()[1]
    monkeypatch.setenv("SAYSO_STORE", f"postgresql://nobody@127.0.0.1:{dead}/x")
    refused = runner.invoke(app, ["inbox", str(EXAMPLE), "--json"])
    assert refused.exit_code == 5, refused.output
    assert json.loads(refused.stdout)["error"] == {
        "type": "StoreError",
        "message": f"could not open the store at 'postgresql://nobody@127.0.0.1:{dead}/x': "
        "database error: Connection refused",
    }


@pytest.mark.parametrize(
    "command", [["inbox"], ["stats"], ["audit", "verify"], ["grants", "list"], ["run", "list"]], ids=" ".join
)
def test_a_sqlite_store_in_a_missing_folder_is_a_config_error_for_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """The commands that only read the store exited 1 (a store failure) where `run` exited 2 (the config)."""
    folder = tmp_path / "nowhere"
    monkeypatch.setenv("SAYSO_STORE", f"sqlite:///{folder / 'x.db'}")
    words = [*command[:-1], str(EXAMPLE), command[-1]] if command[0] == "run" else [*command, str(EXAMPLE)]
    refused = runner.invoke(app, words)
    assert refused.exit_code == 2, refused.output
    assert f"the folder '{folder}' of the SQLite store" in refused.stderr and f"mkdir -p {folder}" in refused.stderr
    assert not folder.exists()


def test_a_missing_message_is_named_as_the_usage_line_names_it() -> None:
    """`sayso run CONFIG` said `Missing argument 'message'` under a usage line that calls it MESSAGE."""
    missing = runner.invoke(app, ["run", str(EXAMPLE)])
    assert missing.exit_code == 2
    assert "Missing argument 'MESSAGE'." in missing.stderr and "sayso run [OPTIONS] CONFIG MESSAGE" in missing.stderr


def test_a_config_with_a_character_yaml_refuses_names_its_line(tmp_path: Path) -> None:
    """A NUL in the config: its line and the character, not PyYAML's `in "<unicode string>", position 24`."""
    config = tmp_path / "sayso.yaml"
    config.write_text("store: x\n\nagents: \x00\n")
    refused = runner.invoke(app, ["check", str(config)])
    assert refused.exit_code == 2, refused.output
    said = f"{config}:3: error: not valid YAML: the character #x0000 may not appear in it"
    assert said in refused.stderr and "unicode string" not in refused.stderr
