"""Text a model, a tool or a subject function produced that a store cannot keep as it is ends nothing badly.

PostgreSQL's text holds no NUL character; no store's text holds a lone surrogate (it is not UTF-8).
A person who sends either is refused (tests/server/test_edge_guard.py); a model or a tool that
produces one is nobody's mistake to refuse. Before, on PostgreSQL, a run whose output held a NUL
failed its last write and stayed the thread's active run, and an approval remembered for a subject
holding one failed with the database's error.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from sayso import ApprovalRequest, Approve, Config, Sayso
from sayso.exceptions import InvalidDecision

from .conftest import postgres_database

ODD = {"nul": "\x00", "lone-surrogate": "\ud800"}


@asynccontextmanager
async def store_url(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    if backend == "postgres":
        async with postgres_database() as url:
            yield url
    else:
        yield f"sqlite:///{tmp_path / 'sayso.db'}"


def lookup(name: str) -> str:
    """Look a name up; the answer is read from a binary file."""
    return f"read {name}: {ODD_NOW[0]}"


ODD_NOW = ["\x00"]  # the character the tools above put in what they produce, per test


def calls(tool: str, name: str) -> FunctionModel:
    """Call `tool(name)` once, then answer with what it returned, as a model echoing a tool's output does."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(f"done: {returned[0].content}")])
        return ModelResponse(parts=[ToolCallPart(tool, {"name": name})])

    return FunctionModel(model)


def config(url: str, model: FunctionModel, tool: Any, interrupt: dict[str, Any]) -> Config:
    return Config.model_validate(
        {"store": url, "agents": {"a": {"model": model, "tools": [tool], "interrupt": interrupt, "ask_user": False}}}
    )


@pytest.mark.parametrize("odd", list(ODD))
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_model_output_holding_text_no_store_keeps_ends_the_run(tmp_path: Path, backend: str, odd: str) -> None:
    """The run completes; its stored output shows U+FFFD where the character was; the history keeps a NUL exactly
    (JSON escapes it) and a lone surrogate, which JSON cannot carry as UTF-8, as U+FFFD."""
    ODD_NOW[0] = ODD[odd]
    async with store_url(backend, tmp_path) as url:
        async with Sayso(config(url, calls("lookup", "a"), lookup, {"tools": []})) as sayso:
            ran = await sayso.run("look a up")
            assert ran.status == "completed", ran
            stored = await sayso.result(ran.run_id)
            assert (stored.status, stored.output) == ("completed", "done: read a: \ufffd")
            assert (await sayso.thread(ran.thread_id)).active_run_id is None
            last = (await sayso.messages(ran.thread_id))[-1]
            kept = ODD[odd] if odd == "nul" else "\ufffd"
            assert isinstance(last, ModelResponse) and last.parts == [TextPart(f"done: read a: {kept}")]
            again = await sayso.run("and again", thread_id=ran.thread_id)  # the thread is free
            assert again.status == "completed"


def failing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model whose provider fails with a NUL in its error message."""
    raise RuntimeError("the provider said: bad\x00request")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_run_failing_with_a_nul_in_its_error_frees_the_thread(tmp_path: Path, backend: str) -> None:
    """A failed run's error is stored too (U+FFFD for the NUL), and the thread takes the next message."""
    ODD_NOW[0] = "-"
    async with store_url(backend, tmp_path) as url:
        async with Sayso(config(url, FunctionModel(failing), lookup, {"tools": []})) as sayso:
            ran = await sayso.run("read a")
            assert ran.status == "failed", ran
            stored = await sayso.result(ran.run_id)
            assert stored.status == "failed" and stored.error is not None
            assert "bad\ufffdrequest" in stored.error and "\x00" not in stored.error
            assert (await sayso.thread(ran.thread_id)).active_run_id is None


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_subject_no_store_keeps_is_approved_once_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """A subject function that reads a NUL from the model's arguments: the request offers `once` only, a wider
    scope is refused naming that (the request stays open), and approving once completes the run."""
    ODD_NOW[0] = "-"
    (tmp_path / "odd_subjects.py").write_text(
        textwrap.dedent(
            """
            def by_name(tool, args):
                return {"key": "name:" + args["name"], "label": args["name"]}
            """
        )
    )
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    interrupt = {"tools": [{"name": "lookup", "subject": "odd_subjects:by_name", "remember": "always"}]}
    async with store_url(backend, tmp_path) as url:
        async with Sayso(config(url, calls("lookup", "a\x00b"), lookup, interrupt)) as sayso:
            paused = await sayso.run("look it up")
            assert paused.status == "paused"
            request = paused.requests[0]
            assert isinstance(request, ApprovalRequest) and request.scopes == ("once",)
            with pytest.raises(InvalidDecision, match="scope 'always' is not offered here"):
                await sayso.decide(request.request_id, Approve(scope="always"))
            assert (await sayso.request(request.request_id)).decision is None
            decided = await sayso.decide(request.request_id, Approve())
            assert decided.run.status == "completed"
            assert await sayso.grants() == []
