"""`serve`: config loading with webhooks, the local-mode bind rule, and a real process that shuts down cleanly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from sayso import ConfigError, PrincipalConfig, load_config
from sayso.server import check_bind

from ..conftest import LiveServer
from .conftest import EXAMPLE


def test_local_mode_binds_only_to_loopback() -> None:
    """Without principals the server refuses 0.0.0.0 (its start-up line says loudly that it runs in local mode)."""
    config = load_config(EXAMPLE)
    with pytest.raises(ConfigError, match="local development mode"):
        check_bind(config, "0.0.0.0")
    check_bind(config, "127.0.0.1")
    with_principals = config.model_copy(update={"principals": [PrincipalConfig(name="a", token="t")]})
    check_bind(with_principals, "0.0.0.0")


def test_webhooks_are_read_from_the_config_file(tmp_path: Path) -> None:
    """The config's `webhooks:` list is validated with the rest of the file."""
    text = (
        EXAMPLE.read_text() + "webhooks:\n  - {url: 'http://127.0.0.1:9/hook', secret: s, events: [request.opened]}\n"
    )
    (tmp_path / "sayso.yaml").write_text(text)
    (tmp_path / "script.yaml").write_text((EXAMPLE.parent / "script.yaml").read_text())
    config = load_config(tmp_path / "sayso.yaml")
    assert config.entry_agent == "files"
    assert [(h.url, h.events) for h in config.webhooks] == [("http://127.0.0.1:9/hook", ["request.opened"])]
    (tmp_path / "bad.yaml").write_text(text.replace("secret: s, ", ""))
    with pytest.raises(ConfigError, match="secret"):
        load_config(tmp_path / "bad.yaml")
    assert load_config(EXAMPLE).webhooks == []


def test_serve_runs_until_sigterm_and_exits_cleanly(tmp_path: Path) -> None:
    """A real `serve` process answers its health check and stops cleanly on SIGTERM."""
    env = {"SAYSO_STORE": f"sqlite:///{tmp_path / 'sayso.db'}", "SAYSO_SANDBOX": str(tmp_path / "sandbox"), "PATH": ""}
    served, process = LiveServer.process([str(EXAMPLE)], env=env, stderr=subprocess.PIPE)
    try:
        run = httpx.post(f"{served.base_url}/v1/runs", json={"message": "delete notes"}, timeout=30).json()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    # uvicorn re-raises SIGTERM once it has shut down, so the exit reads as that signal.
    assert process.returncode in (0, -signal.SIGTERM)
    assert "sayso stopped cleanly" in stderr
    assert run["status"] == "paused"


def test_a_start_says_url_store_and_mode_and_nothing_else(tmp_path: Path) -> None:
    """A normal start prints one line each for where it serves, the store and the mode, once it listens: no
    migration or worker chatter, no line of the libraries below warning."""
    store = f"sqlite:///{tmp_path / 'sayso.db'}"
    env = {"SAYSO_STORE": store, "SAYSO_SANDBOX": str(tmp_path / "sandbox"), "PATH": ""}
    served, process = LiveServer.process([str(EXAMPLE)], env=env, stderr=subprocess.PIPE)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    lines = stderr.splitlines()
    assert lines[0] == f"sayso serves {EXAMPLE} on {served.base_url}/  (API docs at /docs; Ctrl-C stops)"
    assert lines[1] == f"store: {store}"
    assert lines[2].startswith("mode: LOCAL DEVELOPMENT MODE, no principals: anyone who can reach 127.0.0.1")
    rest = [line for line in lines[3:] if '"GET /healthz' not in line]  # the access log of the readiness probe
    assert rest == ["sayso stopped cleanly"], stderr
    for chatter in ("alembic", "docket", "Started server process", "Waiting for application startup"):
        assert chatter not in stderr


BEFORE_LISTENING = """
import sys
from pydantic import TypeAdapter
from pydantic_ai.messages import ModelMessagesTypeAdapter
import sayso._serve as serving
from sayso._store._trusted import trusted_validator


def unbuilt() -> list[str]:
    adapters = [(f"{name}.{attr}", value) for name, module in list(sys.modules.items()) if name.startswith("sayso")
                for attr, value in vars(module).items() if isinstance(value, TypeAdapter)]
    adapters.append(("ModelMessagesTypeAdapter", ModelMessagesTypeAdapter))
    return sorted(name for name, adapter in adapters if not adapter.pydantic_complete)


def listen(server: object) -> None:  # where uvicorn would bind and take the first request
    print("listening:", unbuilt(), trusted_validator.cache_info().currsize)


serving._Server.run = listen
print("loaded:", unbuilt(), trusted_validator.cache_info().currsize)
serving.serve(sys.argv[1], port=0)
"""


