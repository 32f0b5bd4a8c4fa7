"""The store URLs sayso takes: `sayso check`, the commands that open the store and `Sayso(config)` apply one rule.

A SQLite URL with no file or an in-memory one gave each connection its own empty database: `check`
said ready, then `inbox` failed on a missing table. A scheme that only starts with `sqlite` opened
a file anyway, and a missing folder came back as SQLAlchemy's error about an internal driver URL.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sayso import ConfigError, Sayso, StoreError, load_config
from sayso.cli import app

runner = CliRunner()

NO_FILE = ["sqlite", "sqlite:", "sqlite://", "sqlite:///", "sqlite:///:memory:", "sqlite:///x.db?mode=memory"]
OTHER = ["sqlitex:///a.db", "mysql://u@h/db", "memory", "memory://"]


def project(folder: Path, store: str) -> Path:
    """A one-agent config whose store is `store`."""
    config = folder / "sayso.yaml"
    config.write_text(f'store: "{store}"\nagents:\n  a: {{model: "test"}}\n')
    return config


@pytest.fixture
def no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    """The config's own `store:` counts (the test fixture points `SAYSO_STORE` elsewhere)."""
    monkeypatch.delenv("SAYSO_STORE")


@pytest.mark.usefixtures("no_override")
@pytest.mark.parametrize("store", NO_FILE + OTHER)
def test_check_and_inbox_refuse_a_store_url_naming_it(tmp_path: Path, store: str) -> None:
    """`check` and `inbox` both refuse the URL (exit 2), naming it and suggesting a file; no database error."""
    config = project(tmp_path, store)
    checked = runner.invoke(app, ["check", str(config)])
    assert checked.exit_code == 2, checked.output
    assert f"{config}:1: error: store:" in checked.stdout + checked.stderr
    assert "sqlite:///sayso.db" in checked.stdout + checked.stderr
    inbox = runner.invoke(app, ["inbox", str(config)])
    assert inbox.exit_code == 2, inbox.output
    assert inbox.stderr.startswith("error: ") and "sqlite:///sayso.db" in inbox.stderr
    assert "database error" not in inbox.stderr and "no such table" not in inbox.stderr
    assert not (tmp_path / "a.db").exists() and not (tmp_path / "x.db").exists()


@pytest.mark.usefixtures("no_override")
def test_sayso_refuses_a_store_url_saying_why(tmp_path: Path) -> None:
    """`Sayso(config)` refuses as `check` does: an in-memory database keeps nothing, another scheme is neither."""
    for store in NO_FILE[:-1]:
        with pytest.raises(ConfigError, match="names no file") as refused:
            Sayso.from_yaml(project(tmp_path, store))
        assert repr(store) in str(refused.value)
    with pytest.raises(ConfigError, match=r"'sqlitex' is neither"):
        Sayso.from_yaml(project(tmp_path, "sqlitex:///a.db"))
    assert not (tmp_path / "a.db").exists()


@pytest.mark.usefixtures("no_override")
def test_serve_refuses_a_store_url_in_one_line(tmp_path: Path) -> None:
    """`sayso serve` stops before it listens (exit 2), with one line naming the URL and no traceback."""
    config = project(tmp_path, "sqlite:///:memory:")
    done = subprocess.run(
        [sys.executable, "-m", "sayso", "serve", str(config), "--port", "9"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: the SQLite store 'sqlite:///:memory:' names no file")
    assert "Traceback" not in done.stderr and "sayso serves" not in done.stderr


@pytest.mark.usefixtures("no_override")
@pytest.mark.parametrize("relative", [True, False], ids=["relative", "absolute"])
def test_a_sqlite_file_relative_or_absolute_still_opens(tmp_path: Path, relative: bool) -> None:
    """`sqlite:///data/x.db` is next to the config, `sqlite:////abs/x.db` where it says: check, run and inbox work."""
    (tmp_path / "data").mkdir()
    config = project(tmp_path, "sqlite:///data/x.db" if relative else f"sqlite:///{tmp_path / 'data' / 'x.db'}")
    checked = runner.invoke(app, ["check", str(config)])
    assert checked.exit_code == 0, checked.output
    assert "is ready" in checked.stdout
    ran = runner.invoke(app, ["run", str(config), "hi"])
    assert ran.exit_code == 0, ran.output
    inbox = runner.invoke(app, ["inbox", str(config)])
    assert inbox.exit_code == 0, inbox.output
    assert (tmp_path / "data" / "x.db").is_file()


@pytest.mark.usefixtures("no_override")
def test_a_sqlite_file_in_a_missing_folder_names_the_folder(tmp_path: Path) -> None:
    """`check` and `inbox` name the missing folder and how to make it, without the driver's URL or SQLAlchemy's
    link; nothing creates the folder."""
    folder = tmp_path / "nowhere" / "dir"
    config = project(tmp_path, f"sqlite:///{folder / 'x.db'}")
    checked = runner.invoke(app, ["check", str(config)])
    assert checked.exit_code == 2
    inbox = runner.invoke(app, ["inbox", str(config)])
    assert inbox.exit_code != 0
    for said in (checked.stdout + checked.stderr, inbox.stderr):
        assert f"the folder '{folder}' of the SQLite store" in said and "does not exist" in said
        assert f"mkdir -p {folder}" in said
        assert "aiosqlite" not in said and "sqlalche.me" not in said
    assert not folder.exists()


@pytest.mark.usefixtures("no_override")
async def test_opening_a_store_in_a_missing_folder_names_the_folder(tmp_path: Path) -> None:
    """A runtime whose store's folder went away after it was built says which folder, not the driver's error."""
    folder = tmp_path / "data"
    folder.mkdir()
    sayso = Sayso(load_config(project(tmp_path, "sqlite:///data/x.db")))
    folder.rmdir()
    with pytest.raises(StoreError, match=re.escape(f"the folder '{folder}' of the SQLite store")) as refused:
        await sayso.__aenter__()
    assert "aiosqlite" not in str(refused.value) and "sqlalche.me" not in str(refused.value)
