"""The `sayso` command with odd input and odd stores: no traceback, the exit code of the table, words that fit."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pexpect
import pytest
from typer.testing import CliRunner

from sayso.cli import _app as cli_app
from sayso.cli import app

from ..conftest import EXAMPLE, ROOT
from .test_cli import spawn_chat

runner = CliRunner()


def test_agent_output_with_brackets_is_printed_as_written(tmp_path: Path) -> None:
    """An answer holding `[/b]` or `[red]` is shown word for word, not read as styling (nor a crash on a stray tag)."""
    sandbox = tmp_path / "sandbox"
    runner.invoke(app, ["run", str(EXAMPLE), "list", "--json"])  # creates the sandbox with its sample files
    (sandbox / "odd.txt").write_text("price [/b] list [red]x")
    shown = runner.invoke(app, ["run", str(EXAMPLE), "read odd.txt"])
    assert shown.exit_code == 0, shown.output
    assert "price [/b] list [red]x" in shown.stdout


def test_chat_shows_choices_and_arguments_with_brackets_as_written(tmp_path: Path) -> None:
    """At the chat prompt, choices, the arguments to edit and the answer that hold `[b]` are shown as written."""
    runner.invoke(app, ["run", str(EXAMPLE), "list", "--json"])  # creates the sandbox with its sample files
    for name in ("report-[red].txt", "report-[b].txt"):
        (tmp_path / "sandbox" / name).write_text("x")
    chat = spawn_chat()
    chat.expect("you>")
    chat.sendline("delete report")
    chat.expect(r"\) report-\[b\]\.txt")
    chat.expect(r"\) report-\[red\]\.txt")
    chat.expect("answer")
    chat.sendline("report-[b].txt")
    chat.expect(r"\[a\]pprove")
    chat.sendline("e")
    chat.expect(r'current arguments: \{"name": "report-\[b\]\.txt"\}')
    chat.expect("new arguments")
    chat.sendline('{"name": "report-[b].txt"}')
    chat.expect(r"remember\? \[1\]>")
    chat.sendline("")
    chat.expect(r"Deleted report-\[b\]\.txt\.")
    chat.sendeof()
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 0


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("'not json'", id="text"),
        pytest.param("'[1, 2]'", id="a-list"),
        pytest.param("x'ff00'", id="bytes"),
        pytest.param("""'{"event": 5, "tool_name": [1], "decision": null}'""", id="odd-fields"),
    ],
)
def test_audit_verify_and_list_name_a_record_edited_into_anything(tmp_path: Path, body: str) -> None:
    """A record whose body was edited by hand into anything: verify names it (exit 1), list still lists it."""
    paused = json.loads(runner.invoke(app, ["run", str(EXAMPLE), "delete notes", "--json"]).stdout)
    runner.invoke(app, ["decide", str(EXAMPLE), paused["requests"][0]["id"], "approve"])
    with sqlite3.connect(tmp_path / "sayso.db") as conn:
        conn.execute(f"UPDATE audit SET body = {body} WHERE seq = 1")
    verified = runner.invoke(app, ["audit", "verify", str(EXAMPLE)])
    assert verified.exit_code == 1
    assert "audit log tampered at record 1: record 1 was altered after it was written" in verified.stderr
    as_json = runner.invoke(app, ["audit", "verify", str(EXAMPLE), "--json"])
    assert (as_json.exit_code, json.loads(as_json.stdout)["problem"]["seq"]) == (1, 1)
    listed = runner.invoke(app, ["audit", "list", str(EXAMPLE)])
    assert listed.exit_code == 0, listed.output
    records = json.loads(runner.invoke(app, ["audit", "list", str(EXAMPLE), "--json"]).stdout)["records"]
    assert [r["seq"] for r in records] == [1, 2]


def test_a_config_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    """`check` and `run` on a config saved in another encoding say so and exit 2, with no traceback."""
    config = tmp_path / "latin1.yaml"
    config.write_bytes(EXAMPLE.read_text().replace("Manages", "Gère").encode("latin-1"))
    for args in (["check", str(config)], ["run", str(config), "list"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "latin1.yaml' is not UTF-8 text (byte" in result.stderr
    as_json = runner.invoke(app, ["run", str(config), "list", "--json"])
    assert json.loads(as_json.stdout)["error"]["type"] == "ConfigError"


def test_grants_list_prints_each_grant_id_whole_for_revoke() -> None:
    """On an 80-column terminal the grant id `grants revoke` takes is printed whole, and revoking it works."""
    paused = json.loads(runner.invoke(app, ["run", str(EXAMPLE), "delete notes", "--json"]).stdout)
    runner.invoke(app, ["decide", str(EXAMPLE), paused["requests"][0]["id"], "approve", "--scope", "thread"])
    [grant] = json.loads(runner.invoke(app, ["grants", "list", str(EXAMPLE), "--json"]).stdout)["grants"]
    listed = runner.invoke(app, ["grants", "list", str(EXAMPLE)], env={"COLUMNS": "80"})
    assert listed.exit_code == 0
    assert grant["grant_id"] in listed.stdout
    revoked = runner.invoke(app, ["grants", "revoke", str(EXAMPLE), grant["grant_id"]])
    assert revoked.exit_code == 0 and f"revoked {grant['grant_id']}" in revoked.stdout


def test_args_with_nan_or_infinity_are_refused_and_the_request_stays_open(tmp_path: Path) -> None:
    """`--args` with NaN or Infinity (which Python's JSON reads) is refused (exit 4), the call not run nor failed."""
    assert runner.invoke(app, ["init", str(tmp_path / "shop")]).exit_code == 0
    config = str(tmp_path / "shop" / "sayso.yaml")
    paused = json.loads(runner.invoke(app, ["run", config, "refund A-100 25", "--json"]).stdout)
    request_id = paused["requests"][0]["id"]
    for amount, said in (("NaN", "amount is NaN"), ("Infinity", "amount is infinite")):
        edited = f'{{"order_id": "A-100", "amount": {amount}}}'
        refused = runner.invoke(app, ["decide", config, request_id, "approve", "--args", edited])
        assert refused.exit_code == 4, refused.output
        assert f"edited arguments: {said}, which JSON cannot carry" in refused.stderr
    assert not (tmp_path / "shop" / "refunds.txt").exists()
    inbox = json.loads(runner.invoke(app, ["inbox", config, "--json"]).stdout)
    assert [r["id"] for r in inbox["requests"]] == [request_id]
    done = json.loads(runner.invoke(app, ["decide", config, request_id, "approve", "--json"]).stdout)
    assert done["output"] == "Refunded 25.00 on order A-100."


def test_json_errors_of_decide_and_policy_test_are_json() -> None:
    """With `--json`, what `decide` and `policy test` refuse to read is one `{"error": …}` object on stdout (exit 2)."""
    paused = json.loads(runner.invoke(app, ["run", str(EXAMPLE), "delete notes", "--json"]).stdout)
    request_id = paused["requests"][0]["id"]
    for args, said in (
        (["decide", str(EXAMPLE), request_id, "approve", "--args", "{bad"], "--args is not valid JSON"),
        (["decide", str(EXAMPLE), request_id, "maybe"], "unknown action 'maybe'"),
        (["policy", "test", str(EXAMPLE), "--tool", "delete_file", "--args", "[1]"], "--args must be a JSON object"),
        (["policy", "test", str(EXAMPLE), "--tool", "delete_file", "--agent", "nope"], "no agent 'nope'"),
    ):
        result = runner.invoke(app, [*args, "--json"])
        assert result.exit_code == 2, result.output
        assert said in json.loads(result.stdout)["error"]["message"]
    inbox = json.loads(runner.invoke(app, ["inbox", str(EXAMPLE), "--json"]).stdout)
    assert [r["id"] for r in inbox["requests"]] == [request_id]


def test_approve_with_words_the_tool_does_not_read_is_refused_not_run(tmp_path: Path) -> None:
    """`approve '{"name": "todo.md"}'` (meant as --args) or `approve always` is refused (exit 2), the file kept."""
    paused = json.loads(runner.invoke(app, ["run", str(EXAMPLE), "delete notes", "--json"]).stdout)
    request_id = paused["requests"][0]["id"]
    for value in ('{"name": "todo.md"}', "always"):
        refused = runner.invoke(app, ["decide", str(EXAMPLE), request_id, "approve", value])
        assert refused.exit_code == 2, refused.output
        assert "takes no value after approve" in refused.output and "use --args JSON" in refused.output
    assert (tmp_path / "sandbox" / "notes.txt").exists()
    done = json.loads(runner.invoke(app, ["decide", str(EXAMPLE), request_id, "approve", "--json"]).stdout)
    assert done["output"] == "Deleted notes.txt."


def test_inbox_lists_every_open_request_past_one_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """`sayso inbox` reads page after page: more open requests than one page holds are all listed, oldest first."""
    monkeypatch.setattr(cli_app, "INBOX_PAGE", 2)
    opened = [
        json.loads(runner.invoke(app, ["run", str(EXAMPLE), "delete notes", "--json"]).stdout)["requests"][0]["id"]
        for _ in range(5)
    ]
    listed = json.loads(runner.invoke(app, ["inbox", str(EXAMPLE), "--json"]).stdout)["requests"]
    assert [r["id"] for r in listed] == opened
    shown = runner.invoke(app, ["inbox", str(EXAMPLE)])
    assert all(request_id in shown.stdout for request_id in opened)


@pytest.mark.parametrize("window", ["99999999999d", "9" * 40])
def test_stats_over_a_window_longer_than_time_covers_everything(window: str) -> None:
    """`stats --window` past 1970 counts every request since then, as a table and as JSON, with no traceback."""
    runner.invoke(app, ["run", str(EXAMPLE), "delete notes", "--json"])
    as_json = runner.invoke(app, ["stats", str(EXAMPLE), "--window", window, "--json"])
    assert as_json.exit_code == 0, as_json.output
    found = json.loads(as_json.stdout)
    assert (found["since"], found["overall"]["requests"]) == ("1970-01-01T00:00:00.000Z", 1)
    shown = runner.invoke(app, ["stats", str(EXAMPLE), "--window", window])
    assert shown.exit_code == 0 and f"approval requests of the last {window}: 1" in shown.stdout


def test_init_where_no_folder_can_be_made_says_so(tmp_path: Path) -> None:
    """`sayso init` under a regular file names the folder and why (exit 2), with no traceback."""
    (tmp_path / "afile").write_text("x")
    result = runner.invoke(app, ["init", str(tmp_path / "afile" / "shop")])
    assert result.exit_code == 2, result.output
    assert f"cannot write the starter in {tmp_path / 'afile' / 'shop'}: Not a directory" in result.stderr


def test_a_rejection_that_ends_a_vote_is_not_shown_as_still_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """A vote goes on after the first approval (`1 of 2, waiting`); the rejection that ends it says declined alone."""
    for name in ("alice", "bob", "carol", "dana"):
        monkeypatch.setenv(f"{name.upper()}_TOKEN", f"{name}-token")
    config = str(ROOT / "examples" / "refunds" / "sayso.yaml")
    paused = runner.invoke(app, ["run", config, "refund 40 to acme", "--principal", "dana", "--json"])
    request_id = json.loads(paused.stdout)["requests"][0]["id"]
    voted = runner.invoke(app, ["decide", config, request_id, "approve", "--principal", "alice"])
    assert voted.exit_code == 0 and "approvals: 1 of 2, waiting for finance" in voted.stdout
    rejected = runner.invoke(app, ["decide", config, request_id, "reject", "--principal", "bob"])
    assert rejected.exit_code == 0, rejected.output
    assert "Declined by the person." in rejected.stdout
    assert "waiting for" not in rejected.stdout


TEAM = ROOT / "examples" / "team" / "sayso.yaml"


def test_chat_on_a_thread_talks_to_the_threads_agent_and_refuses_another() -> None:
    """`chat --thread` greets and runs the thread's agent; `--agent` starts a new thread id on that agent; a
    different `--agent` on an existing thread is refused (exit 2), as `sayso run` refuses it."""
    started = runner.invoke(app, ["chat", str(TEAM), "--thread", "thr_mine", "--agent", "analyst"], input="hello\n")
    assert started.exit_code == 0, started.output
    assert "Chatting with analyst" in started.stdout and "Which quarter should I look at?" in started.stdout
    again = runner.invoke(app, ["chat", str(TEAM), "--thread", "thr_mine"], input="")
    assert again.exit_code == 0, again.output
    assert "Chatting with analyst" in again.stdout and "coordinator" not in again.stdout
    other = runner.invoke(app, ["chat", str(TEAM), "--thread", "thr_mine", "--agent", "coordinator"], input="")
    assert other.exit_code == 2
    assert "thread 'thr_mine' belongs to agent 'analyst', not 'coordinator'" in other.stderr


def test_an_option_the_action_does_not_read_is_refused_not_dropped() -> None:
    """`reject --args …` or `approve --reason …` exits 2 naming the option: dropped, it would look like it applied."""
    paused = json.loads(runner.invoke(app, ["run", str(EXAMPLE), "delete notes", "--json"]).stdout)
    request_id = paused["requests"][0]["id"]
    for words, said in (
        (["reject", "--args", '{"name": "todo.md"}'], "--args goes with approve, not with reject"),
        (["skip", "--scope", "always"], "--scope goes with approve, not with skip"),
        (["approve", "--reason", "fine"], "--reason goes with reject or skip, not with approve"),
        (["reject", "--answers", '[["a"]]'], "--answers goes with answer, not with reject"),
    ):
        refused = runner.invoke(app, ["decide", str(EXAMPLE), request_id, *words])
        assert refused.exit_code == 2, refused.output
        assert said in refused.output
    inbox = json.loads(runner.invoke(app, ["inbox", str(EXAMPLE), "--json"]).stdout)
    assert [r["id"] for r in inbox["requests"]] == [request_id]


def test_words_and_an_option_saying_the_same_thing_are_refused_not_one_dropped() -> None:
    """`reject a --reason b` recorded `b` and dropped `a`; `answer --answers … extra` dropped `extra`; `decline some
    words` dropped the words. Each exits 2 naming both, and the requests stay open."""
    paused = json.loads(runner.invoke(app, ["run", str(EXAMPLE), "delete notes", "--json"]).stdout)
    asked = json.loads(runner.invoke(app, ["run", str(EXAMPLE), "delete report", "--json"]).stdout)
    approval, question = paused["requests"][0]["id"], asked["requests"][0]["id"]
    for request_id, words, said in (
        (approval, ["reject", "a", "--reason", "b"], "reject got a reason twice ('a' and --reason)"),
        (approval, ["skip", "a", "--reason", "b"], "skip got a reason twice ('a' and --reason)"),
        (question, ["answer", "--answers", '[["a"]]', "extra"], "answer got answers twice ('extra' and --answers)"),
        (approval, ["decline", "no", "thanks"], "decline takes no value (got 'no thanks')"),
    ):
        refused = runner.invoke(app, ["decide", str(EXAMPLE), request_id, *words])
        assert refused.exit_code == 2, refused.output
        assert said in refused.output
    inbox = json.loads(runner.invoke(app, ["inbox", str(EXAMPLE), "--json"]).stdout)
    assert {r["id"] for r in inbox["requests"]} == {approval, question}


def test_a_workflow_input_answered_with_question_answers_says_what_it_takes() -> None:
    """A workflow's input takes one value: `answer --answers …` failed with "'' is not of type 'object'" (exit 4);
    it, and `answer` with no value, now exit 2 saying to give `answer VALUE`."""
    concierge = str(ROOT / "examples" / "concierge" / "sayso.yaml")
    paused = json.loads(runner.invoke(app, ["run", concierge, "plan my day", "--json"]).stdout)
    request_id = paused["requests"][0]["id"]
    for words, said in (
        (["answer", "--answers", '[["a"]]'], "a workflow's input takes one value, not --answers"),
        (["answer"], "answer needs the input's value"),
    ):
        refused = runner.invoke(app, ["decide", concierge, request_id, *words])
        assert refused.exit_code == 2, refused.output
        assert said in refused.output and "answer VALUE" in refused.output
    inbox = json.loads(runner.invoke(app, ["inbox", concierge, "--json"]).stdout)
    assert [r["id"] for r in inbox["requests"]] == [request_id]


CONCIERGE = str(ROOT / "examples" / "concierge" / "sayso.yaml")


def test_a_second_value_a_workflow_input_does_not_read_is_refused_naming_it() -> None:
    """`answer '{"city": "Rome"}' '{"x":1}'` joined both into one text that failed the schema (exit 4); it exits 2
    naming the extra value, and the request stays open."""
    paused = json.loads(runner.invoke(app, ["run", CONCIERGE, "plan my day", "--json"]).stdout)
    request_id = paused["requests"][0]["id"]
    refused = runner.invoke(app, ["decide", CONCIERGE, request_id, "answer", '{"city": "Rome"}', '{"x":1}'])
    assert refused.exit_code == 2, refused.output
    assert "takes one value" in refused.output and """'{"x":1}'""" in refused.output, refused.output
    inbox = json.loads(runner.invoke(app, ["inbox", CONCIERGE, "--json"]).stdout)
    assert [r["id"] for r in inbox["requests"]] == [request_id]


def test_an_action_a_request_does_not_take_names_the_actions_the_command_line_has() -> None:
    """`reject` on a workflow's input said it "takes provide, skip", and `result` "not 'client_result'": words
    `sayso decide` does not document. Each names the actions as typed here, and nothing is recorded."""
    paused = json.loads(runner.invoke(app, ["run", CONCIERGE, "plan my day", "--json"]).stdout)
    request_id = paused["requests"][0]["id"]
    for action in ("reject", "approve", "result"):
        refused = runner.invoke(app, ["decide", CONCIERGE, request_id, action, *(["1"] if action == "result" else [])])
        assert refused.exit_code == 4, refused.output
        said = f"this input request takes answer or skip, not {action}"
        assert said in refused.stderr, refused.stderr
    asked = json.loads(runner.invoke(app, ["run", str(EXAMPLE), "delete notes", "--json"]).stdout)
    approval = asked["requests"][0]["id"]
    refused = runner.invoke(app, ["decide", str(EXAMPLE), approval, "result", "1"])
    assert "this approval request takes approve, reject or skip, not result" in refused.stderr, refused.stderr
    inbox = json.loads(runner.invoke(app, ["inbox", CONCIERGE, "--json"]).stdout)
    assert {r["id"] for r in inbox["requests"]} == {request_id, approval}


def test_stats_show_the_open_requests_so_the_outcomes_add_up() -> None:
    """The rates are shares of every request, open ones too: the table has an `open` column beside the other
    outcomes (2 requests, 1 approved, 1 open: 50 % each), with the count `--json` and REST give."""
    first = json.loads(runner.invoke(app, ["run", str(EXAMPLE), "delete notes", "--json"]).stdout)
    runner.invoke(app, ["run", str(EXAMPLE), "delete todo.md", "--json"])
    assert runner.invoke(app, ["decide", str(EXAMPLE), first["requests"][0]["id"], "approve"]).exit_code == 0
    found = json.loads(runner.invoke(app, ["stats", str(EXAMPLE), "--json"]).stdout)["overall"]
    assert (found["requests"], found["approved"], found["open"]) == (2, 1, 1)
    table = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["stats", str(EXAMPLE)]).stdout
    header = next(line for line in table.splitlines() if "requests" in line and "approved" in line)
    assert re.findall(r"\w+", header)[:6] == ["requests", "approved", "rejected", "expired", "closed", "open"], header
    overall = next(line for line in table.splitlines() if line.strip("│ ").startswith("all"))
    assert re.findall(r"\d+ \(\d+%\)", overall)[:5] == ["1 (50%)", "0 (0%)", "0 (0%)", "0 (0%)", "1 (50%)"], overall


