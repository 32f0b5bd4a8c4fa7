"""The docs are complete and self-contained: every config section in the reference, every request kind in the
pauses concept, no pointers into sayso's source a reader cannot follow."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import typing
from typing import Any

from pydantic import BaseModel

import sayso
from sayso import AgentConfig, Config

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
