"""The README's flow holds together: its Python snippet runs as pasted into a file, its second-process command
reaches the store the demo serves (the pause shows in the running UI), and it and the docs home list every guide."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT, LiveServer

README = (ROOT / "README.md").read_text()


def copy_of_the_repo(tmp_path: Path) -> Path:
    """The examples and a link to the venv, so the README's commands run as written without touching the checkout."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("sandbox", "*.db*"))
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    return tmp_path


def readme_env(**extra: str) -> dict[str, str]:
    """A shell as a reader has it: no store or sandbox override (the test fixture sets both)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SAYSO_STORE", "SAYSO_SANDBOX")}
    return {**env, **extra}


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", README, re.S)


def test_the_python_snippet_runs_as_pasted_into_a_file(tmp_path: Path) -> None:
    """The README's Python example, saved as a file and run from the repository's folder, prints its comment."""
    [snippet] = [b for b in blocks("python") if "Sayso.from_yaml" in b]
    root = copy_of_the_repo(tmp_path)
    (root / "example.py").write_text(snippet)
    done = subprocess.run(
        [sys.executable, "example.py"], cwd=root, env=readme_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Deleted todo.md."
    assert not (root / "examples" / "files" / "sandbox" / "todo.md").exists()


def test_the_second_process_command_pauses_in_the_store_the_demo_serves(tmp_path: Path) -> None:
    """`make demo` serves a config; the README's `sayso run` from another shell uses that config, so its pause is
    in the running server's inbox (what the open browser tab shows)."""
    served_config = re.search(r"sayso serve (\S+)", (ROOT / "scripts" / "demo").read_text())
    assert served_config is not None
    [command] = [line for b in blocks("bash") for line in b.splitlines() if re.match(r"\.venv/bin/sayso run ", line)]
    argv = shlex.split(command)
    assert argv[2] == served_config[1], "the README's second process must use the config the demo serves"
    root = copy_of_the_repo(tmp_path)
    served, process = LiveServer.process([str(root / served_config[1])], env=readme_env())
    try:
        done = subprocess.run(argv, cwd=root, env=readme_env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "files wants to run delete_file" in done.stdout
        with served.client() as client:
            inbox = client.get("/v1/requests").json()
        assert [(r["tool_name"], r["args"]) for r in inbox["requests"]] == [("delete_file", {"name": "notes.txt"})]
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_readme_says_where_the_shared_sample_files_are() -> None:
    """The demo, the CLI and the Python example share one sandbox; the README says so and how to restore it."""
    assert "examples/files/sandbox" in README and "rm -rf examples/files/sandbox" in README


def test_the_readme_and_the_docs_home_list_every_guide() -> None:
    """Each page under docs/guides/ is linked from the README and from docs/index.md."""
    home = (ROOT / "docs" / "index.md").read_text()
    for guide in sorted((ROOT / "docs" / "guides").glob("*.md")):
        assert f"docs/guides/{guide.name}" in README, guide.name
        assert f"guides/{guide.name}" in home, guide.name


def test_make_docs_takes_a_port() -> None:
    """`PORT=8123 make docs` serves the site on that port (8001 without it), as `PORT=` does for `make demo`."""
    for extra, port in ((["PORT=8123"], "8123"), ([], "8001")):
        planned = subprocess.run(
            ["make", "-n", "docs", *extra], cwd=ROOT, env=readme_env(), capture_output=True, text=True, check=True
        )
        assert f"--dev-addr 127.0.0.1:{port}" in planned.stdout


def test_every_page_gives_make_bench_the_same_duration() -> None:
    """`make help`, the README and bench/README.md say alike how long `make bench` takes."""
    said = {
        "Makefile": re.search(r"^bench: ##.*?~(\d+) min", (ROOT / "Makefile").read_text(), re.M),
        "README.md": re.search(r"`make bench` \([^)]*?~(\d+) min", README),
        "bench/README.md": re.search(
            r"^make bench .*?(?:\n\s+#.*?)*?~(\d+) min", (ROOT / "bench" / "README.md").read_text(), re.M
        ),
    }
    minutes = {page: found[1] if found else None for page, found in said.items()}
    assert len(set(minutes.values())) == 1 and None not in minutes.values(), minutes
