"""Feedback an approval carries, checked by the tool's own type before it is recorded (SPEC 8).

The JSON Schema a request shows cannot carry everything a type checks (a pydantic validator, an
aware datetime): the answer is checked by the type itself when it is decided, in the process that
decides it, so an answer the body would refuse leaves the request open instead of failing the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import AwareDatetime, BaseModel, model_validator
from pydantic_ai import RunContext

from sayso import Approve, InvalidDecision, Sayso, require_approval

from .conftest import MakeApp
from .models import tool_model


class Rating(BaseModel):
    """Feedback whose validator refuses what its JSON Schema lets through."""

    comment: str
    stars: int = 3

    @model_validator(mode="after")
    def not_bad(self) -> Rating:
        if self.comment == "bad":
            raise ValueError("comment may not be 'bad'")
        return self


class Visit(BaseModel):
    """Feedback with a field JSON Schema writes as a plain `date-time`."""

    at: AwareDatetime


def review(ctx: RunContext[Any], item: str) -> str:
    """Ask the person to rate an item."""
    approval = require_approval(ctx, hint="Rate this", response_schema=Rating, on_reject="call")
    assert isinstance(approval.response, Rating)
    return f"rated {approval.response.stars}: {approval.response.comment}"


def visit(ctx: RunContext[Any], item: str) -> str:
    """Ask the person when they will come."""
    approval = require_approval(ctx, hint="When?", response_schema=Visit)
    assert isinstance(approval.response, Visit)
    return f"visit at {approval.response.at.isoformat()}"


@pytest.fixture
def app(make_app: MakeApp) -> Sayso:
    def route(said: str) -> tuple[str, dict[str, Any]]:
        verb, item = said.split(" ", 1)
        return (verb, {"item": item})

    return make_app({"guide": {"model": "m", "tools": [review, visit]}}, model=tool_model(route))


async def test_feedback_a_validator_refuses_is_refused_and_the_request_stays_open(app: Sayso) -> None:
    """The model's validator is run when the approval is decided: nothing is recorded and the run waits."""
    async with app:
        paused = await app.run("review pear")
        [request] = paused.requests
        with pytest.raises(InvalidDecision, match="payload: value error, comment may not be 'bad'"):
            await app.decide(request.request_id, Approve(payload={"comment": "bad"}))
        assert (await app.request(request.request_id)).decision is None
        assert (await app.run_record(paused.run_id)).status == "paused"
        done = await app.decide(request.request_id, Approve(payload={"comment": "juicy", "stars": 5}))
    assert done.run.status == "completed"
    assert done.run.output == "model read: rated 5: juicy"


async def test_feedback_a_type_the_schema_cannot_carry_refuses_is_refused(app: Sayso) -> None:
    """`AwareDatetime` is a plain `date-time` in JSON Schema; a time without its zone is refused on deciding."""
    async with app:
        [request] = (await app.run("visit museum")).requests
        with pytest.raises(InvalidDecision, match="payload: at: input should have timezone info"):
            await app.decide(request.request_id, Approve(payload={"at": "2024-05-01T10:00:00"}))
        assert (await app.request(request.request_id)).decision is None
        done = await app.decide(request.request_id, Approve(payload={"at": "2024-05-01T10:00:00Z"}))
    assert done.run.output == "model read: visit at 2024-05-01T10:00:00+00:00"


async def test_answering_the_whole_pause_checks_the_feedback_by_its_type_too(app: Sayso) -> None:
    """`answer_pause` refuses the same answer before recording any of its batch."""
    async with app:
        paused = await app.run("review plum")
        [request] = paused.requests
        with pytest.raises(InvalidDecision, match="comment may not be 'bad'"):
            await app.answer_pause(paused.run_id, {request.request_id: Approve(payload={"comment": "bad"})})
        assert (await app.request(request.request_id)).decision is None
        done = await app.answer_pause(paused.run_id, {request.request_id: Approve(payload={"comment": "ok"})})
    assert done.output == "model read: rated 3: ok"


TOOLS = '''
from typing import Any
from pydantic import BaseModel, model_validator
from pydantic_ai import RunContext
from sayso import RunDeps, require_approval


class Rating(BaseModel):
    comment: str

    @model_validator(mode="after")
    def not_bad(self):
        if self.comment == "bad":
            raise ValueError("comment may not be 'bad'")
        return self


def review(ctx: RunContext[RunDeps], item: str) -> str:
    """Rate an item."""
    approval = require_approval(ctx, hint="Rate this", response_schema=Rating)
    return f"rated: {approval.response.comment}"


def guess(ctx: RunContext[RunDeps], item: str) -> str:
    """Rate an item with a type no other process can load."""

    class Local(BaseModel):
        comment: str

    approval = require_approval(ctx, hint="Rate this", response_schema=Local)
    return f"guessed: {approval.response.comment}"
'''

SCRIPT = """
name: rater
rules:
  - {user: '^review (?P<x>\\S+)', call: review, args: {item: "{x}"}}
  - {user: '^guess (?P<x>\\S+)', call: guess, args: {item: "{x}"}}
  - {tool: review, reply: "said: {result}"}
  - {tool: guess, reply: "said: {result}"}
"""


def sayso_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sayso", *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "rate_tools.py").write_text(TOOLS)
    (tmp_path / "script.yaml").write_text(textwrap.dedent(SCRIPT))
    config = tmp_path / "sayso.yaml"
    config.write_text(
        "store: sqlite:///sayso.db\nmodels:\n  m: {scripted: script.yaml}\n"
        "agents:\n  rater: {model: m, instructions: rate, tools: ['rate_tools:review', 'rate_tools:guess']}\n"
    )
    return config


def paused_request(config: Path, message: str) -> str:
    run = sayso_cli("run", str(config), message, "--json")
    request: str = json.loads(run.stdout)["requests"][0]["id"]
    return request


def test_another_process_checks_the_feedback_by_the_tools_type(project: Path) -> None:
    """`sayso decide` in its own process loads the tool's model from the config's folder and refuses a bad answer."""
    request = paused_request(project, "review pear")
    refused = sayso_cli("decide", str(project), request, "approve", '{"comment": "bad"}')
    assert refused.returncode != 0
    assert "comment may not be 'bad'" in refused.stdout + refused.stderr
    assert request in sayso_cli("inbox", str(project), "--json").stdout
    done = sayso_cli("decide", str(project), request, "approve", '{"comment": "sweet"}', "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["output"] == "said: rated: sweet"


def test_a_type_another_process_cannot_load_is_refused_there_and_the_request_stays_open(project: Path) -> None:
    """A model defined inside the tool cannot be loaded by `sayso decide`: it refuses rather than take it unchecked."""
    request = paused_request(project, "guess fig")
    refused = sayso_cli("decide", str(project), request, "approve", '{"comment": "fine"}')
    assert refused.returncode != 0
    assert "cannot be checked" in refused.stdout + refused.stderr
    assert request in sayso_cli("inbox", str(project), "--json").stdout
