"""`sayso init`: the starter project runs as written with `sayso run`, `sayso chat` and `sayso serve`, no key needed.

The commands it and a paused run print are run verbatim through a shell whose PATH lacks the
venv, as a person pasting them would.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import yaml
from typer.testing import CliRunner

from sayso import ScriptedModel
from sayso.cli import app

from ..conftest import ROOT, LiveServer

runner = CliRunner()
BARE_PATH = "/usr/bin:/bin"
"""A PATH without the venv, as in a fresh shell."""


def bare_env(**extra: str) -> dict[str, str]:
    """The environment of a fresh shell: no venv on PATH, no store override from the test fixture."""
    env = {k: v for k, v in os.environ.items() if k not in ("SAYSO_STORE", "VIRTUAL_ENV")}
    return {**env, "PATH": BARE_PATH, "COLUMNS": "200", "NO_COLOR": "1", **extra}


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-c", command], cwd=cwd, env=bare_env(), capture_output=True, text=True, timeout=120
    )


def printed_commands(output: str) -> list[str]:
    """The indented command lines a command printed for the person to paste."""
    return [line.strip() for line in output.splitlines() if re.match(r"^\s+\S*(sayso|python\S*) ", line)]


def test_init_prints_commands_that_run_the_starter_from_a_shell_without_the_venv(tmp_path: Path) -> None:
    """`sayso init` writes three files; its printed `run` pauses on the refund, and the printed `approve` (pasted in
    a shell whose PATH lacks the venv) runs the refund once, with the amount typed as a number."""
    started = shell(f"{sys.executable} -m sayso init shop", tmp_path)
    assert started.returncode == 0, started.stderr
    assert sorted(p.name for p in (tmp_path / "shop").iterdir()) == ["desk_tools.py", "sayso.yaml", "script.yaml"]
    run, chat, serve = printed_commands(started.stdout)
    assert " chat " in chat and " serve " in serve
    paused = shell(run, tmp_path)
    assert paused.returncode == 0, paused.stderr
    assert "desk wants to run refund" in paused.stdout and "Refunds move money." in paused.stdout
    commands = printed_commands(paused.stdout)
    approve = next(c for c in commands if c.endswith(" approve"))
    edit = next(c for c in commands if "--args" in c)
    assert '"amount": 25' in edit and '"amount": "25"' not in edit
    done = shell(approve, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Refunded 25.00 on order A-100." in done.stdout
    assert (tmp_path / "shop" / "refunds.txt").read_text() == "A-100 25.00\n"


def test_init_named_relative_prints_commands_that_run_pasted_in_another_folder(tmp_path: Path) -> None:
    """`sayso init shop` (a folder named relative to where it ran) prints commands naming the config by its absolute
    path: its `run`, pasted in another folder, pauses on the refund (it said "cannot read config 'shop/sayso.yaml'")."""
    started = shell(f"{sys.executable} -m sayso init shop", tmp_path)
    assert started.returncode == 0, started.stderr
    config = str(tmp_path / "shop" / "sayso.yaml")
    commands = printed_commands(started.stdout)
    assert len(commands) == 3 and all(f" {config}" in c for c in commands), started.stdout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    paused = shell(commands[0], elsewhere)
    assert paused.returncode == 0, paused.stderr
    assert "desk wants to run refund" in paused.stdout


def test_init_refuses_to_overwrite_a_project(tmp_path: Path) -> None:
    """A second `sayso init` in the same folder writes nothing and says which files are there (exit 2)."""
    assert runner.invoke(app, ["init", str(tmp_path)]).exit_code == 0
    (tmp_path / "script.yaml").write_text("name: mine\n")
    again = runner.invoke(app, ["init", str(tmp_path)])
    assert again.exit_code == 2
    assert "already there" in again.stderr and "sayso.yaml" in again.stderr
    assert (tmp_path / "script.yaml").read_text() == "name: mine\n"


def test_the_starter_chats_a_question_then_an_approval(tmp_path: Path) -> None:
    """`sayso chat` on the starter: `refund A-100` asks how much, then asks approval, then refunds."""
    assert runner.invoke(app, ["init", str(tmp_path / "shop")]).exit_code == 0
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "sayso", "chat", str(tmp_path / "shop" / "sayso.yaml")],
        env=bare_env(TERM="dumb", COLUMNS="100"),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 100),
    )
    chat.expect("a scripted demo model, not an LLM")
    chat.expect("you>")
    chat.sendline("refund A-100")
    chat.expect("How much should I refund on that order?")
    chat.expect("answer")
    chat.sendline("2")
    chat.expect("desk wants to run refund")
    chat.expect(r"\[a\]pprove")
    chat.sendline("a")
    chat.expect("Refunded 25.00 on order A-100.")
    chat.expect("you>")
    chat.sendline("exit")
    chat.expect(pexpect.EOF)
    assert (tmp_path / "shop" / "refunds.txt").read_text() == "A-100 25.00\n"


def test_the_starter_serves_and_pauses_over_rest(tmp_path: Path) -> None:
    """`sayso serve` on the starter: a run pauses on the refund, an approval over REST completes it."""
    assert runner.invoke(app, ["init", str(tmp_path / "shop")]).exit_code == 0
    env = bare_env(PATH=os.environ["PATH"])
    served, process = LiveServer.process([str(tmp_path / "shop" / "sayso.yaml")], env=env)
    try:
        with served.client() as client:
            run = client.post("/v1/runs", json={"message": "refund A-101 120"}).json()
            assert run["status"] == "paused"
            [request] = run["requests"]
            assert (request["tool_name"], request["args"]) == ("refund", {"order_id": "A-101", "amount": 120})
            done = client.post(f"/v1/requests/{request['id']}/decision", json={"kind": "approve"})
            assert done.status_code == 200, done.text
            assert done.json()["run"]["output"] == "Refunded 120.00 on order A-101."
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert (tmp_path / "shop" / "refunds.txt").read_text() == "A-101 120.00\n"


def test_every_script_in_the_scripted_guide_loads(tmp_path: Path) -> None:
    """Each YAML block with `rules:` in docs/guides/scripted.md is a script the scripted model loads."""
    page = (ROOT / "docs" / "guides" / "scripted.md").read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", page, re.S) if "rules:" in b]
    assert len(blocks) >= 7
    for n, block in enumerate(blocks):
        path = tmp_path / f"script{n}.yaml"
        path.write_text(block)
        assert yaml.safe_load(block)["rules"], block
        ScriptedModel.from_file(path)  # raises ConfigError naming the problem if the guide is wrong
