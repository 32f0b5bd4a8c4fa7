"""A server's form from the terminal.

`sayso run` exits while the form is open and a later `sayso decide` completes it; `sayso chat`
answers it on the live call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import yaml

from sayso._engine.mcp.toolset import CALL_ENDED

from .conftest import ElicitServer

SCRIPT = {
    "name": "booking-demo",
    "rules": [
        {"user": r"^book (?P<d>\w+)$", "call": "book_table", "args": {"day": "{d}"}},
        {"tool": "book_table", "reply": "{result}"},
    ],
    "fallback": "I only know: book DAY.",
}


def write_config(folder: Path, server: ElicitServer, *, replay: bool) -> Path:
    """A `sayso.yaml` whose agent books tables on the test server (pushed forms: a handshake-era session)."""
    (folder / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
    config = {
        "store": f"sqlite:///{folder / 'sayso.db'}",
        "models": {"demo": {"scripted": "script.yaml"}},
        "mcp_servers": {"booking": {"url": server.mcp_url, "session": "legacy"}},
        "agents": {
            "host": {
                "model": "demo",
                "mcp": [{"server": "booking", "tools": ["book_table"], "replay_elicitation": replay}],
            }
        },
    }
    path = folder / "sayso.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def sayso(*args: str) -> dict[str, Any]:
    """Run the `sayso` command in a process of its own and read its JSON."""
    done = subprocess.run(
        [sys.executable, "-m", "sayso", *args, "--json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_a_run_that_exits_with_a_form_open_is_completed_by_a_later_decide(
    tmp_path: Path, elicit_server: ElicitServer
) -> None:
    """`sayso run` pauses on the server's form and exits; `sayso decide ... accept JSON` replays the call."""
    config = write_config(tmp_path, elicit_server, replay=True)
    paused = sayso("run", str(config), "book fri")
    assert paused["status"] == "paused"
    [request] = paused["requests"]
    assert request["kind"] == "elicitation"
    assert (request["mode"], request["server"], request["tool_name"]) == ("form", "booking", "book_table")
    assert request["message"] == "Booking for fri: how many people, and under which name?"
    assert request["requested_schema"]["required"] == ["people", "name"]
    assert request["durable"] is False  # the live call went with the process
    done = sayso("decide", str(config), request["id"], "accept", '{"people": 2, "name": "Ada"}')
    assert done["status"] == "completed"
    assert done["output"] == "Booked fri for 2 (Ada)"
    assert elicit_server.bookings() == ["fri:2:Ada"]


def test_without_replay_a_later_decide_reports_that_the_call_did_not_complete(
    tmp_path: Path, elicit_server: ElicitServer
) -> None:
    """A tool that may not run twice is not called again from another process: the model reads so."""
    config = write_config(tmp_path, elicit_server, replay=False)
    paused = sayso("run", str(config), "book sat")
    done = sayso("decide", str(config), paused["requests"][0]["id"], "accept", '{"people": 2, "name": "Ada"}')
    assert done["output"] == CALL_ENDED
    assert elicit_server.bookings() == []


def test_chat_fills_in_the_servers_form_field_by_field_on_the_live_call(
    tmp_path: Path, elicit_server: ElicitServer
) -> None:
    """`sayso chat` holds the call while it asks each field; a wrong value is refused and asked again."""
    config = write_config(tmp_path, elicit_server, replay=False)
    env = {**os.environ, "COLUMNS": "120", "TERM": "dumb", "NO_COLOR": "1"}
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "sayso", "chat", str(config)],
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 120),
    )
    chat.expect("you>")
    chat.sendline("book sun")
    chat.expect("booking asks")
    chat.expect("Booking for sun: how many people, and under which name?")
    chat.expect(r"\[f\]ill in the form")
    chat.sendline("f")
    chat.expect(r"People \(integer, required\)>")
    chat.sendline("several")
    chat.expect(r"Name \(string, required\)>")
    chat.sendline("Ada")
    chat.expect("not accepted")
    chat.expect("people: 'several' is not of type 'integer'")
    chat.expect(r"\[f\]ill in the form")
    chat.sendline("f")
    chat.expect(r"People \(integer, required\)>")
    chat.sendline("3")
    chat.expect(r"Name \(string, required\)>")
    chat.sendline("Ada")
    chat.expect(r"Booked sun for 3 \(Ada\)")
    chat.expect("you>")
    chat.sendline("exit")
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 0
    # Answered on the call that asked: the server asked once and heard one answer.
    assert elicit_server.answers() == ["accept"]
    assert elicit_server.bookings() == ["sun:3:Ada"]
