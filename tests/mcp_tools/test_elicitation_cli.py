"""A server's form from the terminal.

`sayso run` on a tool that may run twice exits with the form open and a later `sayso decide` replays it;
on one that may not, it waits holding the call while any process answers; `sayso chat`
answers it on the live call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pexpect
import yaml

from sayso import RunResult, Sayso
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


def write_config(folder: Path, server: ElicitServer, *, replay: bool, approval: bool = False) -> Path:
    """A `sayso.yaml` whose agent books tables on the test server (pushed forms: a handshake-era session), after a
    person approved the call when `approval` says so."""
    (folder / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
    config = {
        "store": f"sqlite:///{folder / 'sayso.db'}",
        "models": {"demo": {"scripted": "script.yaml"}},
        "mcp_servers": {"booking": {"url": server.mcp_url, "session": "legacy"}},
        "agents": {
            "host": {
                "model": "demo",
                "mcp": [
                    {
                        "server": "booking",
                        "tools": ["book_table"],
                        "replay_elicitation": replay,
                        "require_approval": approval,
                    }
                ],
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
    """`sayso run` pauses on the server's form and exits; `sayso decide ... accept JSON` replays the call. Content
    that is not JSON is refused saying what accept takes and what was typed (was "accept is not valid JSON")."""
    config = write_config(tmp_path, elicit_server, replay=True)
    paused = sayso("run", str(config), "book fri")
    assert paused["status"] == "paused"
    [request] = paused["requests"]
    assert request["kind"] == "elicitation"
    assert (request["mode"], request["server"], request["tool_name"]) == ("form", "booking", "book_table")
    assert request["message"] == "Booking for fri: how many people, and under which name?"
    assert request["requested_schema"]["required"] == ["people", "name"]
    assert request["durable"] is False  # the live call went with the process
    typed = [sys.executable, "-m", "sayso", "decide", str(config), request["id"], "accept", "people=2"]
    refused = subprocess.run(typed, capture_output=True, text=True, timeout=120, check=False)
    assert refused.returncode == 2
    said = " ".join(refused.stderr.split())
    assert "accept takes the form's content as a JSON object of fields; 'people=2' is not JSON" in said, said
    assert [r["id"] for r in sayso("inbox", str(config))["requests"]] == [request["id"]]
    done = sayso("decide", str(config), request["id"], "accept", '{"people": 2, "name": "Ada"}')
    assert done["status"] == "completed"
    assert done["output"] == "Booked fri for 2 (Ada)"
    assert elicit_server.bookings() == ["fri:2:Ada"]


def start_run(config: Path, message: str) -> subprocess.Popen[str]:
    """`sayso run --json` in a process of its own, left running (it holds the server's live call)."""
    return subprocess.Popen(
        [sys.executable, "-m", "sayso", "run", str(config), message, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def open_form(config: Path, run: subprocess.Popen[str]) -> dict[str, Any]:
    """The form the running `sayso run` waits on, read from the inbox by another process once it is there."""
    deadline = time.monotonic() + 120
    while True:
        requests = [r for r in sayso("inbox", str(config))["requests"] if r["kind"] == "elicitation"]
        if requests:
            [request] = requests
            return dict(request)
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the form never reached the inbox"
        time.sleep(0.3)


def test_a_run_holding_a_live_form_waits_and_a_decide_from_another_process_completes_it(
    tmp_path: Path, elicit_server: ElicitServer
) -> None:
    """`sayso run` on a tool that may not run twice keeps the call: it waits, printing the form's `sayso decide`
    commands; a decide from another terminal is handed to it, answered on the live call, and both see it complete."""
    config = write_config(tmp_path, elicit_server, replay=False)
    run = start_run(config, "book sat")
    request = open_form(config, run)
    assert (request["kind"], request["mode"], request["durable"]) == ("elicitation", "form", False)
    done = sayso("decide", str(config), request["id"], "accept", '{"people": 2, "name": "Ada"}')
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert done["status"] == "completed" and done["output"] == "Booked sat for 2 (Ada)"
    final = json.loads(out)
    assert (final["status"], final["output"]) == ("completed", "Booked sat for 2 (Ada)")
    assert f"waiting: this process holds the call that asked request {request['id']}" in err
    assert f"decide {config} {request['id']} accept" in err
    # Answered on the call that asked: the server asked once and heard one answer.
    assert elicit_server.answers() == ["accept"]
    assert elicit_server.bookings() == ["sat:2:Ada"]
    assert sayso("inbox", str(config))["requests"] == []


def test_a_decide_whose_resumed_call_asks_a_form_waits_holding_it_until_it_is_answered(
    tmp_path: Path, elicit_server: ElicitServer
) -> None:
    """`sayso decide approve` resumes the run, and the approved call asks a form mid-call: the decide holds that call
    as `sayso run` would (it does not exit and cancel the form), a decide from another terminal answers it on the
    live call, and the first decide ends with the completed run."""
    config = write_config(tmp_path, elicit_server, replay=False, approval=True)
    paused = sayso("run", str(config), "book sun")
    [approval] = paused["requests"]
    assert approval["kind"] == "approval"
    deciding = subprocess.Popen(
        [sys.executable, "-m", "sayso", "decide", str(config), approval["id"], "approve", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    form = open_form(config, deciding)
    assert (form["kind"], form["durable"]) == ("elicitation", False)
    answered = sayso("decide", str(config), form["id"], "accept", '{"people": 3, "name": "Bo"}')
    out, err = deciding.communicate(timeout=120)
    assert deciding.returncode == 0, err
    assert f"waiting: this process holds the call that asked request {form['id']}" in err
    final = json.loads(out)
    assert (final["status"], final["output"]) == ("completed", "Booked sun for 3 (Bo)")
    assert answered["status"] == "completed"
    assert elicit_server.answers() == ["accept"]
    assert elicit_server.bookings() == ["sun:3:Bo"]


def test_ctrl_c_closes_the_form_a_waiting_run_holds_as_cancelled_and_says_so(
    tmp_path: Path, elicit_server: ElicitServer
) -> None:
    """Ctrl-C at a waiting `sayso run` cancels the form on the live call: the server hears cancel, the run
    carries on and ends, nothing stays in the inbox, and a later decide is refused (exit 4) with why."""
    config = write_config(tmp_path, elicit_server, replay=False)
    run = start_run(config, "book mon")
    request = open_form(config, run)
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert f"Ctrl-C: closed request {request['id']} as cancelled; its server was told cancel" in err
    final = json.loads(out)
    assert final["status"] == "completed" and final["requests"] == []
    assert elicit_server.answers() == ["cancel"]
    assert elicit_server.bookings() == []
    assert sayso("inbox", str(config))["requests"] == []
    late = subprocess.run(
        [sys.executable, "-m", "sayso", "decide", str(config), request["id"], "accept", '{"people": 2, "name": "Ada"}'],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert late.returncode == 4, late.stderr
    assert "already decided" in late.stderr or "cancel" in late.stderr
    assert elicit_server.bookings() == []


def test_a_form_whose_holder_was_killed_is_refused_and_closed_as_cancelled(
    tmp_path: Path, elicit_server: ElicitServer
) -> None:
    """The process holding a live form dies (kill -9): a decision is refused before its content is taken
    (exit 4, naming why), the form closes as cancelled, and the run carries on with the model told so."""
    config = write_config(tmp_path, elicit_server, replay=False)
    run = start_run(config, "book sun")
    request = open_form(config, run)
    run.kill()
    run.communicate(timeout=60)
    late = subprocess.run(
        [sys.executable, "-m", "sayso", "decide", str(config), request["id"], "accept", '{"people": 2, "name": "Ada"}'],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert late.returncode == 4, late.stderr
    assert "the call that asked this has ended: the process that held it stopped" in late.stderr
    assert sayso("inbox", str(config))["requests"] == []
    ended = anyio.run(run_result, config, request["run_id"])
    assert (ended.status, ended.output) == ("completed", CALL_ENDED)
    assert elicit_server.bookings() == []


async def run_result(config: Path, run_id: str) -> RunResult:
    """Where a run stands, read through the Python API."""
    async with Sayso.from_yaml(config) as runtime:
        return await runtime.result(run_id)


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


def spawn_chat(config: Path) -> pexpect.spawn[str]:
    """`sayso chat` on a terminal of its own."""
    env = {**os.environ, "COLUMNS": "120", "TERM": "dumb", "NO_COLOR": "1"}
    return pexpect.spawn(
        sys.executable,
        ["-m", "sayso", "chat", str(config)],
        env=env,
        encoding="utf-8",
        timeout=90,
        dimensions=(40, 120),
    )


def test_a_form_chat_holds_can_be_answered_from_another_terminal_while_it_asks(
    tmp_path: Path, elicit_server: ElicitServer
) -> None:
    """`sayso chat` holds the call and says so, with the `sayso decide` commands; an answer from another terminal
    is handed to it and answered on the live call, and the chat carries on at its prompt."""
    config = write_config(tmp_path, elicit_server, replay=False)
    chat = spawn_chat(config)
    chat.expect("you>")
    chat.sendline("book tue")
    chat.expect("This chat holds the call that asked")
    chat.expect(r"decide \S+ (req_\S+) accept")
    request_id = chat.match.group(1)
    chat.expect(r"\[f\]ill in the form")
    done = sayso("decide", str(config), request_id, "accept", '{"people": 4, "name": "Bo"}')
    assert done["output"] == "Booked tue for 4 (Bo)"
    chat.expect(f"request {request_id} was answered elsewhere")
    chat.expect(r"Booked tue for 4 \(Bo\)")
    chat.expect("you>")
    chat.sendline("exit")
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 0
    assert elicit_server.answers() == ["accept"]
    assert elicit_server.bookings() == ["tue:4:Bo"]


def test_ctrl_c_at_a_form_chat_holds_closes_it_as_cancelled_and_says_so(
    tmp_path: Path, elicit_server: ElicitServer
) -> None:
    """Ctrl-C at a held form's prompt closes it as cancelled on the live call (the server hears cancel), says so,
    and leaves the chat with nothing open."""
    config = write_config(tmp_path, elicit_server, replay=False)
    chat = spawn_chat(config)
    chat.expect("you>")
    chat.sendline("book wed")
    chat.expect(r"decide \S+ (req_\S+) accept")
    request_id = chat.match.group(1)
    chat.expect(r"\[f\]ill in the form")
    chat.sendintr()
    chat.expect(f"Ctrl-C: closed request {request_id} as cancelled; its server was told cancel")
    chat.expect("come back with")
    chat.expect(pexpect.EOF)
    chat.close()
    assert elicit_server.answers() == ["cancel"]
    assert elicit_server.bookings() == []
    assert sayso("inbox", str(config))["requests"] == []