def test_a_long_argument_is_shown_whole_in_the_request_panel(tmp_path: Path) -> None:
    """The person approves what they read: an argument longer than the panel is wrapped onto more lines, not cut off
    at the panel's edge with its end (here the part that says which file) out of sight."""
    runner.invoke(app, ["run", str(EXAMPLE), "list", "--json"])  # creates the sandbox with its sample files
    name = "quarterly-" + "x" * 120 + "-KEEP-THIS-ONE.txt"
    (tmp_path / "sandbox" / name).write_text("x")
    for command in (["run", str(EXAMPLE), f"delete {name}"], ["inbox", str(EXAMPLE)]):
        shown = runner.invoke(app, command, env={"COLUMNS": "60"})
        assert shown.exit_code == 0, shown.output
        panel = shown.stdout.split("answer with:")[0]
        inside = "".join(line.strip("│ ") for line in panel.splitlines())
        assert name in inside, panel


def test_control_characters_from_a_tool_or_the_model_reach_the_terminal_as_visible_text(tmp_path: Path) -> None:
    """A file the agent reads (or a model's words, a question, a form) holding terminal escape sequences cannot move
    the cursor, erase the lines above (the request a person is about to approve) or retitle the terminal: each
    control character is shown as text, in a colour terminal too."""
    runner.invoke(app, ["run", str(EXAMPLE), "list", "--json"])  # creates the sandbox with its sample files
    (tmp_path / "sandbox" / "evil.txt").write_text("safe line\n\x1b[1A\x1b[2Kinjected\x1b]0;title\x07 \x9b2J end\n")
    for env in ({"NO_COLOR": "1"}, {"FORCE_COLOR": "1", "TERM": "xterm-256color"}):
        shown = runner.invoke(app, ["run", str(EXAMPLE), "read evil.txt"], env=env)
        assert shown.exit_code == 0, shown.output
        assert "injected" in shown.stdout
        for control in ("\x1b[1A", "\x1b[2K", "\x1b]0;", "\x07", "\x9b"):
            assert control not in shown.stdout, (control, shown.stdout)
        assert "\\x1b[1A\\x1b[2Kinjected" in shown.stdout
