"""Code and docs point at the documentation pages they mean: no `§N` section numbers of a spec the reader
does not have, and every `docs/…md#anchor` named in the code exists."""

from __future__ import annotations

import re
from pathlib import Path

from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[1]
TEXT_SUFFIXES = {".py", ".md", ".js", ".html", ".css", ".yaml", ".yml", ".toml"}
DOC_LINK = re.compile(r"\bdocs/[\w/-]+\.md(?:#[\w-]+)?")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)


def _texts(*roots: Path) -> list[Path]:
    files = [p for root in roots for p in ([root] if root.is_file() else root.rglob("*"))]
    return sorted(p for p in files if p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts)


CITING = (ROOT / "src", ROOT / "tests", ROOT / "examples", ROOT / "docs", ROOT / "README.md", ROOT / "ARCHITECTURE.md")
"""Where code, tests and docs may name a docs page."""


def test_no_section_signs_in_code_tests_or_docs() -> None:
    """`§` numbers cite a spec outside the repository; the code, tests and docs link the docs pages instead."""
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in _texts(*CITING)
        if path != Path(__file__) and "node_modules" not in path.parts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "\N{SECTION SIGN}" in line
    ]
    assert found == []


def test_docs_pages_named_in_the_code_exist() -> None:
    """Every docs page (and `#anchor`) the code's and tests' docstrings and comments name is a page with that
    heading."""
    missing: list[str] = []
    checked = 0
    for path in _texts(ROOT / "src", ROOT / "tests", ROOT / "examples"):
        if "node_modules" in path.parts:
            continue
        for link in DOC_LINK.findall(path.read_text(encoding="utf-8")):
            checked += 1
            page, _, anchor = link.partition("#")
            target = ROOT / page
            if not target.is_file():
                missing.append(f"{path.relative_to(ROOT)}: {link}")
                continue
            anchors = {slugify(h, "-") for h in HEADING.findall(target.read_text(encoding="utf-8"))}
            if anchor and anchor not in anchors:
                missing.append(f"{path.relative_to(ROOT)}: {link}")
    assert checked > 20
    assert missing == []
