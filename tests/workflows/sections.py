"""A workflow whose one input has sections: a required nested model `where` and an optional one `extra`.

Beside it, `flagged`: an input whose top-level yes/no is optional with no default (`urgent: bool | None = None`);
and `seats`: an input with a list of numbers (`rows: list[int]`).

Its node says in a line what it was given, so each interface's test reads whether `extra` was left out.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sayso.workflows import RequestInput


class Place(BaseModel):
    city: str


class Extra(BaseModel):
    flag: bool
    note: str


class Outer(BaseModel):
    name: str
    where: Place
    extra: Extra | None = None


class Flagged(BaseModel):
    name: str
    urgent: bool | None = None


def ask(node_input: str) -> Generator[RequestInput, Any, str]:
    value = Outer.model_validate((yield RequestInput("Tell me", response_schema=Outer)))
    extra = "no extra" if value.extra is None else f"extra {value.extra.flag} {value.extra.note}"
    return f"{value.name} in {value.where.city}, {extra}"


def sections_config(tmp_path: Path) -> dict[str, Any]:
    """A config (as its dict) whose entry is the `sections` workflow, its store in `tmp_path`."""
    return {
        "store": f"sqlite:///{tmp_path / 'sayso.db'}",
        "base_dir": str(tmp_path),
        "models": {"m": "test"},
        "agents": {"idle": {"model": "m"}},
        "workflows": {
            "sections": {"nodes": {"ask": "tests.workflows.sections:ask"}, "edges": [["START", "ask"]]},
            "flagged": {"nodes": {"ask": "tests.workflows.sections:flagged"}, "edges": [["START", "ask"]]},
            "seats": {"nodes": {"ask": "tests.workflows.sections:seats"}, "edges": [["START", "ask"]]},
        },
        "entry": "sections",
    }


def flagged(node_input: str) -> Generator[RequestInput, Any, str]:
    value = Flagged.model_validate((yield RequestInput("Tell me", response_schema=Flagged)))
    return f"{value.name}, urgent {value.urgent}"


class Seats(BaseModel):
    rows: list[int]


def seats(node_input: str) -> Generator[RequestInput, Any, str]:
    value = Seats.model_validate((yield RequestInput("Which rows?", response_schema=Seats)))
    return f"rows {value.rows}"
