"""The docs are complete and self-contained: every config section in the reference, every request kind in the
pauses concept, no pointers into sayso's source a reader cannot follow."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

import sayso
from sayso import AgentConfig, Config
from sayso.cli import app

from .conftest import ROOT


def reference() -> str:
    spec = importlib.util.spec_from_file_location("config_reference", ROOT / "docs" / "hooks" / "config_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rendered: str = module.render()
    return rendered


def holds_a_model(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(holds_a_model(arg) for arg in typing.get_args(annotation))


def test_the_configuration_reference_has_every_section() -> None:
    """Each field of the file and of an agent that holds its own fields (audit, limits, mcp_servers, an agent's mcp,
    workflows…) has a section in the generated reference."""
    titles = re.findall(r"^## (.+?) \{#", reference(), re.M)
    for prefix, model in (("", Config), ("agents.NAME.", AgentConfig)):
        for name, field in model.model_fields.items():
            if field.exclude or not holds_a_model(field.annotation):
                continue
            assert any(t.startswith(f"{prefix}{name}") for t in titles), f"no section for {prefix}{name}: {titles}"


def test_every_field_of_the_configuration_reference_says_what_it_does() -> None:
    """The reference reads each field's docstring from the source (the models do not load them at run time)."""
    rows = re.findall(r"^\| `([^`]+)` \|.*\| (.*?) ?\|$", reference(), re.M)
    assert len(rows) > 100
    assert [name for name, about in rows if not about.strip()] == []


def test_the_pauses_concept_lists_every_request_kind() -> None:
    """docs/concepts/pauses.md has a row for each kind of request a run can pause on."""
    page = (ROOT / "docs" / "concepts" / "pauses.md").read_text()
    kinds: list[type] = [
        sayso.ApprovalRequest,
        sayso.QuestionRequest,
        sayso.ClientToolRequest,
        sayso.InputRequest,
        sayso.ElicitationRequest,
    ]
    shown = {str(next(f.default for f in dataclasses.fields(k) if f.name == "kind")) for k in kinds}
    shown |= {"delegate"}
    assert len(shown) == 6
    for kind in shown:
        assert f"| `{kind}` |" in page, kind


def test_no_docs_point_into_the_source() -> None:
    """No page or generated reference sends the reader to a module docstring or names another product's internals."""
    pages = [p.read_text() for p in (ROOT / "docs").rglob("*.md")] + [reference()]
    for text in pages:
        for phrase in ("module docstring", "kaboo's name for"):
            assert phrase not in text


BLOCK = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```', re.S | re.M)


def config_examples() -> list[tuple[str, str, dict[str, str]]]:
    """Every YAML block of the docs that configures agents, by page and line, with the files its page shows
    whole (a block titled with its file name); the blocks marked as excerpts are left out."""
    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text()
        shown = {title: body for kind, title, body in BLOCK.findall(text) if title and kind != "yaml"}
        for block in BLOCK.finditer(text):
            kind, body = block[1], block[3]
            if kind == "yaml" and re.search(r"^agents:", body, re.M) and not body.startswith("# excerpt"):
                line = text.count("\n", 0, block.start()) + 2
                found.append((f"{page.relative_to(ROOT)}:{line}", body, shown))
    return found


EXAMPLES = config_examples()


def test_the_full_examples_are_found() -> None:
    """The guides' whole configs (yaml, models, scripted, policies, routing, channels) are among those checked."""
    pages = {where.split(":")[0] for where, _, _ in EXAMPLES}
    for page in ("getting-started", *(f"guides/{g}" for g in ("yaml", "models", "scripted", "policies", "routing"))):
        assert f"docs/{page}.md" in pages, pages
    assert "docs/guides/channels.md" in pages


@pytest.mark.parametrize(("where", "body", "shown"), EXAMPLES, ids=[where for where, _, _ in EXAMPLES])
def test_every_full_config_example_checks_clean(
    where: str, body: str, shown: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config the docs show whole loads with `sayso check` (exit 0) beside the files it says (an example's
    folder, what `sayso init` writes, or those its page shows) with the variables it names set; a part of one
    says it is an excerpt."""
    first = body.splitlines()[0]
    beside = re.search(r"examples/([a-z_]+)/", first)
    if beside:
        shutil.copytree(ROOT / "examples" / beside[1], tmp_path, dirs_exist_ok=True)
    elif "sayso init" in first:
        assert CliRunner().invoke(app, ["init", str(tmp_path / "p")]).exit_code == 0
        tmp_path = tmp_path / "p"
    else:
        assert shown, f"{where}: say which files it runs beside, or that it is an excerpt"
    for name, text in shown.items():
        (tmp_path / name).write_text(text)
    for name in {*re.findall(r"_env: ([A-Z][A-Z0-9_]*)", body), "OPENAI_API_KEY"}:
        monkeypatch.setenv(name, f"set-for-the-docs-check-{name.lower()}")
    (tmp_path / "sayso.yaml").write_text(body)
    # A process of its own: the tool modules of one example must not be those another already imported.
    done = subprocess.run(
        [sys.executable, "-m", "sayso", "check", str(tmp_path / "sayso.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{where}:\n{done.stdout}{done.stderr}"
    assert "error" not in done.stdout + done.stderr, f"{where}:\n{done.stdout}{done.stderr}"


def test_the_yaml_guides_check_output_is_what_check_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The `sayso check` output docs/guides/yaml.md shows is what its config, misspelt as it says, prints."""
    page = (ROOT / "docs" / "guides" / "yaml.md").read_text()
    config = next(body for kind, _, body in BLOCK.findall(page) if kind == "yaml" and "examples/files/" in body)
    shown = next(body for kind, _, body in BLOCK.findall(page) if kind == "text" and "'delete_fil'" in body)
    shutil.copytree(ROOT / "examples" / "files", tmp_path, dirs_exist_ok=True)
    (tmp_path / "sayso.yaml").write_text(config.replace("{name: delete_file,", "{name: delete_fil,"))
    for name in {*re.findall(r"_env: ([A-Z][A-Z0-9_]*)", config), "OPENAI_API_KEY"}:
        monkeypatch.setenv(name, f"set-for-the-docs-check-{name.lower()}")
    monkeypatch.chdir(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "sayso", "check", "sayso.yaml"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # as a terminal shows them: the warning, the error, the count
        text=True,
        timeout=120,
    )
    said = shown.removeprefix("$ sayso check sayso.yaml\n")
    assert " ".join(done.stdout.split()) == " ".join(said.split()), done.stdout