def test_every_codec_is_built_before_the_server_listens(tmp_path: Path) -> None:
    """The first request after a start does not build the adapters a short command defers: `serve` built them all.

    Loading the server leaves them unbuilt (so `sayso inbox` never pays for them); by the time it would
    listen, no adapter a sayso module holds, nor pydantic-ai's message adapter or the trusted history
    schema, is left to build. An adapter added later is covered, or this fails naming it.
    """
    env = {**os.environ, "SAYSO_STORE": f"sqlite:///{tmp_path / 'sayso.db'}", "SAYSO_SANDBOX": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", BEFORE_LISTENING, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    loaded, listening = done.stdout.splitlines()
    assert "sayso._core.requests.REQUEST_ADAPTER" in loaded and "ModelMessagesTypeAdapter" in loaded
    assert loaded.endswith(" 0")  # the trusted schema too
    assert listening == "listening: [] 1"


def serve_the_example(env: dict[str, str], port: int) -> subprocess.CompletedProcess[str]:
    """`sayso serve` on the example config, for a test of how it stops at start-up: its exit and what it printed."""
    command = [sys.executable, "-m", "sayso", "serve", str(EXAMPLE), "--port", str(port)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_a_port_in_use_exits_5_naming_it(tmp_path: Path) -> None:
    """`sayso serve` on a port another process holds says so, with no traceback and no banner, and exits 5."""
    env = {"SAYSO_STORE": f"sqlite:///{tmp_path / 'sayso.db'}", "SAYSO_SANDBOX": str(tmp_path / "sandbox"), "PATH": ""}
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = serve_the_example(env, port)
    assert done.returncode == 5, done.stderr
    assert f"error: cannot listen on 127.0.0.1:{port}: Address already in use; pick another port" in done.stderr
    assert "sayso serves" not in done.stderr and "Traceback" not in done.stderr


def test_a_store_that_cannot_be_opened_exits_5_in_one_line(tmp_path: Path) -> None:
    """A PostgreSQL that refuses the connection: `sayso serve` names the store and why, no traceback, exit 5."""
    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        dead = closed.getsockname()[1]
    env = {
        "SAYSO_STORE": f"postgresql://sayso:secret@127.0.0.1:{dead}/sayso",
        "SAYSO_SANDBOX": str(tmp_path),
        "PATH": "",
    }
    done = serve_the_example(env, 0)
    assert done.returncode == 5, done.stderr
    assert f"error: could not open the store at 'postgresql://sayso@127.0.0.1:{dead}/sayso'" in done.stderr
    assert "Traceback" not in done.stderr and "secret" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # not also uvicorn's "startup failed"


def test_a_config_that_does_not_load_prints_no_banner(tmp_path: Path) -> None:
    """A broken config stops `sayso serve` before anything says it serves (exit 2)."""
    config = tmp_path / "sayso.yaml"
    config.write_text("agents:\n  a:\n    modle: x\n")
    done = subprocess.run(
        [sys.executable, "-m", "sayso", "serve", str(config)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "modle" in done.stderr and "sayso serves" not in done.stderr + done.stdout


def test_sigterm_ends_open_live_streams_at_once(tmp_path: Path) -> None:
    """An open `/v1/events` stream says `end` when the server is told to stop, so it stops in seconds, not after
    the stream's lifetime or the graceful-shutdown timeout; the `end` still says to reconnect (a server that stops
    is most often restarting, or one replica of several leaving), so a client that honours it keeps following."""
    env = {"SAYSO_STORE": f"sqlite:///{tmp_path / 'sayso.db'}", "SAYSO_SANDBOX": str(tmp_path / "sandbox"), "PATH": ""}
    served, process = LiveServer.process([str(EXAMPLE)], env=env)
    try:
        with served.client() as client, client.stream("GET", "/v1/events") as response:
            lines = response.iter_lines()
            assert next(line for line in lines if line.startswith("event: ")) == "event: ready"
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            assert next(line for line in lines if line.startswith("event: ")) == "event: end"
            assert next(line for line in lines if line.startswith("data: ")) == 'data: {"reconnect":true}'
        process.wait(timeout=20)
        assert time.monotonic() - started < 10
    finally:
        process.kill()


def test_sayso_serve_command_sweeps_expired_requests(tmp_path: Path) -> None:
    """`sayso serve --expire-every` closes a run whose request outlived its TTL, without anyone asking."""
    config = tmp_path / "sayso.yaml"
    config.write_text(
        EXAMPLE.read_text().replace(
            "tools: [{name: delete_file,", "ttl_seconds: 0.5\n      tools: [{name: delete_file,"
        )
    )
    for name in ("script.yaml", "files_tools.py", "files_subjects.py"):
        (tmp_path / name).write_text((EXAMPLE.parent / name).read_text())
    env = {"SAYSO_STORE": f"sqlite:///{tmp_path / 'sayso.db'}", "SAYSO_SANDBOX": str(tmp_path / "sandbox"), "PATH": ""}
    served, _ = LiveServer.process([str(config), "--expire-every", "0.3"], env=env)
    try:
        with served.client() as client:
            run = client.post("/v1/runs", json={"message": "delete notes"}).json()
            assert run["status"] == "paused"
            deadline = time.monotonic() + 20
            while (state := client.get(f"/v1/runs/{run['run_id']}").json())["status"] in ("paused", "running"):
                assert time.monotonic() < deadline, "the sweep never closed the run"
                time.sleep(0.2)
    finally:
        served.stop()
    assert state["status"] == "completed"
    assert state["output"].startswith("Expired: no decision before")
    assert (tmp_path / "sandbox" / "notes.txt").exists()
